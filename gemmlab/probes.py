"""The small kernels that are not GEMMs: chapter 0's probes, chapter 3's deadlock, chapter 4's bank probe.

Each function checks its arguments (:mod:`gemmlab.checks`) before it launches anything.
"""

from __future__ import annotations

import numpy as np

from . import compiler, device, gpu
from .checks import check_block, check_fits, check_grid
from .compile_units import FMA_CHAINS

__all__ = ["FMA_CHAINS", "bank_probe", "barrier_deadlock", "copy", "copy_passes", "fma", "fma_values", "hello_ids",
           "probe_grid"]

# ---------------------------------------------------------------- chapter 4 probe

BANKS = "04_banks.cu"


def bank_probe(blocks: int, iters: int, with_global_loads: bool) -> np.ndarray:
    """Run ``bank_probe`` once: ``blocks`` blocks of 1024 threads, ``iters`` rounds of one conflict-free
    shared store and load per thread, with or without one global load per thread per round."""
    if blocks < 1 or iters < 1:
        raise ValueError(f"blocks and iters must be at least 1, got {blocks} and {iters}")
    drv = gpu.cuda()
    spec = device.current()
    check_grid((blocks, 1, 1), spec)
    from pycuda import gpuarray

    n = blocks * 1024 * (iters if with_global_loads else 1)
    check_fits(4 * (n + blocks * 1024), device.free_memory(), "bank_probe")
    src = gpuarray.zeros(n, np.float32)
    out = gpuarray.empty(blocks * 1024, np.float32)
    compiler.load(BANKS).function("bank_probe")(out.gpudata, src.gpudata, np.int32(iters), np.int32(bool(with_global_loads)),
                                                block=(1024, 1, 1), grid=(blocks, 1, 1))
    drv.Context.synchronize()
    return out.get()


# ---------------------------------------------------------------- chapter 0

PROBES = "00_probes.cu"


def probe_grid(threads: int, spec: device.DeviceSpec, waves: int = 8) -> tuple[int, int, int]:
    """Enough blocks of ``threads`` to fill every SM ``waves`` times over."""
    return (spec.sms * max(1, spec.max_threads_per_sm // threads) * waves, 1, 1)


def hello_ids(blocks: int, threads: int) -> np.ndarray:
    """Run ``hello_ids`` on ``blocks x threads`` threads; rows of (blockIdx.x, threadIdx.x, global index)."""
    drv = gpu.cuda()
    spec = device.current()
    check_block((threads, 1, 1), spec)
    check_grid((blocks, 1, 1), spec)
    n = blocks * threads
    out = np.full((n, 3), -1, np.int32)
    compiler.load(PROBES).function("hello_ids")(drv.Out(out), np.int32(n), block=(threads, 1, 1), grid=(blocks, 1, 1))
    return out


def _check_copy(src, dst, threads, spec) -> None:
    check_block((threads, 1, 1), spec)
    if src.dtype != np.float32 or dst.dtype != np.float32 or src.size != dst.size:
        raise ValueError(f"copy needs two float32 arrays of one size, got {src.dtype}[{src.size}] and {dst.dtype}[{dst.size}]")


def copy(src, dst, threads: int = 256) -> None:
    """Enqueue ``copy_f32``: ``dst[:] = src`` (float32 GPUArrays of one size), one float4 per thread."""
    spec = device.current()
    _check_copy(src, dst, threads, spec)
    blocks = -(-(src.size // 4 + 3) // threads)
    check_grid((blocks, 1, 1), spec)
    compiler.load(PROBES).function("copy_f32")(src.gpudata, dst.gpudata, np.int64(src.size),
                                               block=(threads, 1, 1), grid=(blocks, 1, 1))


def copy_passes(src, dst, passes: int, threads: int = 256) -> None:
    """Enqueue ``copy_passes_f32``: the same copy ``passes`` times, by one resident wave of blocks
    that strides over the whole buffer in every pass."""
    spec = device.current()
    _check_copy(src, dst, threads, spec)
    if passes < 1:
        raise ValueError(f"passes must be at least 1, got {passes}")
    compiler.load(PROBES).function("copy_passes_f32")(src.gpudata, dst.gpudata, np.int64(src.size), np.int32(passes),
                                                      block=(threads, 1, 1), grid=probe_grid(threads, spec, waves=1))


def fma(out, iters: int, threads: int = 256) -> None:
    """Enqueue ``fma_f32``: one thread per element of ``out``, ``iters`` rounds of :data:`~gemmlab.compile_units.FMA_CHAINS` independent FMAs."""
    spec = device.current()
    check_block((threads, 1, 1), spec)
    if out.size % threads:
        raise ValueError(f"fma needs len(out) to be a multiple of threads={threads}, got {out.size}")
    blocks = out.size // threads
    check_grid((blocks, 1, 1), spec)
    compiler.load(PROBES).function("fma_f32")(out.gpudata, np.int32(iters), np.float32(0.5), np.float32(0.5),
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
    spec = device.current()
    if threads <= spec.warp_size:
        raise ValueError(f"the deadlock needs more than one warp, got threads={threads}")
    check_block((threads, 1, 1), spec)
    out = np.zeros(threads, np.int32)
    compiler.load("03_deadlock.cu").function("barrier_deadlock")(drv.InOut(out), np.int32(spin_limit),
                                                                 block=(threads, 1, 1), grid=(1, 1, 1))
    return out
