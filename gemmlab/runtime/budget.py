"""How long a cell may run: sizes scaled to the GPU, so that no cell takes much over two minutes on a T4.

The chapters were executed on an H200. A cell's time on another GPU is estimated from its time on
the H200 (stored in the notebook's execution metadata) and the ratio of the two GPUs' FP32 peaks
(:func:`slowdown`: about 8.2 for a T4): the GEMMs that dominate the long cells are compute-bound.
Cells whose estimate would exceed :data:`BUDGET_S` shrink their problem on slower GPUs with
:func:`fit_square` or :func:`fit_sizes`; a cell that only compiles (tagged ``budget-compile``) is
bound by the CPU instead, and gets :data:`COMPILE_SLOWDOWN`. A CPU test checks every stored cell
against the budget with these same functions. Pure Python: the estimate needs a spec, not a GPU.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from ..models import traffic
from . import device

#: Seconds a cell may take on a free Colab T4.
BUDGET_S = 120.0
#: The GPU the stored outputs, and their times, come from.
REFERENCE = device.H200
#: How much longer nvcc takes on Colab's two vCPUs than on the H200 machine (an allowance, not a measurement).
COMPILE_SLOWDOWN = 3.0


def slowdown(spec: device.DeviceSpec) -> float:
    """How many times longer compute-bound work takes on ``spec`` than on the reference H200 (never below 1)."""
    return max(1.0, device.peak_fp32_flops(REFERENCE) / device.peak_fp32_flops(spec))


def estimate(reference_seconds: float, spec: device.DeviceSpec, work_ratio: float = 1.0) -> float:
    """Seconds on ``spec`` of a cell that took ``reference_seconds`` on the H200, doing ``work_ratio`` of its work."""
    return reference_seconds * slowdown(spec) * work_ratio


def fit_square(n: int, spec: device.DeviceSpec, reference_seconds: float, smallest: int = 256) -> int:
    """The largest ``n / 2**j`` (down to ``smallest``) whose cubic work fits the budget on ``spec``, for a
    cell that took ``reference_seconds`` on the H200 at ``n``."""
    m = n
    while m > smallest and estimate(reference_seconds, spec, (m / n) ** 3) > BUDGET_S:
        m //= 2
    return m


def work_ratio(kept: Iterable[Sequence[int]], sizes: Iterable[Sequence[int]]) -> float:
    """The share of the FLOPs of GEMMs at ``sizes`` (M, N, K) that those at ``kept`` do."""
    return sum(traffic.gemm_flops(*s) for s in kept) / sum(traffic.gemm_flops(*s) for s in sizes)


def fit_sizes(sizes: Iterable[Sequence[int]], spec: device.DeviceSpec, reference_seconds: float) -> list[tuple[int, int, int]]:
    """``sizes`` (M, N, K) without the largest problems, dropped one by one until the whole list fits the
    budget on ``spec``, for a cell that took ``reference_seconds`` on the H200 with all of them."""
    every = [(M, N, K) for M, N, K in sizes]
    kept = list(every)
    while len(kept) > 1 and estimate(reference_seconds, spec, work_ratio(kept, every)) > BUDGET_S:
        kept.remove(max(kept, key=lambda s: traffic.gemm_flops(*s)))
    return kept
