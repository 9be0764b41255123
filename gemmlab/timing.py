"""Timing GPU work with CUDA events: warm-up runs, then the median of repeated runs."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Callable

from . import gpu


@dataclass(frozen=True)
class Timing:
    median_s: float
    min_s: float
    repeats: int
    inner: int = 1

    def __str__(self) -> str:
        per = f" x {self.inner} launches" if self.inner > 1 else ""
        return f"{self.median_s * 1e3:.3f} ms (median of {self.repeats}{per}, min {self.min_s * 1e3:.3f} ms)"


def time_gpu(run: Callable[[], object], warmup: int = 2, repeat: int = 10, min_seconds: float = 2e-3,
             max_inner: int = 1000) -> Timing:
    """Seconds per call of ``run()`` (which enqueues GPU work), timed with CUDA events.

    Warm-up calls absorb one-off costs (module load, clocks ramping up). Each of ``repeat``
    measurements brackets enough back-to-back calls to last at least ``min_seconds``: while the GPU
    runs one call, Python enqueues the next, so the tens of microseconds Python spends on a launch
    do not count. One untimed call goes first, so that the GPU is busy when the start event is
    recorded: otherwise the first timed call's launch latency would count (measured on the H200: about
    30 microseconds, 1% of a 4096-cubed GEMM timed one launch at a time). The median resists the odd
    slow run.
    """
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    drv = gpu.cuda()
    for _ in range(warmup):
        run()
    drv.Context.synchronize()
    start, stop = drv.Event(), drv.Event()

    def measure(calls: int) -> float:
        run()                       # untimed: the GPU is still busy with it when the start event is recorded
        start.record()
        for _ in range(calls):
            run()
        stop.record()
        stop.synchronize()
        return stop.time_since(start) * 1e-3 / calls

    inner = min(max_inner, max(1, math.ceil(min_seconds / max(measure(1), 1e-7))))
    times = [measure(inner) for _ in range(repeat)]
    return Timing(statistics.median(times), min(times), repeat, inner)
