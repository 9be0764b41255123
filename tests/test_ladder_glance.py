"""The whole ladder at a glance (gemmlab.book.ladder_glance) on the two committed bench
files: the path's rows in order, each number the file's own or computed from it in the
same run, a dash and a note wherever a file lacks one, and the figure's bars one per
number. The directive that puts them in the book is tested in tests/test_book.py, on a
phone in tests/test_phone_browser.py."""

from __future__ import annotations

import copy
import json

import pytest

from gemmlab.book import ladder_glance as glance
from gemmlab.gemm import registry, whole_ladder

FILES = ("results/bench.json", "results/bench-h100.json")


@pytest.fixture(scope="module")
def raw(repo_root):
    return [json.loads((repo_root / f).read_text(encoding="utf-8")) for f in FILES]


@pytest.fixture(scope="module")
def runs(raw):
    return [glance.from_json(d) for d in raw]


@pytest.fixture(scope="module")
def steps():
    return [glance.Step(*s) for s in whole_ladder.steps("BF16")]


def test_the_path_runs_from_the_naive_kernel_through_chapters_8_and_9_in_order(steps):
    names = [s.name for s in steps]
    tensor = [*registry.tensor_kernels("BF16"), *registry.tma_kernels("BF16")]
    hopper = list(registry.hopper_kernels("BF16"))    # the ladder, not the ones beside it
    assert names == [*whole_ladder.FP32_STEPS, *tensor, *hopper]
    assert names[0] == "naive" and names[-1] == hopper[-1]
    assert [s.chapter for s in steps] == sorted(s.chapter for s in steps)
    assert {s.precision for s in steps[:len(whole_ladder.FP32_STEPS)]} == {"FP32"}
    assert {s.precision for s in steps[len(whole_ladder.FP32_STEPS):]} == {"BF16"}
    assert all(s.change and not s.change.startswith("+") for s in steps)
    assert whole_ladder.steps("FP16")[-1][0].endswith("_f16")
    with pytest.raises(ValueError, match="FP16 and BF16"):
        whole_ladder.steps("TF32")


def _row(data, kernel, size, precision):
    want = (kernel, size, precision)
    found = [r for r in data["results"]
             if (r["kernel"], (r["M"], r["N"], r["K"]), r["precision"]) == want]
    assert len(found) <= 1
    return found[0] if found else None


def test_every_number_is_the_files_own_or_computed_from_the_same_run(raw, runs, steps):
    size = glance.SIZE
    rows = glance.rows(steps, runs, size)
    assert [r.step for r in rows] == steps
    for j, data in enumerate(raw):
        for r in rows:
            m, want = r.measured[j], _row(data, r.step.name, size, r.step.precision)
            if want is None:
                assert m is None
                continue
            assert m is not None and m.tflops == want["tflops"]
            assert m.of_cublas == want["fraction_of_cublas"]
            cublas = _row(data, "cuBLAS", size, r.step.precision)
            if data["timing"] == "separate":    # of the run's cuBLAS in the same format
                share = want["tflops"] / cublas["tflops"]
                assert m.of_cublas == pytest.approx(share, rel=1e-12)
            if r.step.precision == "FP32":
                fp32 = data.get("fp32_ceiling_tflops")
                assert m.of_ceiling == (want["tflops"] / fp32 if fp32 else None)
            else:                               # the run's measured mma.sync ceiling
                ceiling = data["mma_ceilings_tflops"][r.step.precision]
                share = want["fraction_of_mma_ceiling"]
                assert m.of_ceiling == pytest.approx(share, rel=1e-12)
                assert m.of_ceiling == pytest.approx(want["tflops"] / ceiling)


def test_the_table_prints_the_rows_numbers_and_a_dash_where_a_file_has_none(runs, steps):
    rows = glance.rows(steps, runs)
    heads, gpus, body = glance.table(rows, runs)
    assert heads == ["TFLOP/s", "% of cuBLAS", "% of ceiling"]
    assert gpus == ["H200", "H100"]
    assert [b[1] for b in body] == [s.label for s in steps]
    assert len(body[0]) == 3 + 3 * len(runs)
    for r, b in zip(rows, body):
        want = []
        for pick, fmt in ((lambda m: m.tflops, glance.rate),
                          (lambda m: m.of_cublas, glance.percent),
                          (lambda m: m.of_ceiling, glance.percent)):
            want += [fmt(pick(m)) if m else glance.DASH for m in r.measured]
        assert b[3:] == want
    naive = body[0]
    assert naive[3] == f"{_row_tflops(runs[0], 'naive'):.1f}"
    assert naive[5] == f"{100 * rows[0].measured[0].of_cublas:.0f}"
    assert glance.rate(754.04) == "754" and glance.rate(5.93) == "5.9"
    assert glance.percent(None) == glance.DASH


def _row_tflops(run, kernel):
    row = run.row(kernel, glance.SIZE, "FP32")
    assert row is not None
    return row["tflops"]


def test_the_notes_name_each_gpu_and_explain_each_dash(runs, steps):
    rows = glance.rows(steps, runs)
    notes = glance.notes(rows, runs, glance.SIZE)
    text = " ".join(notes)
    for run in runs:
        assert run.gpu in text
    assert "python -m gemmlab bench --precision all" in text and "4096³" in text
    missing = {(j, r.step.label) for r in rows
               for j, m in enumerate(r.measured) if m is None}
    for j, label in missing:      # a step a file lacks (the H200's: chapter 9's last two)
        assert any(f"`{label}`" in n and runs[j].short in n for n in notes)
    if not all("FP32" in run.ceilings for run in runs):
        dash = f"{glance.DASH} under % of ceiling in FP32"
        assert any(n.startswith(dash) for n in notes)


def test_a_file_with_its_day_and_fp32_ceiling_fills_those_cells(raw, steps):
    data = copy.deepcopy(raw[1])
    data["date"], data["fp32_ceiling_tflops"] = "2026-12-06", 60.0
    run = glance.from_json(data)
    rows = glance.rows(steps, [run])
    naive = rows[0].measured[0]
    assert naive is not None and naive.of_ceiling == pytest.approx(naive.tflops / 60.0)
    notes = glance.notes(rows, [run], glance.SIZE)
    assert "2026-12-06" in notes[0] and not any("ceiling in FP32" in n for n in notes)


def test_a_size_not_in_every_file_is_refused_with_the_sizes_there_are(runs, steps):
    assert glance.SIZE in glance.common_sizes(runs)
    with pytest.raises(ValueError, match="4096³"):
        glance.rows(steps, runs, (512, 512, 512))


def test_a_wrong_result_is_not_shown(raw, steps):
    data = copy.deepcopy(raw[1])
    for r in data["results"]:
        if r["kernel"] == "naive":
            r["correct"] = False
    rows = glance.rows(steps, [glance.from_json(data)])
    assert rows[0].measured == (None,)


def test_the_figure_has_a_bar_per_number_and_says_what_it_shows(runs, steps):
    from matplotlib.patches import Rectangle

    rows = glance.rows(steps, runs)
    fig = glance.figure(rows, runs)
    ax = fig.axes[0]
    bars = [p for p in ax.patches if isinstance(p, Rectangle)]
    measured = [m for r in rows for m in r.measured if m]
    ends = sorted(round(b.get_x() + b.get_width(), 6) for b in bars)
    assert ends == sorted(round(m.tflops, 6) for m in measured)
    no_data = [t for t in ax.texts if t.get_text().startswith("no data")]
    assert len(no_data) == sum(m is None for r in rows for m in r.measured)
    assert ax.get_xscale() == "log"
    assert fig.get_figwidth() * 96 <= 390     # CSS px: shrinks little on a 390 px phone
    labels = [t.get_text() for t in ax.get_yticklabels()]
    # the labels with a comma head each format's steps
    assert [t for t in labels if "," not in t] == [s.label for s in steps]
    alt = glance.alt_text(rows, runs)
    assert all(f"on the {run.short}" in alt for run in runs)
    assert f"{len(steps)} steps" in alt
    svg = glance.svg(fig)
    assert svg == glance.svg(glance.figure(rows, runs))
    assert svg.lstrip().startswith("<?xml")


def test_short_gpu_names():
    def run(device):
        return glance.Run(device, device, None, "separate", {}, [])

    assert run("NVIDIA H100 80GB HBM3").short == "H100"
    assert run("NVIDIA H200").short == "H200"
    assert run("Tesla T4").short == "T4"
