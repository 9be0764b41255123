"""The Bank Conflict Explorer's data and HTML, without a browser (tests/test_explorers_browser.py runs the page)."""

import json
import re
import shutil
from pathlib import Path

import pytest

from gemmlab.book import bank_explorer
from gemmlab.models import banks

NOTEBOOK = Path(__file__).resolve().parent.parent / "book" / "banks.ipynb"
CHAPTER = Path(__file__).resolve().parent.parent / "chapters" / "04_banks.ipynb"


@pytest.fixture(scope="module")
def payload():
    return bank_explorer.data()


def shown(payload, **case):
    return payload["results"][payload["cases"][bank_explorer.key({**bank_explorer.DEFAULTS, **case})]]


def test_every_case_is_the_bank_model(payload):
    """Each selectable case carries bank_access's wavefronts and ideal for its own addresses, and its groups'
    wavefronts add up to them; a case the model refuses (misaligned) carries a sentence instead."""
    cases = list(bank_explorer.cases())
    assert len(cases) == len(payload["cases"]) > 500
    refused = 0
    for case in cases:
        r = payload["results"][payload["cases"][bank_explorer.key(case)]]
        try:
            addrs, width = bank_explorer.addresses(case)
            access = banks.bank_access(addrs, width)
        except ValueError:
            assert set(r) == {"error"} and r["error"].endswith("."), case
            refused += 1
            continue
        assert (r["a"], r["w"], r["wf"], r["ideal"]) == (addrs, width, access.wavefronts, access.ideal), case
        assert sum(r["p"]) == r["wf"] and len(r["p"]) == access.ideal and r["g"] * len(r["p"]) >= len(addrs)
        assert (r["hl"] is None) == (access.extra_wavefronts == 0), case
    assert 50 < refused < len(cases) // 2


def test_the_sentences_say_why(payload):
    assert shown(payload, stride=2)["why"] == "Lanes 0 and 16 both want bank 0, words 0 and 32: 2 wavefronts where 1 would do."
    assert shown(payload, stride=2)["hl"] == [0, 0, [0, 16]]
    assert shown(payload, stride=32)["why"].startswith("Lanes 0, 1, 2, …, 31 (32 lanes) all want bank 0, words 0, 32, 64, …, 992")
    assert shown(payload, stride=0)["why"] == "All 32 lanes read word 0: one broadcast, 1 wavefront, the ideal."
    assert shown(payload, stride=33)["why"] == "No bank is asked for two different words: 1 wavefront, the ideal."
    wide = shown(payload, stride=8, width=16)
    assert (wide["wf"], wide["ideal"], wide["p"]) == (8, 4, [2, 2, 2, 2])
    assert wide["why"].startswith("16-byte accesses go 8 lanes (128 bytes) at a time; in lanes 0–7, lanes 0 and 4")
    assert shown(payload, stride=3, width=16)["error"] == (
        "A 16-byte access must start at a multiple of 16 bytes, and lane 1 starts at byte 12: "
        "choose a stride that is a multiple of 4 words.")
    assert shown(payload, mode="padded", columns=32, pad=1, width=8)["error"].endswith(
        "choose a padding that keeps the row, T + pad, a multiple of 2 words.")
    assert shown(payload, mode="swizzled", swizzle="words", width=16)["error"].startswith("A word swizzle scatters")


def test_padding_and_swizzles_fix_the_column(payload):
    column = {"mode": "swizzled", "row": 32, "pattern": "column", "column": 8}
    assert [shown(payload, **column, swizzle=s, width=16)["wf"] for s in banks.SWIZZLES[:2]] == [32, 4]
    assert [shown(payload, **column, swizzle=s, width=4)["wf"] for s in banks.SWIZZLES] == [32, 4, 1]
    assert shown(payload, mode="swizzled", pattern="row", swizzle="chunks", width=16)["wf"] == 4
    assert [shown(payload, mode="padded", columns=32, pad=p, width=4)["wf"] for p in (0, 1, 2)] == [32, 1, 2]
    assert shown(payload, mode="padded", columns=32, pad=4, width=16)["wf"] == 4


def test_the_course_kernels_accesses_are_their_instructions(payload):
    for T in (8, 16, 32):
        for layout in banks.TILE_LAYOUTS:
            for i, ins in enumerate(banks.tiled_shared_instructions(T, layout)):
                r = shown(payload, mode="kernel", tile=T, layout=layout, instruction=i)
                assert (r["wf"], r["ideal"], tuple(r["a"]), r["w"]) == (
                    ins.access.wavefronts, ins.access.ideal, ins.addresses, ins.access_bytes)
    assert payload["instructions"]["padded"][1] == ["Bs[tx][k]", "LDS"]


def test_a_bad_start_is_refused_in_one_sentence():
    with pytest.raises(ValueError, match="the explorer has no case stride:65/4"):
        bank_explorer.show(stride=65)
    with pytest.raises(ValueError, match="no input tiles"):
        bank_explorer.show(tiles=3)
    with pytest.raises(ValueError, match="mode must be one of"):
        bank_explorer.show(mode="banks")


def test_the_html_is_self_contained():
    page = bank_explorer.show(mode="kernel")
    html = page._repr_html_()
    assert "BankExplorer.mount" in html and "<style>" in html and 'class="bkx"' in html
    assert not re.search(r"(src|href)=[\"']?https?://", html), "no network request from the page"
    assert "</script" not in re.search(r'<script type="application/json"[^>]*>(.*?)</script>', html, re.S).group(1)
    assert repr(page) == "<Bank Conflict Explorer: 573 accesses; starting at kernel:32/transposed/1>"
    a, b = bank_explorer.show(), bank_explorer.show()
    assert int(b.uid[3:]) == int(a.uid[3:]) + 1, "uids count up per process (stable notebook outputs)"


def stale_outputs(notebook: Path) -> list[str]:
    """The explorers stored in ``notebook`` that differ from what gemmlab renders now (or, with none
    stored, a sentence saying so)."""
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    stored = ["".join(out["data"]["text/html"]) for cell in nb["cells"] for out in cell.get("outputs", [])
              if 'class="bkx"' in "".join(out.get("data", {}).get("text/html", ""))]
    if not stored:
        return [f"{notebook.name} has no stored explorer: execute it"]
    problems = []
    for html in stored:
        blob = re.search(r'<script type="application/json" id="[^"]+">(.*?)</script>', html, re.S).group(1)
        start = json.loads(blob.replace("<\\/", "</"))["start"]
        page = bank_explorer.BankExplorer(**start)
        page.uid = re.search(r'<div class="bkx" id="([^"]+)"', html).group(1)
        if html != page._repr_html_():
            problems.append(f"{notebook.name}: stale explorer {page.uid} (start {bank_explorer.key(start)})")
    return problems


@pytest.mark.parametrize("notebook", [NOTEBOOK, CHAPTER], ids=lambda p: p.name)
def test_the_stored_explorers_are_fresh(notebook):
    """The explorers stored in book/banks.ipynb and chapter 4 equal what gemmlab renders now (cases, CSS,
    script), so an edit of the page's JavaScript or of the bank model cannot reach the book without
    re-executing them."""
    assert stale_outputs(notebook) == [], f"re-execute {notebook.name} (scripts/execute.sh)"


def test_the_freshness_check_fails_on_an_edited_asset(tmp_path, monkeypatch):
    assets = tmp_path / "explorer_assets"
    shutil.copytree(bank_explorer.ASSETS, assets)
    js = assets / "banks.js"
    js.write_text(js.read_text(encoding="utf-8").replace("var COL = 20", "var COL = 21"), encoding="utf-8")
    monkeypatch.setattr(bank_explorer, "ASSETS", assets)
    assert stale_outputs(NOTEBOOK) and stale_outputs(NOTEBOOK)[0].startswith("banks.ipynb: stale explorer")
