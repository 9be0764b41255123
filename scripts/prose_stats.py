#!/usr/bin/env python3
"""The prose of each chapter, measured: ``python3 scripts/prose_stats.py [NOTEBOOK ...]`` (default: every chapter).

Counts the markdown cells only (objectives, takeaways and exercises included; code, outputs and the Colab badge
line left out): words, sentences, the mean and longest sentence, sentences of 40 words or more, references to
``results/`` or ``drafts/`` files, and dates. COURSE.md's measure of a lesson: at most about 4,500 words, a mean
sentence of 20-25 words, few sentences of 40 or more (chapter 3, the model, has 10); no dates, and the files of
measurements left to the lab notes.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FENCE = re.compile(r"^(```|:::).*?^\1\s*$", re.M | re.S)     # code fences; ::: admonitions keep their text
ADMONITION = re.compile(r"^:::+.*$|^\s*:class:.*$", re.M)
LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")                  # [text](target) -> text
ROLE = re.compile(r"\{[a-z:]+\}`([^`]*)`")                    # {cite}`key`, {ref}`x` -> x
MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)
SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[A-Z0-9`*(\[\"])|\n\s*\n|\n(?=\s*(?:[-*]|\d+\.)\s)")
ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.", "Fig.", "Eq.", "approx.")
WORD = re.compile(r"[A-Za-z0-9][\w'’.%×/-]*")
FILE_REFERENCE = re.compile(r"\b(?:results|drafts)/[\w./*{},-]+")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b|\b(?:January|February|March|April|May|June|July|August|September|October|"
                  r"November|December) \d{1,2}(?:, 20\d\d)?\b")
LONG = 40


@dataclass(frozen=True)
class Stats:
    words: int
    sentences: int
    mean_sentence: float
    longest_sentence: int
    long_sentences: int
    file_references: int
    dates: int
    longest: str


def prose_of(notebook: Path) -> str:
    """The text of a notebook's markdown cells as a reader reads it: fences, admonition markers, link targets and
    the Colab badge dropped; inline code and math kept as words."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    parts = []
    for cell in cells:
        if cell["cell_type"] != "markdown":
            continue
        text = "".join(cell["source"])
        text = "\n".join(line for line in text.splitlines() if "colab-badge" not in line)
        text = ADMONITION.sub("", FENCE.sub("", text))
        text = ROLE.sub(r"\1", LINK.sub(r"\1", text))
        parts.append(text)
    return "\n\n".join(parts)


def sentences(text: str) -> list[str]:
    """Sentences and list items, headings left out; an abbreviation does not end a sentence."""
    protected = "\n".join("" if line.lstrip().startswith("#") else line for line in text.splitlines())
    for abbreviation in ABBREVIATIONS:
        protected = protected.replace(abbreviation, abbreviation.replace(".", "\0"))
    pieces = (p.replace("\0", ".").strip() for p in SENTENCE_END.split(protected))
    return [p for p in pieces if p and words(p)]


def words(text: str) -> int:
    return len(WORD.findall(MATH.sub(" x ", text)))


def measure(notebook: Path) -> Stats:
    text = prose_of(notebook)
    said = sentences(text)
    lengths = [words(s) for s in said]
    longest = max(range(len(said)), key=lengths.__getitem__) if said else -1
    return Stats(words(text), len(said), sum(lengths) / len(lengths) if lengths else 0.0,
                 lengths[longest] if said else 0, sum(n >= LONG for n in lengths), len(FILE_REFERENCE.findall(text)),
                 len(DATE.findall(text)), said[longest] if said else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: chapters/*.ipynb")
    parser.add_argument("--longest", action="store_true", help="print each chapter's longest sentence too")
    args = parser.parse_args(argv)
    notebooks = args.notebooks or sorted((ROOT / "chapters").glob("*.ipynb"))
    print(f"{'chapter':<34} {'words':>6} {'sentences':>9} {'mean':>5} {'longest':>7} {'>=40':>4} {'files':>5} {'dates':>5}")
    for path in notebooks:
        s = measure(path)
        print(f"{path.stem:<34} {s.words:>6,} {s.sentences:>9} {s.mean_sentence:>5.1f} {s.longest_sentence:>7} "
              f"{s.long_sentences:>4} {s.file_references:>5} {s.dates:>5}")
        if args.longest:
            print(f"    longest: {s.longest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
