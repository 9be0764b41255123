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


@dataclass(frozen=True)
class Interleaved:
    """What :func:`interleaved` measured: for each function, its seconds per call in each round."""

    seconds: dict[str, list[float]]

    def median_s(self, name: str) -> float:
        """The median over the rounds of ``name``'s seconds per call."""
        return statistics.median(self.seconds[name])

    def ratio(self, name: str, reference: str) -> tuple[float, float, float]:
        """``name``'s speed as a percentage of ``reference``'s, round by round (both saw the same clocks in a
        round): the median and the lower and upper quartiles of the per-round percentages."""
        pct = sorted(100.0 * (r / t) for r, t in zip(self.seconds[reference], self.seconds[name]))
        q = len(pct) // 4
        return statistics.median(pct), pct[q], pct[-q - 1]


def interleaved(runs: dict[str, Callable[[], object]], rounds: int = 11, block_s: float = 6e-3, warm_s: float = 0.4,
                timer: Callable[..., Timing] | None = None, clock: Callable[[], float] | None = None) -> Interleaved:
    """Time several functions against each other so that they see the same clocks: after ``warm_s`` seconds of
    load (every function in turn), ``rounds`` rounds in which each function runs for a block of at least
    ``block_s`` seconds of back-to-back calls (:func:`time_gpu`), one after the other.

    Why: under its power cap a GPU lowers its clock within a burst of work (on the H200 here the SM clock, 1,980
    MHz when idle, fell to 1,470-1,545 MHz at the start of bursts of GEMMs), so a function timed alone, before or
    after another, may see other clocks: short timings taken one after the other spread by up to 15% on one
    machine, where the per-round ratios of interleaved blocks repeat to about 1% (``drafts/README.md``).
    ``timer`` (by default :func:`time_gpu`) and ``clock`` are for the tests."""
    if not runs:
        raise ValueError("interleaved needs at least one function to time")
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    timer = timer or time_gpu
    if clock is None:
        import time
        clock = time.monotonic
    start = clock()
    while clock() - start < warm_s:
        for run in runs.values():
            timer(run, warmup=0, repeat=1, min_seconds=0)
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            seconds[name].append(timer(run, warmup=0, repeat=1, min_seconds=block_s).median_s)
    return Interleaved(seconds)
