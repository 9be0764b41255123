"""The GPU's ceilings, each derived from its attributes and measured by a probe.

:func:`measure` gives peak FP32 (``fma_f32``) and DRAM bandwidth (``copy_f32``) next to what
:mod:`gemmlab.runtime.device` derives from the clocks, lane counts and bus width; :func:`copy_sweep` shows what
the caches deliver to smaller buffers; :func:`tensor` gives the tensor cores' rate per input format
(chapter 8's ``mma.sync`` probes) next to the datasheet-derived peak. Timed with CUDA events (:mod:`gemmlab.runtime.timing`); each probe's
output is checked before its time is believed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from ..gemm import checks, tensor_cores
from ..gemm.units import MMA_CHAINS
from ..runtime import device, gpu, timing
from . import probes


@dataclass(frozen=True)
class Ceiling:
    """One measured ceiling next to the one derived from the device's attributes."""

    what: str
    unit: str
    derived: float
    measured: float
    detail: str

    @property
    def fraction(self) -> float:
        return self.measured / self.derived


def copy_bandwidth(nbytes: int = 1 << 30, threads: int = 256, repeat: int = 20, passes: int | None = None) -> tuple[float, timing.Timing]:
    """Bytes/s moved between two ``nbytes`` buffers, counting one read and one write per byte copied.

    With ``passes=None``, one launch of ``copy_f32`` (one float4 per thread). With a number, one
    launch of ``copy_passes_f32`` repeating the copy that many times.
    """
    gpu.cuda()
    from pycuda import gpuarray

    n = nbytes // 4
    checks.check_fits(2 * 4 * n, device.free_memory(), f"the copy probe on 2 x {nbytes / 2**20:,.0f} MiB")
    src = gpuarray.arange(n, dtype=np.float32)
    dst = gpuarray.zeros(n, np.float32)
    if passes is None:
        t = timing.time_gpu(lambda: probes.copy(src, dst, threads), repeat=repeat)
    else:
        t = timing.time_gpu(lambda: probes.copy_passes(src, dst, passes, threads), repeat=repeat)
    head, tail = slice(0, min(n, 1 << 20)), slice(max(0, n - (1 << 20)), n)
    if not all(np.array_equal(dst[s].get(), src[s].get()) for s in (head, tail)):
        raise RuntimeError("the copy probe produced a wrong copy: its timing is meaningless")
    return (passes or 1) * 2 * 4 * n / t.median_s, t


def copy_sweep(sizes_bytes: Iterable[int], bytes_per_launch: int = 4 << 30) -> list[float]:
    """Copy bandwidth for each buffer size with ``copy_passes_f32``: enough passes that each launch
    moves about ``bytes_per_launch`` bytes, so launch overhead does not hide the speed of a cache
    that holds a small buffer."""
    return [copy_bandwidth(nb, passes=max(1, bytes_per_launch // (2 * nb)))[0] for nb in sizes_bytes]


def fma_throughput(iters: int = 16384, threads: int = 256, waves: int = 8, repeat: int = 10) -> tuple[float, timing.Timing]:
    """FLOP/s of ``fma_f32``: every thread runs ``iters`` rounds of 8 independent FMAs (2 FLOPs each)."""
    gpu.cuda()
    from pycuda import gpuarray

    spec = device.current()
    blocks = probes.probe_grid(threads, spec, waves)[0]
    out = gpuarray.zeros(blocks * threads, np.float32)
    t = timing.time_gpu(lambda: probes.fma(out, iters, threads), repeat=repeat)
    if not np.allclose(out.get(), probes.FMA_CHAINS * 1.0, atol=1e-3):
        raise RuntimeError("the FMA probe did not reach its fixed point: its timing is meaningless")
    return 2 * probes.FMA_CHAINS * iters * out.size / t.median_s, t


def mma_form(precision: str, spec: device.DeviceSpec) -> tuple[str, str]:
    """The ``mma.sync`` shape and type the course's kernels use for ``precision`` on this GPU (a T4's FP16
    instruction is m16n8k8; sm_80 and later have m16n8k16)."""
    old_fp16 = precision == "FP16" and tuple(spec.compute_capability) < (8, 0)
    return ("m16n8k8" if precision == "TF32" or old_fp16 else "m16n8k16"), tensor_cores.PRECISIONS[precision]


def tensor(precisions: Iterable[str] = ("FP16", "BF16", "TF32")) -> list[Ceiling]:
    """The tensor cores' ceiling per input format: the ``mma.sync`` probe (:func:`gemmlab.measure.probes.mma_ceiling`)
    next to the peak derived from :data:`gemmlab.runtime.device.TENSOR_FLOPS_PER_SM_CLOCK` (NaN where none is recorded).
    Formats the compiled code has no instruction for are left out."""
    spec = device.current()
    out = []
    for p in precisions:
        shape, dtype = mma_form(p, spec)
        rate = probes.mma_ceiling(shape, dtype)
        if rate is None:
            continue
        peak = device.peak_tensor_flops(spec, p)
        out.append(Ceiling(f"{p} tensor cores", "TFLOP/s", peak / 1e12 if peak else float("nan"), rate / 1e12,
                           f"mma.sync.{shape}.{dtype}, {MMA_CHAINS} independent chains per warp"))
    return out


def measure(copy_bytes: int = 1 << 30) -> list[Ceiling]:
    """Peak FP32 and DRAM bandwidth: derived from the attributes, and measured by the probes."""
    spec = device.current()
    bw, tb = copy_bandwidth(copy_bytes)
    fl, tf = fma_throughput()
    return [
        Ceiling("FP32 compute", "TFLOP/s", device.peak_fp32_flops(spec) / 1e12, fl / 1e12, f"fma_f32, {tf}"),
        Ceiling("DRAM bandwidth", "GB/s", device.peak_dram_bandwidth(spec) / 1e9, bw / 1e9,
                f"copy_f32 of {copy_bytes / 2**20:,.0f} MiB, {tb}"),
    ]
