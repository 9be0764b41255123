"""Launching the course's kernels: every GEMM kernel as ``C = kernel(A, B)`` on NumPy arrays.

Inputs are checked before anything touches the GPU. A bad input raises an exception that
names the problem and the offending value; it never reaches a kernel. The checks are plain
functions of shapes and a :class:`~gemmlab.device.DeviceSpec`, so they are tested on any
machine with the published specs.

:func:`kernels` returns every correct GEMM kernel in chapter order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from . import compile as _compile
from . import device as _device
from . import gpu, models

INT_MAX = 2**31 - 1   # the kernels take M, N, K as int
DEFAULT_SHARED_PER_BLOCK = 48 * 1024   # a block that needs more (static + dynamic) must opt in first


def needs_shared_opt_in(static_bytes: int, dynamic_bytes: int) -> bool:
    """Whether a launch with this much static and dynamic shared memory per block must first raise the
    function's MAX_DYNAMIC_SHARED_SIZE_BYTES attribute (above 48 KiB in all)."""
    return static_bytes + dynamic_bytes > DEFAULT_SHARED_PER_BLOCK


class LaunchConfigError(ValueError):
    """A block or grid the device cannot run."""


class DeviceMemoryError(MemoryError):
    """The problem does not fit in the device memory that is free."""


# ---------------------------------------------------------------- checks (pure)

def check_matrix(name: str, X) -> tuple[int, int]:
    """Type, dtype and rank of one operand; returns its shape."""
    if not isinstance(X, np.ndarray):
        raise TypeError(f"{name} must be a NumPy array, got {type(X).__name__}")
    if X.dtype != np.float32:
        raise TypeError(f"{name} has dtype {X.dtype}; the course kernels take float32 "
                        f"(convert with {name}.astype(np.float32))")
    if X.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got {X.ndim}-D with shape {X.shape}")
    return X.shape


def check_gemm_shapes(A, B) -> tuple[int, int, int]:
    """(M, N, K) for C = A @ B, after checking both operands and that their shapes agree."""
    M, K = check_matrix("A", A)
    K2, N = check_matrix("B", B)
    if K != K2:
        raise ValueError(f"inner dimensions differ: A is {M}x{K} and B is {K2}x{N} "
                         f"(A.shape[1] = {K} must equal B.shape[0] = {K2})")
    check_sizes(M, N, K)
    return M, N, K


def check_sizes(M: int, N: int, K: int) -> None:
    """Each of M, N, K at least 1 and small enough for the kernels' int arguments."""
    for dim, v in (("M", M), ("N", N), ("K", K)):
        if v < 1:
            raise ValueError(f"{dim} = {v}: every dimension must be at least 1 (an empty matrix has nothing to multiply)")
        if v > INT_MAX:
            raise ValueError(f"{dim} = {v:,} is larger than the kernels' int limit {INT_MAX:,}")


def check_contiguous(name: str, X: np.ndarray) -> None:
    if not X.flags.c_contiguous:
        raise ValueError(f"{name} is not C-contiguous (strides {X.strides} for shape {X.shape}); "
                         f"the kernels read row-major memory: pass np.ascontiguousarray({name})")


def check_block(block: tuple[int, int, int], spec: _device.DeviceSpec) -> None:
    """A thread block the device can run: per-dimension limits and threads per block."""
    if len(block) != 3 or any(int(b) < 1 for b in block):
        raise LaunchConfigError(f"block {tuple(block)} must be three positive sizes (x, y, z)")
    for axis, b, lim in zip("xyz", block, spec.max_block_dims):
        if b > lim:
            raise LaunchConfigError(f"block {tuple(block)}: {axis} = {b} exceeds this device's limit of {lim}")
    threads = math.prod(block)
    if threads > spec.max_threads_per_block:
        raise LaunchConfigError(f"block {tuple(block)} has {threads} threads; this device "
                                f"({spec.name}) allows at most {spec.max_threads_per_block} per block")


def check_grid(grid: tuple[int, int, int], spec: _device.DeviceSpec) -> None:
    for axis, g, lim in zip("xyz", grid, spec.max_grid_dims):
        if g > lim:
            raise LaunchConfigError(f"grid {tuple(grid)}: {axis} = {g:,} blocks exceeds this device's limit of {lim:,}")


def check_extra_shared(name: str, extra_shared: int, static_bytes: int, spec: _device.DeviceSpec) -> None:
    """Refuse unused dynamic shared memory (chapter 5) that would not fit next to a kernel's own ``static_bytes``."""
    if extra_shared < 0:
        raise LaunchConfigError(f"extra_shared = {extra_shared} must be 0 or more bytes")
    if static_bytes + extra_shared > spec.shared_per_block_optin:
        raise LaunchConfigError(f"{name} uses {static_bytes:,} bytes of shared memory; with {extra_shared:,} more "
                                f"a block needs {static_bytes + extra_shared:,}, above this GPU's {spec.shared_per_block_optin:,}")


def check_fits(nbytes: int, free_bytes: int, what: str) -> None:
    if nbytes > free_bytes:
        raise DeviceMemoryError(f"{what} needs {nbytes / 2**30:,.2f} GiB of device memory, "
                                f"but only {free_bytes / 2**30:,.2f} GiB is free")


# ---------------------------------------------------------------- GEMM kernels

@dataclass(frozen=True)
class GemmKernel:
    """One course GEMM kernel: ``C = kernel(A, B)`` for float32 row-major matrices.

    ``block`` is the thread block; ``tile`` the (rows, cols) of C one block computes.
    The grid follows from them: ``ceil(N / tile_cols) x ceil(M / tile_rows)``.
    """

    name: str
    chapter: int
    source: str
    function: str
    block: tuple[int, int, int]
    tile: tuple[int, int]
    summary: str = ""

    def grid(self, M: int, N: int) -> tuple[int, int, int]:
        return (-(-N // self.tile[1]), -(-M // self.tile[0]), 1)

    def check(self, A, B, spec: _device.DeviceSpec, free_bytes: int, extra_shared: int = 0) -> tuple[int, int, int]:
        """Every check, in the order a reader would want to hear about problems (``extra_shared``: unused
        dynamic shared memory per block, see :meth:`launch`)."""
        M, N, K = check_gemm_shapes(A, B)
        check_block(self.block, spec)
        check_grid(self.grid(M, N), spec)
        check_fits(models.compulsory_bytes(M, N, K), free_bytes, f"{self.name} at M={M}, N={N}, K={K} (A, B and C)")
        check_contiguous("A", A)
        check_contiguous("B", B)
        if extra_shared:
            check_extra_shared(self.name, extra_shared, self.resources().shared_bytes, spec)
        return M, N, K

    def compiled(self):
        return _compile.load(self.source).function(self.function)

    def resources(self) -> _compile.Resources:
        """Registers, shared and local memory the compiler gave this kernel on this GPU."""
        return _compile.load(self.source).resources(self.function)

    def launch(self, a_ptr, b_ptr, c_ptr, M: int, N: int, K: int, extra_shared: int = 0) -> None:
        """Enqueue the kernel on device buffers (no checks, no copies: for timing loops).

        ``extra_shared`` bytes of dynamic shared memory are requested and left unused: chapter 5
        lowers occupancy with them on purpose (above 48 KiB per block in all, the function opts in first)."""
        fn = _compile.load(self.source).prepared(self.function, "PPPiii")
        if needs_shared_opt_in(fn.shared_size_bytes, extra_shared):
            from pycuda.driver import function_attribute
            fn.set_attribute(function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, extra_shared)
        fn.prepared_call(self.grid(M, N)[:2], self.block, int(a_ptr), int(b_ptr), int(c_ptr), M, N, K,
                         shared_size=extra_shared)

    def __call__(self, A: np.ndarray, B: np.ndarray, extra_shared: int = 0) -> np.ndarray:
        drv = gpu.cuda()
        M, N, K = self.check(A, B, _device.current(), _device.free_memory(), extra_shared)
        from pycuda import gpuarray

        a, b = gpuarray.to_gpu(A), gpuarray.to_gpu(B)
        c = gpuarray.empty((M, N), np.float32)
        self.launch(a.gpudata, b.gpudata, c.gpudata, M, N, K, extra_shared)
        drv.Context.synchronize()
        return c.get()


def fast_entry(name: str, function: str, summary: str) -> GemmKernel:
    """An entry point of ``07_fast.cu`` under a course name: its block and tile come from its template
    arguments (:func:`gemmlab.autotune.kernel`), so the registry cannot drift from the source."""
    from . import autotune

    return replace(autotune.kernel(autotune.config(function)), name=name, summary=summary)


GEMM_KERNELS: list[GemmKernel] = [
    GemmKernel("naive", 1, "01_naive.cu", "gemm_naive", (32, 32, 1), (32, 32),
               "one thread per element of C, operands from global memory"),
    GemmKernel("tiled32", 2, "02_tiled.cu", "gemm_tiled_32", (32, 32, 1), (32, 32),
               "32x32 tiles of A and B staged in shared memory"),
    GemmKernel("tiled16", 2, "02_tiled.cu", "gemm_tiled_16", (16, 16, 1), (16, 16),
               "16x16 shared-memory tiles"),
    GemmKernel("tiled8", 2, "02_tiled.cu", "gemm_tiled_8", (8, 8, 1), (8, 8),
               "8x8 shared-memory tiles"),
    GemmKernel("regtile1d", 6, "06_register_tiling.cu", "gemm_regtile_1d", (512, 1, 1), (64, 64),
               "64x64 block tile, 8 rows of C per thread (1D register tiling)"),
    GemmKernel("regtile2d", 6, "06_register_tiling.cu", "gemm_regtile_2d", (256, 1, 1), (128, 128),
               "128x128 block tile, an 8x8 outer product per thread (2D register tiling)"),
    GemmKernel("regtile2d_t", 6, "06_register_tiling_2d.cu", "gemm_regtile_2d_t", (256, 1, 1), (128, 128),
               "2D register tiling with a transposed A tile, conflict-free float4 reads and unrolled tile loads"),
    GemmKernel("regtile2d_t_k16", 6, "06_register_tiling_2d.cu", "gemm_regtile_2d_t_k16", (256, 1, 1), (128, 128),
               "the same with a K-tile of 16"),
    fast_entry("fast", "gemm_fast_128x128x16_32x64_8x8",
               "float4 loads, double buffering, warp tiling: 128x128x16, warps of 32x64, 8x8 per thread"),
]


# Correct kernels that chapters 6-7 measure next to the course kernels but the ladder leaves out.
CANDIDATES: list[GemmKernel] = [
    GemmKernel("regtile2d_t_k32", 6, "06_register_tiling_2d.cu", "gemm_regtile_2d_t_k32", (256, 1, 1), (128, 128),
               "2D register tiling (transposed A) with a K-tile of 32"),
    fast_entry("fast_async", "gemm_fast_128x128x16_32x64_8x8_async",
               "the fast kernel with cp.async copies into the second stage"),
]

# Teaching variants (chapters 4 and 6): correct, each one change away from a course kernel to show what it costs.
VARIANTS: list[GemmKernel] = [
    GemmKernel("banks_transposed", 4, "04_banks.cu", "gemm_banks_transposed_32", (32, 32, 1), (32, 32),
               "the 32x32 tiled kernel with the B tile stored transposed: column reads, 32-way bank conflicts"),
    GemmKernel("banks_padded", 4, "04_banks.cu", "gemm_banks_padded_32", (32, 32, 1), (32, 32),
               "the transposed B tile with one column of padding ([32][33]): conflict-free again"),
    GemmKernel("regtile2d_t_strided", 6, "06_register_tiling_2d.cu", "gemm_regtile_2d_t_strided", (256, 1, 1), (128, 128),
               "regtile2d_t with tile loads in loops the compiler cannot count (i = tid, tid + 256, ...)"),
]

# Wrong on purpose (chapter 3): the tiled kernel with an early return before its barriers.
EARLY_RETURN = GemmKernel("early_return", 3, "03_early_return.cu", "gemm_tiled_early_return_32", (32, 32, 1), (32, 32),
                          "the 32x32 tiled kernel with an early return before __syncthreads(): wrong when 32 does not divide M or N")


def kernels() -> dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]]:
    """``{name: callable(A, B) -> C}`` for every correct course GEMM kernel, in chapter order.

    Needs no GPU to list; calling one compiles its file on first use.
    """
    return {k.name: k for k in sorted(GEMM_KERNELS, key=lambda k: k.chapter)}


def every_kernel() -> dict[str, GemmKernel]:
    """Every GEMM kernel the course registers, by name: the course kernels, the teaching variants,
    the candidates the ladder leaves out and chapter 3's wrong one (for profilers and ``python -m gemmlab run``)."""
    return {k.name: k for k in [*GEMM_KERNELS, *VARIANTS, *CANDIDATES, EARLY_RETURN]}


def known_kernels() -> dict[str, GemmKernel]:
    """:func:`every_kernel` and every entry point of ``07_fast.cu`` by its function
    name (chapter 7's tuned configurations and ablations): every name :func:`lookup` and
    ``python -m gemmlab run`` accept."""
    from . import autotune

    fast = {c.function: autotune.kernel(c) for c in autotune.search_space(ablations=True)}
    return {**every_kernel(), **fast}


def lookup(name: str) -> GemmKernel:
    """The kernel called ``name`` in :func:`known_kernels`, or a KeyError listing the names."""
    known = known_kernels()
    if name not in known:
        raise KeyError(f"no GEMM kernel named {name!r}; choose from {', '.join(known)}")
    return known[name]


# ---------------------------------------------------------------- chapter 4 probe

BANKS = "04_banks.cu"


def bank_probe(blocks: int, iters: int, with_global_loads: bool) -> np.ndarray:
    """Run ``bank_probe`` once: ``blocks`` blocks of 1024 threads, ``iters`` rounds of one conflict-free
    shared store and load per thread, with or without one global load per thread per round."""
    if blocks < 1 or iters < 1:
        raise ValueError(f"blocks and iters must be at least 1, got {blocks} and {iters}")
    drv = gpu.cuda()
    spec = _device.current()
    check_grid((blocks, 1, 1), spec)
    from pycuda import gpuarray

    n = blocks * 1024 * (iters if with_global_loads else 1)
    check_fits(4 * (n + blocks * 1024), _device.free_memory(), "bank_probe")
    src = gpuarray.zeros(n, np.float32)
    out = gpuarray.empty(blocks * 1024, np.float32)
    _compile.load(BANKS).function("bank_probe")(out.gpudata, src.gpudata, np.int32(iters), np.int32(bool(with_global_loads)),
                                                block=(1024, 1, 1), grid=(blocks, 1, 1))
    drv.Context.synchronize()
    return out.get()


# ---------------------------------------------------------------- chapter 0 probes

PROBES = "00_probes.cu"
FMA_CHAINS = 8   # must match CHAINS in kernels/00_probes.cu


def probe_grid(threads: int, spec: _device.DeviceSpec, waves: int = 8) -> tuple[int, int, int]:
    """Enough blocks of ``threads`` to fill every SM ``waves`` times over."""
    return (spec.sms * max(1, spec.max_threads_per_sm // threads) * waves, 1, 1)


def hello_ids(blocks: int, threads: int) -> np.ndarray:
    """Run ``hello_ids`` on ``blocks x threads`` threads; rows of (blockIdx.x, threadIdx.x, global index)."""
    drv = gpu.cuda()
    spec = _device.current()
    check_block((threads, 1, 1), spec)
    check_grid((blocks, 1, 1), spec)
    n = blocks * threads
    out = np.full((n, 3), -1, np.int32)
    _compile.load(PROBES).function("hello_ids")(drv.Out(out), np.int32(n), block=(threads, 1, 1), grid=(blocks, 1, 1))
    return out


def _check_copy(src, dst, threads, spec) -> None:
    check_block((threads, 1, 1), spec)
    if src.dtype != np.float32 or dst.dtype != np.float32 or src.size != dst.size:
        raise ValueError(f"copy needs two float32 arrays of one size, got {src.dtype}[{src.size}] and {dst.dtype}[{dst.size}]")


def copy(src, dst, threads: int = 256) -> None:
    """Enqueue ``copy_f32``: ``dst[:] = src`` (float32 GPUArrays of one size), one float4 per thread."""
    spec = _device.current()
    _check_copy(src, dst, threads, spec)
    blocks = -(-(src.size // 4 + 3) // threads)
    check_grid((blocks, 1, 1), spec)
    _compile.load(PROBES).function("copy_f32")(src.gpudata, dst.gpudata, np.int64(src.size),
                                               block=(threads, 1, 1), grid=(blocks, 1, 1))


def copy_passes(src, dst, passes: int, threads: int = 256) -> None:
    """Enqueue ``copy_passes_f32``: the same copy ``passes`` times, by one resident wave of blocks
    that strides over the whole buffer in every pass."""
    spec = _device.current()
    _check_copy(src, dst, threads, spec)
    if passes < 1:
        raise ValueError(f"passes must be at least 1, got {passes}")
    _compile.load(PROBES).function("copy_passes_f32")(src.gpudata, dst.gpudata, np.int64(src.size), np.int32(passes),
                                                      block=(threads, 1, 1), grid=probe_grid(threads, spec, waves=1))


def fma(out, iters: int, threads: int = 256) -> None:
    """Enqueue ``fma_f32``: one thread per element of ``out``, ``iters`` rounds of 8 chained FMAs."""
    spec = _device.current()
    check_block((threads, 1, 1), spec)
    if out.size % threads:
        raise ValueError(f"fma needs len(out) to be a multiple of threads={threads}, got {out.size}")
    blocks = out.size // threads
    check_grid((blocks, 1, 1), spec)
    _compile.load(PROBES).function("fma_f32")(out.gpudata, np.int32(iters), np.float32(0.5), np.float32(0.5),
                                              block=(threads, 1, 1), grid=(blocks, 1, 1))


def fma_values(blocks: int, threads: int, iters: int) -> np.ndarray:
    """Run ``fma_f32`` once on ``blocks x threads`` threads and return what each thread wrote."""
    gpu.cuda()
    from pycuda import gpuarray

    out = gpuarray.zeros(blocks * threads, np.float32)
    fma(out, iters, threads)
    return out.get()


def barrier_deadlock(spin_limit: int, threads: int = 128) -> np.ndarray:
    """Run chapter 3's ``barrier_deadlock`` in one block; with ``spin_limit`` 0 it never returns, so
    call it only in a child process under :func:`gemmlab.watchdog.run_isolated`. Returns what each
    thread wrote: 1 for warp 0 (past the barrier), 2 for a thread that saw the flag, 0 for one that gave up."""
    drv = gpu.cuda()
    spec = _device.current()
    if threads <= spec.warp_size:
        raise ValueError(f"the deadlock needs more than one warp, got threads={threads}")
    check_block((threads, 1, 1), spec)
    out = np.zeros(threads, np.int32)
    _compile.load("03_deadlock.cu").function("barrier_deadlock")(drv.InOut(out), np.int32(spin_limit),
                                                                 block=(threads, 1, 1), grid=(1, 1, 1))
    return out
