"""The Pipeline Explorer's data and HTML, without a browser (tests/test_pipeline_explorer_browser.py runs the page):
every schedule it offers is the protocol model's own trace, and the page stored in the book is what gemmlab
renders now."""

import json
import re
from pathlib import Path

import pytest

from gemmlab.book import pipeline_explorer
from gemmlab.models import pipeline

NOTEBOOK = Path(__file__).resolve().parent.parent / "book" / "pipeline.ipynb"


@pytest.fixture(scope="module")
def payload():
    return pipeline_explorer.data()


def row_texts(payload, key):
    """Each cycle of a stored trace as the model's row: agents' texts, engine events, error."""
    S = payload["strings"]
    t = payload["traces"][key]
    names = [S[a] for a in t["agents"]]
    return [({n: S[i] for n, i in zip(names, r[0])}, [S[e] for e in r[1]], None if r[6] is None else S[r[6]])
            for r in t["rows"]]


def test_every_offered_schedule_is_the_models_trace(payload):
    """Each configuration's rows are pipeline.play's, cycle for cycle: the agents' steps, the engines' events, the
    barriers (phase, pending arrivals, bytes), the stages, and the error the model reports."""
    configs = pipeline_explorer.configurations()
    assert len(configs) == len(payload["traces"]) == len({pipeline_explorer.key(c) for c in configs})
    for config in configs:
        outcome = pipeline.play(config, pipeline_explorer.CLOCK)
        key = pipeline_explorer.key(config)
        assert payload["traces"][key]["error"] == outcome.error
        rows = row_texts(payload, key)
        stored = payload["traces"][key]["rows"]
        assert len(rows) == len(outcome.trace), key
        for got, raw, want in zip(rows, stored, outcome.trace):
            assert got == (want["agents"], want["engines"], want.get("error")), (key, want["cycle"])
            assert raw[2] == [[b["phase"], b["pending"], b["tx"]] for b in want["full"]]
            assert raw[3] == [[b["phase"], b["pending"], b["tx"]] for b in want["empty"]]
            assert raw[5] == [[s["k_tile"], s["bytes"]] for s in want["stages"]]


def test_the_choices_cover_what_the_page_offers(payload):
    keys = set(payload["traces"])
    for stages in pipeline_explorer.STAGES:
        for fault in ("none", "expect_tx", "parity"):
            assert {f"s{stages}-c1-cooperative-{fault}", f"s{stages}-c2-cooperative-{fault}",
                    f"s{stages}-c2-pingpong-{fault}"} <= keys
        assert f"s{stages}-c2-pingpong-no_turns" in keys
    assert payload["default"] == "s4-c2-cooperative-none"


def test_the_faults_end_as_the_chapter_says(payload):
    assert payload["traces"]["s4-c2-cooperative-none"]["error"] is None
    assert payload["traces"]["s4-c2-cooperative-expect_tx"]["error"].startswith("hang:")
    assert "before K-tile 0 was in it" in payload["traces"]["s4-c2-cooperative-parity"]["error"]
    assert "before K-tile" in payload["traces"]["s6-c2-pingpong-no_turns"]["error"]


def stale(notebook: Path) -> list[str]:
    """The stored explorers of ``notebook`` that differ from what gemmlab renders now."""
    problems = []
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        for out in cell.get("outputs", []):
            html = out.get("data", {}).get("text/html", "")
            html = html if isinstance(html, str) else "".join(html)
            if 'class="ppx"' not in html:
                continue
            uid = re.search(r'<div class="ppx" id="([^"]+)"', html).group(1)
            explorer = pipeline_explorer.PipelineExplorer()
            explorer.uid = uid
            if explorer._repr_html_() != html:
                problems.append(f"{notebook.name}: stale explorer {uid}")
    return problems


def test_the_stored_explorer_is_fresh():
    """The page in book/pipeline.ipynb is what gemmlab renders now (traces, CSS, script): an edit of the model or of
    the page's JavaScript cannot reach the book without re-executing it."""
    text = NOTEBOOK.read_text(encoding="utf-8")
    assert 'class=\\"ppx\\"' in text, "book/pipeline.ipynb holds no explorer output"
    assert stale(NOTEBOOK) == [], "re-execute book/pipeline.ipynb (it needs no GPU)"


def test_the_freshness_check_can_fail(tmp_path, monkeypatch):
    monkeypatch.setattr(pipeline_explorer, "CLOCK", pipeline.Timed(copy_cycles=7, mma_cycles=4))
    assert stale(NOTEBOOK) and stale(NOTEBOOK)[0].startswith("pipeline.ipynb: stale explorer")
