"""scripts/prose_stats.py, the measure of a chapter's prose (words, sentences, long sentences, files, dates)."""

import json

from notebook_tools import load_script

prose = load_script("prose_stats")


def notebook(tmp_path, *markdown: str):
    cells = [{"cell_type": "markdown", "metadata": {}, "source": text} for text in markdown]
    cells.append({"cell_type": "code", "metadata": {}, "source": "print('code is not prose')", "outputs": [],
                  "execution_count": 1})
    path = tmp_path / "chapter.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def test_sentences_words_and_the_longest(tmp_path):
    long = " ".join(["word"] * 41) + "."
    path = notebook(tmp_path, "# 3. A title\n\n[![Open In Colab](../book/_static/colab-badge.svg)](https://colab)\n\nOne short sentence. "
                              "Another one, e.g. with an abbreviation, ends here.\n\n" + long,
                    "```cuda\nint not_prose = 1;\n```\n- a list item\n- another item")
    s = prose.measure(path)
    assert s.sentences == 5 and s.long_sentences == 1 and s.longest_sentence == 41
    assert s.words == 3 + 3 + 8 + 41 + 3 + 2      # the title counts as words, not as a sentence
    assert s.longest == long


def test_file_references_and_dates_are_counted(tmp_path):
    path = notebook(tmp_path, "Measured on 2026-12-02 (`results/power-h200.txt`, `drafts/09_x.py`); "
                              "see `results/bench-hopper-*.json`.")
    s = prose.measure(path)
    assert (s.file_references, s.dates) == (3, 1)


def test_every_chapter_is_measured(capsys):
    assert prose.main([]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["chapter", "words", "sentences"] and len(out) > 10
