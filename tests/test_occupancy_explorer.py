"""The Occupancy Calculator's data and HTML, without a browser (tests/test_explorers_browser.py runs the page)."""

import re

import pytest

from gemmlab.book import occupancy_explorer
from gemmlab.models import occupancy
from gemmlab.runtime import device


def test_presets_carry_the_limits_the_rules_use():
    d = occupancy_explorer.data()
    assert [p["name"] for p in d["presets"]] == ["T4", "A100", "H100", "H200"]
    h200 = d["presets"][-1]
    assert (h200["cc"], h200["shared_per_sm"], h200["reserved_shared_per_block"]) == ("9.0", 233_472, 1024)
    assert d["rules"] == {"register_unit": 256, "shared_unit": 128, "sub_partitions": 4, "max_registers": 255}
    assert occupancy_explorer.data(device.T4)["presets"][0]["name"] == "this GPU"


def test_published_limits_per_compute_capability():
    # CUDA C++ Programming Guide, technical specifications: shared memory per SM / per block (opt-in).
    assert (device.A100.shared_per_sm, device.A100.shared_per_block_optin) == (164 * 1024, 163 * 1024)
    assert (device.H100.shared_per_sm, device.H100.shared_per_block_optin) == (228 * 1024, 227 * 1024)
    assert round(device.peak_fp32_flops(device.A100) / 1e12, 1) == 19.5          # the A100 datasheet's FP32
    assert round(device.peak_dram_bandwidth(device.H100) / 1e12, 2) == 3.35       # the H100 SXM datasheet's
    assert occupancy.calculate(device.A100, 256, 32, 100_000).blocks_per_sm == 1


def test_a_bad_start_is_refused_in_one_sentence():
    with pytest.raises(ValueError, match="exceed the 65,536 registers a block may use"):
        occupancy_explorer.show(threads=1024, registers=255)
    with pytest.raises(ValueError, match="must be between 1 and 1024"):
        occupancy_explorer.show(threads=0)


def test_the_html_is_self_contained():
    html = occupancy_explorer.show()._repr_html_()
    assert "OccupancyCalculator.mount" in html and "<style>" in html
    assert not re.search(r"(src|href)=[\"']?https?://", html), "no network request from the page"
    assert repr(occupancy_explorer.show()).startswith("<Occupancy Calculator: 4 devices")


def test_the_stored_calculators_are_fresh():
    """The calculators stored in book/occupancy.ipynb and chapter 5 equal what gemmlab renders now (presets,
    rules, CSS, script), so an edit of the page's JavaScript or of a preset cannot reach the book without
    re-executing them. Chapter 5 adds the GPU that executed it ("this GPU"), which is taken as stored."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    for path in (root / "book" / "occupancy.ipynb", root / "chapters" / "05_occupancy.ipynb"):
        nb = json.loads(path.read_text(encoding="utf-8"))
        stored = ["".join(out["data"]["text/html"]) for cell in nb["cells"] for out in cell.get("outputs", [])
                  if 'class="occx"' in "".join(out.get("data", {}).get("text/html", ""))]
        assert stored, f"{path.name} has no stored calculator: execute it"
        for html in stored:
            blob = re.search(r'<script type="application/json" id="[^"]+">(.*?)</script>', html, re.S).group(1)
            payload = json.loads(blob.replace("<\\/", "</"))
            start = payload["start"]
            page = occupancy_explorer.OccupancyCalculator(None, start["threads"], start["registers"], start["shared"])
            own = [p for p in payload["presets"] if p["name"] == "this GPU"]
            assert {**payload, "presets": [p for p in payload["presets"] if p["name"] != "this GPU"]} == page.payload, \
                f"stale presets or rules in {path.name}: re-execute it"
            page.payload = {**page.payload, "presets": own + page.payload["presets"]}
            page.uid = re.search(r'<div class="occx" id="([^"]+)"', html).group(1)
            assert html == page._repr_html_(), f"stale calculator output in {path.name}: re-execute it"
