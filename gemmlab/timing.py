"""Timing GPU work with CUDA events: warm-up runs, then the median of repeated runs."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Callable

from . import gpu


@dataclass(frozen=True)
class Timing:
    median_s: float
    min_s: float
    repeats: int

    def __str__(self) -> str:
        return f"{self.median_s * 1e3:.3f} ms (median of {self.repeats}, min {self.min_s * 1e3:.3f} ms)"


def time_gpu(run: Callable[[], object], warmup: int = 2, repeat: int = 10) -> Timing:
    """Time ``run()`` (which enqueues GPU work) with CUDA events around each call.

    Warm-up calls absorb one-off costs (module load, clocks ramping up); the median of the
    timed calls resists the odd slow run. The events time the GPU from the first to the last
    piece of work ``run`` enqueues, so ``run`` should enqueue enough work (a millisecond or more)
    for the few microseconds of Python launch overhead not to count.
    """
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    drv = gpu.cuda()
    for _ in range(warmup):
        run()
    drv.Context.synchronize()
    times = []
    start, stop = drv.Event(), drv.Event()
    for _ in range(repeat):
        start.record()
        run()
        stop.record()
        stop.synchronize()
        times.append(stop.time_since(start) * 1e-3)
    return Timing(statistics.median(times), min(times), repeat)
