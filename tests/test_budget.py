"""The T4 time budget: sizes scaled to the GPU, and every stored cell within about two minutes on a T4.

Each cell's time on the H200 is in the notebook's execution metadata. Its estimate on a T4 is that
time times the ratio of the two FP32 peaks (gemmlab.runtime.budget.slowdown); cells that scale their problem
with gemmlab.runtime.budget declare their H200 time in the call, and the estimate uses the work they keep.
"""

import re
from datetime import datetime

import pytest

from gemmlab.measure import bench
from gemmlab.runtime import budget, device
from notebook_tools import CHAPTERS, read

SCALED_CALL = re.compile(r"budget\.(fit_square|fit_sizes)\((.*?)reference_seconds=([\d.]+)\)")


def seconds(cell) -> float | None:
    e = cell.get("metadata", {}).get("execution", {})
    if "iopub.execute_input" not in e or "shell.execute_reply" not in e:
        return None
    t = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))
    return (t(e["shell.execute_reply"]) - t(e["iopub.execute_input"])).total_seconds()


def test_slowdown_is_the_ratio_of_fp32_peaks():
    assert budget.slowdown(device.T4) == pytest.approx(device.peak_fp32_flops(device.H200) / device.peak_fp32_flops(device.T4))
    assert 8 < budget.slowdown(device.T4) < 8.5
    assert budget.slowdown(device.H200) == 1.0


def test_fit_square_halves_until_the_estimate_fits():
    assert budget.fit_square(4096, device.H200, 28) == 4096
    n = budget.fit_square(4096, device.T4, 28)
    assert n == 2048 and budget.estimate(28, device.T4, (n / 4096) ** 3) <= budget.BUDGET_S
    assert budget.estimate(28, device.T4) > budget.BUDGET_S          # 4096 itself would not fit
    assert budget.fit_square(4096, device.T4, 10_000, smallest=512) == 512


def test_fit_sizes_drops_the_largest_problem_first():
    assert budget.fit_sizes(bench.DEFAULT_SIZES, device.H200, 35) == list(bench.DEFAULT_SIZES)
    kept = budget.fit_sizes(bench.DEFAULT_SIZES, device.T4, 35)
    assert (8192, 8192, 8192) not in kept and (3000, 5000, 1234) in kept and len(kept) == 4
    assert budget.fit_sizes([(64, 64, 64)], device.T4, 10_000) == [(64, 64, 64)]


def _cells_with_times():
    for path in CHAPTERS:
        for i, cell in enumerate(read(path).cells):
            if cell.cell_type == "code" and (t := seconds(cell)) is not None:
                yield path.name, i, cell, t


@pytest.mark.skipif(not CHAPTERS, reason="no chapter notebooks yet")
def test_every_cell_fits_two_minutes_on_a_t4():
    over, scaled = [], 0
    for name, i, cell, t in _cells_with_times():
        m = SCALED_CALL.search(cell.source)
        if "budget-compile" in cell.metadata.get("tags", []):
            assert m is None and "units.load(" in cell.source, f"{name} cell {i} is tagged budget-compile but does not only compile"
            estimate = t * budget.COMPILE_SLOWDOWN
        elif m is None:
            estimate = budget.estimate(t, device.T4)
        else:
            scaled += 1
            declared = float(m.group(3))
            assert declared >= 0.8 * t, f"{name} cell {i} declares {declared} s on the H200 but took {t:.1f} s"
            if m.group(1) == "fit_square":
                n = int(m.group(2).split(",")[0])
                estimate = budget.estimate(t, device.T4, (budget.fit_square(n, device.T4, declared) / n) ** 3)
            else:
                kept = budget.fit_sizes(bench.DEFAULT_SIZES, device.T4, declared)
                estimate = budget.estimate(t, device.T4, budget.work_ratio(kept, bench.DEFAULT_SIZES))
        if estimate > budget.BUDGET_S:
            over.append(f"{name} cell {i}: {t:.1f} s on the H200, about {estimate:.0f} s on a T4")
    assert scaled >= 2, "chapter 5's counters and chapter 7's ladder scale their sizes with gemmlab.runtime.budget"
    assert not over, "cells over the T4 budget (scale them with gemmlab.runtime.budget):\n" + "\n".join(over)
