"""Measuring: the GPU's ceilings with the chapter 0 probes, and every GEMM kernel against cuBLAS.

``python -m gemmlab bench`` prints the ladder (every kernel and cuBLAS FP32 at several sizes)
and writes it as JSON. Kernels are timed with CUDA events (:mod:`gemmlab.timing`) on device
buffers, so host copies are not in the times. Each result is checked against the reference
first; a wrong one is marked ``correct: false`` in the ladder and makes the command exit 1.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

import numpy as np

from . import device as _device
from . import gpu, launch, models, timing, verify


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
    launch.check_fits(2 * 4 * n, _device.free_memory(), f"the copy probe on 2 x {nbytes / 2**20:,.0f} MiB")
    src = gpuarray.arange(n, dtype=np.float32)
    dst = gpuarray.zeros(n, np.float32)
    if passes is None:
        t = timing.time_gpu(lambda: launch.copy(src, dst, threads), repeat=repeat)
    else:
        t = timing.time_gpu(lambda: launch.copy_passes(src, dst, passes, threads), repeat=repeat)
    head, tail = slice(0, min(n, 1 << 20)), slice(max(0, n - (1 << 20)), n)
    if not all(np.array_equal(dst[s].get(), src[s].get()) for s in (head, tail)):
        raise RuntimeError("the copy probe produced a wrong copy: its timing is meaningless")
    return (passes or 1) * 2 * 4 * n / t.median_s, t


def copy_sweep(sizes_bytes, bytes_per_launch: int = 4 << 30) -> list[float]:
    """Copy bandwidth for each buffer size with ``copy_passes_f32``: enough passes that each launch
    moves about ``bytes_per_launch`` bytes, so launch overhead does not hide the speed of a cache
    that holds a small buffer."""
    return [copy_bandwidth(nb, passes=max(1, bytes_per_launch // (2 * nb)))[0] for nb in sizes_bytes]


def fma_throughput(iters: int = 16384, threads: int = 256, waves: int = 8, repeat: int = 10) -> tuple[float, timing.Timing]:
    """FLOP/s of ``fma_f32``: every thread runs ``iters`` rounds of 8 independent FMAs (2 FLOPs each)."""
    gpu.cuda()
    from pycuda import gpuarray

    spec = _device.current()
    blocks = launch.probe_grid(threads, spec, waves)[0]
    out = gpuarray.zeros(blocks * threads, np.float32)
    t = timing.time_gpu(lambda: launch.fma(out, iters, threads), repeat=repeat)
    if not np.allclose(out.get(), launch.FMA_CHAINS * 1.0, atol=1e-3):
        raise RuntimeError("the FMA probe did not reach its fixed point: its timing is meaningless")
    return 2 * launch.FMA_CHAINS * iters * out.size / t.median_s, t


def ceilings(copy_bytes: int = 1 << 30) -> list[Ceiling]:
    """Peak FP32 and DRAM bandwidth: derived from the attributes, and measured by the probes."""
    spec = _device.current()
    bw, tb = copy_bandwidth(copy_bytes)
    fl, tf = fma_throughput()
    return [
        Ceiling("FP32 compute", "TFLOP/s", _device.peak_fp32_flops(spec) / 1e12, fl / 1e12, f"fma_f32, {tf}"),
        Ceiling("DRAM bandwidth", "GB/s", _device.peak_dram_bandwidth(spec) / 1e9, bw / 1e9,
                f"copy_f32 of {copy_bytes / 2**20:,.0f} MiB, {tb}"),
    ]


# ---------------------------------------------------------------- GEMM ladder

@dataclass(frozen=True)
class GemmResult:
    kernel: str
    M: int
    N: int
    K: int
    seconds: float
    tflops: float
    gbps: float          # compulsory traffic (read A and B once, write C once) over the time
    correct: bool


def _result(name, M, N, K, seconds, correct) -> GemmResult:
    return GemmResult(name, M, N, K, seconds, models.gemm_flops(M, N, K) / seconds / 1e12,
                      models.compulsory_bytes(M, N, K) / seconds / 1e9, correct)


def time_gemm(kernel: launch.GemmKernel, A: np.ndarray, B: np.ndarray, repeat: int = 5,
              reference: verify.Reference | None = None, extra_shared: int = 0) -> GemmResult:
    """Check ``kernel`` on (A, B) (against ``reference`` if given, to share one across kernels), then
    time it on device buffers (with ``extra_shared`` unused bytes of dynamic shared memory per block)."""
    drv = gpu.cuda()
    from pycuda import gpuarray

    M, N, K = kernel.check(A, B, _device.current(), _device.free_memory(), extra_shared)
    a, b = gpuarray.to_gpu(A), gpuarray.to_gpu(B)
    c = gpuarray.empty((M, N), np.float32)
    kernel.launch(a.gpudata, b.gpudata, c.gpudata, M, N, K, extra_shared)
    drv.Context.synchronize()
    ok = (reference or verify.Reference(A, B)).check(c.get()).ok
    t = timing.time_gpu(lambda: kernel.launch(a.gpudata, b.gpudata, c.gpudata, M, N, K, extra_shared),
                        warmup=1, repeat=repeat)
    return _result(kernel.name, M, N, K, t.median_s, ok)


def cupy_or_none():
    """CuPy with TF32 off (so cuBLAS computes in true FP32), or None where it is not installed."""
    os.environ.setdefault("CUPY_TF32", "0")
    try:
        import cupy
    except ImportError:
        return None
    return cupy


def time_cublas(A: np.ndarray, B: np.ndarray, repeat: int = 5, reference: verify.Reference | None = None) -> GemmResult | None:
    """cuBLAS SGEMM through CuPy's matmul, in this process and context; None without CuPy."""
    gpu.cuda()
    cp = cupy_or_none()
    if cp is None:
        return None
    M, K = A.shape
    N = B.shape[1]
    a, b = cp.asarray(A), cp.asarray(B)
    c = cp.matmul(a, b)
    cp.cuda.Device().synchronize()
    ok = (reference or verify.Reference(A, B)).check(cp.asnumpy(c)).ok
    t = timing.time_gpu(lambda: cp.matmul(a, b, out=c), warmup=1, repeat=repeat)
    return _result("cuBLAS", M, N, K, t.median_s, ok)


def sweep(names, sizes, repeat: int = 5, cublas: bool = True) -> dict[str, list[GemmResult]]:
    """Each named course kernel (and cuBLAS) at each square size n: ``{name: [result per size]}``."""
    gpu.cuda()
    table = {name: [] for name in names}
    if cublas and cupy_or_none() is not None:
        table["cuBLAS"] = []
    for n in sizes:
        A, B = verify.random_operands(n, n, n, seed=n)
        ref = verify.Reference(A, B)
        for name in names:
            table[name].append(time_gemm(launch.kernels()[name], A, B, repeat, ref))
        if "cuBLAS" in table:
            table["cuBLAS"].append(time_cublas(A, B, repeat, ref))
    return table


# The ladder of chapter 7: four squares and one shape that is neither square nor a multiple of any tile.
DEFAULT_SIZES = ((1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (3000, 5000, 1234))


def ladder(sizes=DEFAULT_SIZES, names=None, repeat: int = 5, log=print) -> list[GemmResult]:
    """Every course kernel (or those named) and cuBLAS at each (M, N, K)."""
    unknown = sorted(set(names or ()) - set(launch.kernels()))
    if unknown:
        raise ValueError(f"no course kernel named {', '.join(unknown)}; choose from {', '.join(launch.kernels())}")
    gpu.cuda()
    chosen = [k for n, k in launch.kernels().items() if names is None or n in names]
    results = []
    for M, N, K in sizes:
        A, B = verify.random_operands(M, N, K, seed=M + N + K)
        ref = verify.Reference(A, B)
        for k in chosen:
            r = time_gemm(k, A, B, repeat, ref)
            log(format_row(r))
            results.append(r)
        r = time_cublas(A, B, repeat, ref)
        if r is not None:
            log(format_row(r))
            results.append(r)
    return results


def format_row(r: GemmResult) -> str:
    mark = "" if r.correct else "  WRONG RESULT"
    return f"{r.kernel:>10}  {r.M:>6}x{r.N:<6}x{r.K:<6} {r.seconds * 1e3:10.3f} ms {r.tflops:8.2f} TFLOP/s{mark}"


def to_json(results: list[GemmResult]) -> dict:
    """The ladder with each kernel's share of cuBLAS at the same size, and the device it ran on."""
    spec = _device.current()
    base = {(r.M, r.N, r.K): r.tflops for r in results if r.kernel == "cuBLAS"}
    rows = []
    for r in results:
        row = asdict(r)
        ref = base.get((r.M, r.N, r.K))
        row["fraction_of_cublas"] = r.tflops / ref if ref else None
        row["fraction_of_fp32_peak"] = r.tflops * 1e12 / _device.peak_fp32_flops(spec)
        rows.append(row)
    return {"device": spec.name, "arch": spec.arch, "cupy_tf32": os.environ.get("CUPY_TF32"), "results": rows}
