"""Models of what the kernels do in global memory: work, traffic, arithmetic intensity, the roofline.

The shared-memory bank model is :mod:`gemmlab.models.banks`, the occupancy calculator :mod:`gemmlab.models.occupancy`.

Pure NumPy and arithmetic, no GPU. The chapters' tables, the figures and the tests all call
these same functions, so a number printed in one place is the number checked in another.
Counts are *load requests by threads* (one per float32 element a thread reads from global
memory), before the hardware merges or caches anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:       # NumPy is imported in the functions that use it, not when the module is
    import numpy as np
    from numpy.typing import ArrayLike

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


def thread_of(row: int, col: int, T: int = 32) -> tuple[tuple[int, int], tuple[int, int]]:
    """Which thread of a T×T-block grid computes C[row, col]: ((blockIdx.x, blockIdx.y), (threadIdx.x, threadIdx.y)).

    x runs along the columns of C and y along its rows, as in the naive and tiled kernels.
    """
    return (col // T, row // T), (col % T, row % T)


def grid_for(M: int, N: int, T: int = 32) -> tuple[int, int]:
    """(gridDim.x, gridDim.y) = (ceil(N/T), ceil(M/T)): enough T×T blocks to cover C."""
    return ceil_div(N, T), ceil_div(M, T)


def compulsory_bytes(M: int, N: int, K: int) -> int:
    """Read A and B once and write C once: the least traffic any GEMM kernel can have."""
    return FLOAT_BYTES * (M * K + K * N + M * N)


def naive_intensity() -> float:
    """2 FLOPs per 2 float32 loads: 2 / (2·4) = 0.25 FLOP/B, whatever the size."""
    return 2 / (2 * FLOAT_BYTES)


def tiled_intensity(T: int) -> float:
    """T times the naive intensity for large sizes: T/4 FLOP/B (8 at T = 32)."""
    return T * naive_intensity()


def tiled_shared_loads(M: int, N: int, K: int, T: int) -> int:
    """Shared-memory reads of the T×T tiled kernel: every thread of every block reads 2·T values
    (a row of ``As`` and a column of ``Bs``) in each of the ceil(K/T) phases, padding included."""
    return ceil_div(M, T) * ceil_div(N, T) * ceil_div(K, T) * T * T * 2 * T


def tiled_shared_bytes(T: int) -> int:
    """Shared memory per block of the T×T tiled kernel: one T×T tile of A and one of B, 2·T²·4 bytes."""
    return 2 * T * T * FLOAT_BYTES


def roofline(intensity: ArrayLike, peak_flops: float, peak_bandwidth: float) -> np.ndarray | float:
    """Attainable FLOP/s at an arithmetic intensity: min(peak compute, intensity × bandwidth)."""
    import numpy as np

    # An array for an array of intensities; for one intensity a NumPy scalar, which is a float.
    return np.minimum(peak_flops, np.asarray(intensity, dtype=float) * peak_bandwidth)


def ridge_point(peak_flops: float, peak_bandwidth: float) -> float:
    """The intensity (FLOP/B) where the bandwidth roof meets the compute roof."""
    return peak_flops / peak_bandwidth


# ---------------------------------------------------------------- what a warp asks of L1

WARP = 32
SECTOR_BYTES = 32


@dataclass(frozen=True)
class WarpTraffic:
    """Global loads as warps issue them: one *request* per warp-wide load instruction, split into
    32-byte *sectors* (the distinct 32-byte pieces of memory its active lanes touch)."""

    kernel: str
    requests_A: int
    requests_B: int
    sectors_A: int
    sectors_B: int

    @property
    def requests(self) -> int:
        return self.requests_A + self.requests_B

    @property
    def sectors(self) -> int:
        return self.sectors_A + self.sectors_B

    @property
    def bytes(self) -> int:
        return SECTOR_BYTES * self.sectors


def _require_multiples(M: int, N: int, K: int, of: int) -> None:
    bad = [f"{d}={v}" for d, v in (("M", M), ("N", N), ("K", K)) if v % of]
    if bad:
        raise ValueError(f"the warp model assumes M, N and K are multiples of {of}; got {', '.join(bad)}")


def naive_warp_traffic(M: int, N: int, K: int) -> WarpTraffic:
    """The naive kernel's requests and sectors (32x32 blocks; a warp is 32 neighbours in a row of C).

    Every lane of a warp reads the same A[row, k]: one sector, broadcast to all 32 lanes. The lanes
    read 32 neighbouring floats of row k of B: 128 bytes, four sectors (coalesced).
    """
    _require_multiples(M, N, K, WARP)
    requests = M * (N // WARP) * K
    return WarpTraffic("naive", requests, requests, requests * 1, requests * 4)


def naive_column_warp_traffic(M: int, N: int, K: int) -> WarpTraffic:
    """The naive kernel with threads mapped the other way (``naive_column``: a warp is 32 neighbours in
    a column of C).

    The lanes now read 32 elements of A that lie K floats apart, one in each of 32 sectors, and all
    read the same B[k, col]: one sector, broadcast. Same requests, 33 sectors
    instead of 5.
    """
    _require_multiples(M, N, K, WARP)
    requests = (M // WARP) * N * K
    return WarpTraffic("naive_column", requests, requests, requests * WARP, requests * 1)   # K >= 32: rows 128+ B apart


def tiled_warp_traffic(M: int, N: int, K: int, T: int) -> WarpTraffic:
    """The T×T tiled kernel: per phase, each warp loads its lanes' elements of one A and one B tile.

    A warp covers 32/T rows of T neighbouring floats in each tile: 32 floats, four sectors per
    request for T >= 8.
    """
    if T < 8 or T * T % WARP:
        raise ValueError(f"the warp model covers T = 8, 16 and 32, got T = {T}")
    _require_multiples(M, N, K, max(T, WARP))
    warps_per_block = T * T // WARP
    requests = (M // T) * (N // T) * (K // T) * warps_per_block
    return WarpTraffic(f"tiled{T}", requests, requests, requests * 4, requests * 4)


def warp_traffic(kernel: str, M: int, N: int, K: int) -> WarpTraffic:
    """The warp model of a course kernel by name (``naive``, ``naive_column``, ``tiled8``, ``tiled16``, ``tiled32``)."""
    if kernel == "naive":
        return naive_warp_traffic(M, N, K)
    if kernel == "naive_column":
        return naive_column_warp_traffic(M, N, K)
    if kernel.startswith("tiled"):
        return tiled_warp_traffic(M, N, K, int(kernel[5:]))
    raise ValueError(f"no warp model for kernel {kernel!r}")


def thread_traffic(kernel: str, M: int, N: int, K: int) -> Traffic:
    """The per-thread load model of a course kernel by name."""
    if kernel in ("naive", "naive_column"):
        return naive_traffic(M, N, K)
    if kernel.startswith("tiled"):
        return tiled_traffic(M, N, K, int(kernel[5:]))
    raise ValueError(f"no traffic model for kernel {kernel!r}")


def early_return_affected(M: int, N: int, T: int = 32) -> np.ndarray:
    """Which elements of C the early-return tiled kernel (chapter 3) can get wrong: a boolean M×N mask.

    In a block on the right edge (when T does not divide N) the threads whose column lies outside C
    return before loading their element of the A tile, so ``As[ty][k]`` for those k is never written
    in that block; every surviving thread of the block reads it, and loses the true products
    A[row, k0 + k]·B[k0 + k, col]. On the bottom edge the same happens to ``Bs``. Every element of C
    in the last block column (if N % T) and the last block row (if M % T) is exposed; no other is.
    """
    import numpy as np

    mask = np.zeros((M, N), dtype=bool)
    if N % T:
        mask[:, (N // T) * T:] = True
    if M % T:
        mask[(M // T) * T:, :] = True
    return mask


@dataclass(frozen=True)
class TileIntensity:
    """FLOP per byte moved at the two levels of a tiled kernel (chapter 6)."""

    global_to_shared: float         # per byte loaded from global memory into the shared tiles
    shared_to_registers: float      # per byte read from shared memory into registers


def tile_intensity(BM: int, BN: int, TM: int = 1, TN: int = 1) -> TileIntensity:
    """A block that computes a BM×BN tile of C loads BM + BN floats per k for 2·BM·BN FLOP; a thread that
    computes TM×TN outputs reads TM + TN floats from shared memory per k for 2·TM·TN FLOP (large sizes,
    no padding). The tiled kernel of chapter 2 is BM = BN = T, TM = TN = 1."""
    if min(BM, BN, TM, TN) < 1:
        raise ValueError(f"tile sizes must be positive, got BM={BM}, BN={BN}, TM={TM}, TN={TN}")
    return TileIntensity(2 * BM * BN / (FLOAT_BYTES * (BM + BN)), 2 * TM * TN / (FLOAT_BYTES * (TM + TN)))
