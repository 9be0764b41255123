"""Choosing the fast kernel's tile shape for the GPU at hand (chapter 7's autotuner).

:func:`tune` times every configuration of :data:`gemmlab.gemm.fast_configs.CONFIGS` (or those given),
checks each result against the reference, and ranks them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from ..gemm import fast_configs, registry
from ..gemm.fast_configs import FastConfig
from ..models import verify
from . import bench


@dataclass(frozen=True)
class Trial:
    """One configuration and its row of the bench at the tuned size (what :func:`gemmlab.measure.bench.of_cublas` reads)."""

    config: FastConfig
    result: bench.GemmResult

    @property
    def tflops(self) -> float:
        return self.result.tflops

    @property
    def correct(self) -> bool:
        return self.result.correct


def tune(M: int = 4096, N: int = 4096, K: int = 4096, configs: Iterable[FastConfig] | None = None, repeat: int = 3,
         log: Callable[[str], object] = print) -> list[Trial]:
    """Time every configuration (default: :func:`gemmlab.gemm.fast_configs.search_space`) at M×N×K on this GPU,
    check each result, and return the trials fastest first (wrong results last)."""
    chosen = list(configs or fast_configs.search_space())
    A, B = verify.random_operands(M, N, K, seed=7)
    ref = verify.Reference(A, B)
    trials = []
    for c in chosen:
        r = bench.time_gemm(registry.fast_kernel(c), A, B, repeat, ref)
        trials.append(Trial(c, r))
        log(f"{c.label:<48} {r.tflops:6.2f} TFLOP/s{'' if r.correct else '  WRONG'}")
    return sorted(trials, key=lambda t: (not t.correct, -t.tflops))
