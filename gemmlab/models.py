"""Models of what the kernels do: work, traffic, arithmetic intensity and the roofline.

Pure NumPy and arithmetic, no GPU. The chapters' tables, the figures and the tests all call
these same functions, so a number printed in one place is the number checked in another.
Counts are *load requests by threads* (one per float32 element a thread reads from global
memory), before the hardware merges or caches anything.
"""

from __future__ import annotations

from dataclasses import dataclass

FLOAT_BYTES = 4


def gemm_flops(M: int, N: int, K: int) -> int:
    """One multiply and one add per (i, j, k): 2·M·N·K floating-point operations."""
    return 2 * M * N * K


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Traffic:
    """Global-memory load requests of a GEMM kernel and what they imply."""

    kernel: str
    flops: int
    loads_A: int
    loads_B: int

    @property
    def loads(self) -> int:
        return self.loads_A + self.loads_B

    @property
    def bytes(self) -> int:
        return FLOAT_BYTES * self.loads

    @property
    def intensity(self) -> float:
        """FLOP per byte requested from global memory."""
        return self.flops / self.bytes


def naive_traffic(M: int, N: int, K: int) -> Traffic:
    """The naive kernel: each of the M·N threads reads K elements of A and K of B.

    Row i of A is read N times (once per thread of row i of C), column j of B M times.
    """
    return Traffic("naive", gemm_flops(M, N, K), M * N * K, M * N * K)


def tiled_traffic(M: int, N: int, K: int, T: int) -> Traffic:
    """The T×T shared-memory tiled kernel, counting only in-range loads (the padding is zeros).

    Each of the ceil(N/T) block columns reads all of A once; each of the ceil(M/T) block
    rows reads all of B once: A is read ceil(N/T) times instead of N.
    """
    return Traffic(f"tiled{T}", gemm_flops(M, N, K), M * K * ceil_div(N, T), K * N * ceil_div(M, T))


def naive_intensity() -> float:
    """2 FLOPs per 2 float32 loads: 2 / (2·4) = 0.25 FLOP/B, whatever the size."""
    return 2 / (2 * FLOAT_BYTES)


def tiled_intensity(T: int) -> float:
    """T times the naive intensity for large sizes: T/4 FLOP/B (8 at T = 32)."""
    return T * naive_intensity()


def tiled_shared_bytes(T: int) -> int:
    """Shared memory per block of the T×T tiled kernel: one T×T tile of A and one of B, 2·T²·4 bytes."""
    return 2 * T * T * FLOAT_BYTES


def roofline(intensity, peak_flops: float, peak_bandwidth: float):
    """Attainable FLOP/s at an arithmetic intensity: min(peak compute, intensity × bandwidth)."""
    import numpy as np

    return np.minimum(peak_flops, np.asarray(intensity, dtype=float) * peak_bandwidth)


def ridge_point(peak_flops: float, peak_bandwidth: float) -> float:
    """The intensity (FLOP/B) where the bandwidth roof meets the compute roof."""
    return peak_flops / peak_bandwidth
