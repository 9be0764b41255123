"""Past FP32: the same product on the tensor cores (TF32, FP16 and BF16 inputs), by cuBLAS and by chapter 8's
kernels, timed and checked.

Chapter 7's kernels run FP32 on the CUDA cores and are compared with cuBLAS in true FP32. cuBLAS can
also run the product on the tensor cores: TF32 (FP32 inputs rounded to a 10-bit mantissa inside the
multiplier), or FP16 / BF16 inputs, always accumulating in FP32 here. :func:`measure` times each
through ``cublasGemmEx`` (CuPy's binding) on the same operands and reports how far each result lies
from the float64 product of the FP32 inputs, in units of ``|A|·|B|`` (so 1e-7 is FP32-sized rounding).
:func:`ladder` is ``python -m gemmlab bench --precision``: chapter 8's kernels next to cuBLAS in one format.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Collection, Iterable, Mapping, Sequence

import numpy as np

from ..gemm import registry
from ..gemm.base import GemmKernel
from ..models import traffic, verify
from ..models.mma import to_bf16_bits
from ..runtime import gpu, timing
from . import bench

# cublasComputeType_t and cudaDataType_t values (cublas_api.h, library_types.h).
COMPUTE_32F, COMPUTE_32F_FAST_TF32 = 68, 77
R_32F, R_16F, R_16BF = 0, 2, 14
GEMM_DEFAULT = -1

PRECISIONS = {
    # name: (input type, compute type, what it is)
    "FP32": (R_32F, COMPUTE_32F, "FP32 inputs, FP32 multiply-add (CUDA cores): the course's baseline"),
    "TF32": (R_32F, COMPUTE_32F_FAST_TF32, "FP32 inputs rounded to TF32 (10-bit mantissa) in the tensor cores, FP32 sums"),
    "FP16": (R_16F, COMPUTE_32F, "inputs rounded to FP16, tensor-core products, FP32 sums"),
    "BF16": (R_16BF, COMPUTE_32F, "inputs rounded to BF16 (7-bit mantissa), tensor-core products, FP32 sums"),
}


@dataclass(frozen=True)
class PrecisionResult:
    precision: str
    M: int
    N: int
    K: int
    seconds: float | None          # None: cuBLAS refused this precision on this GPU
    max_error: float | None        # max |C - A·B| / (|A|·|B|), against the float64 product of the FP32 inputs
    note: str = ""

    @property
    def tflops(self) -> float | None:
        return traffic.gemm_flops(self.M, self.N, self.K) / self.seconds / 1e12 if self.seconds else None


def _device_inputs(cp: Any, X: np.ndarray, dtype: int) -> Any:     # CuPy and its arrays (CuPy has no type information)
    if dtype == R_32F:
        return cp.asarray(X)
    if dtype == R_16F:
        return cp.asarray(X.astype(np.float16))
    return cp.asarray(to_bf16_bits(X))


def relative_error(C: np.ndarray, exact: np.ndarray, scale: np.ndarray) -> float:
    """The largest ``|C - exact| / scale``, with ``scale = |A|·|B|`` (the size of the terms each element sums)."""
    return float(np.max(np.abs(C - exact) / np.maximum(scale, np.finfo(np.float64).tiny)))


def _check_precisions(precisions: Iterable[str]) -> None:
    unknown = sorted(set(precisions) - set(PRECISIONS))
    if unknown:
        raise ValueError(f"unknown precision {', '.join(unknown)}; choose from {', '.join(PRECISIONS)}")


def _cublas_call(cp: Any, A: np.ndarray, B: np.ndarray, precision: str) -> tuple[Callable[[], None], Any]:
    """``(run, c)``: a call of ``cublasGemmEx`` computing C = A·B in ``precision`` into the device array c."""
    from cupy.cuda import cublas

    M, K = A.shape
    N = B.shape[1]
    dtype, compute, _ = PRECISIONS[precision]
    a, b = _device_inputs(cp, A, dtype), _device_inputs(cp, B, dtype)
    c = cp.empty((M, N), cp.float32)
    one, zero = np.ones(1, np.float32), np.zeros(1, np.float32)
    handle = cp.cuda.device.get_cublas_handle()

    def run() -> None:   # row-major C = A·B is column-major C^T = B^T·A^T: cuBLAS gets B first
        cublas.gemmEx(handle, cublas.CUBLAS_OP_N, cublas.CUBLAS_OP_N, N, M, K, one.ctypes.data, b.data.ptr, dtype, N,
                      a.data.ptr, dtype, K, zero.ctypes.data, c.data.ptr, R_32F, N, compute, GEMM_DEFAULT)
    return run, c


def measure(M: int, N: int, K: int, precisions: Collection[str] = tuple(PRECISIONS), repeat: int = 5,
            seed: int = 0) -> list[PrecisionResult] | None:
    """Each precision's cuBLAS time and error at M x N x K, on one pair of random FP32 operands; None
    without CuPy (:data:`gemmlab.measure.bench.NO_CUBLAS` printed once)."""
    _check_precisions(precisions)
    gpu.cuda()
    cp = bench.cupy_or_none()
    if cp is None:
        bench._say_once(bench.NO_CUBLAS)
        return None
    from cupy.cuda import cublas

    A, B = verify.random_operands(M, N, K, seed=seed)
    exact, scale = verify.reference(A, B), np.abs(A).astype(np.float64) @ np.abs(B).astype(np.float64)
    out = []
    for name in precisions:
        run, c = _cublas_call(cp, A, B, name)
        try:
            run()
            cp.cuda.Device().synchronize()
        except cublas.CUBLASError as e:
            out.append(PrecisionResult(name, M, N, K, None, None, f"cuBLAS refused it here: {e}"))
            continue
        err = relative_error(cp.asnumpy(c), exact, scale)
        t = timing.time_gpu(run, warmup=1, repeat=repeat)
        out.append(PrecisionResult(name, M, N, K, t.median_s, err))
    return out


def prepare_cublas(A: np.ndarray, B: np.ndarray, precision: str,
                   reference: verify.Reference | None = None) -> bench.Prepared | None:
    """cuBLAS in ``precision``, run once and checked against ``reference`` (by default A·B of the inputs rounded as
    chapter 8's kernels round them), ready to be timed as a ladder row ("cuBLAS"); None without CuPy or where cuBLAS
    refuses."""
    _check_precisions([precision])
    if precision == "FP32":
        return bench.prepare_cublas(A, B, reference)
    gpu.cuda()
    cp = bench.cupy_or_none()
    if cp is None:
        bench._say_once(bench.NO_CUBLAS)
        return None
    from cupy.cuda import cublas

    from ..gemm import tensor_cores
    run, c = _cublas_call(cp, A, B, precision)
    try:
        run()
        cp.cuda.Device().synchronize()
    except cublas.CUBLASError:
        return None
    ref = reference or tensor_cores.reference(A, B, precision)
    M, K = A.shape
    return bench.Prepared("cuBLAS", M, B.shape[1], K, run, ref.check(cp.asnumpy(c)).ok, precision)


def time_cublas(A: np.ndarray, B: np.ndarray, precision: str, repeat: int = 5,
                reference: verify.Reference | None = None) -> bench.GemmResult | None:
    """cuBLAS in ``precision`` (:func:`prepare_cublas`), timed, as a ladder row; None without CuPy or where cuBLAS
    refuses."""
    p = prepare_cublas(A, B, precision, reference)
    return None if p is None else p.timed(repeat)


def compare(kernels: Mapping[str, GemmKernel], A: np.ndarray, B: np.ndarray, precision: str, repeat: int = 5,
            say: Callable[[str], object] = print) -> tuple[dict[str, bench.GemmResult], bench.GemmResult | None]:
    """Tensor-core ``kernels`` (chapters 8 and 9, ``{name: kernel}``, all of ``precision``) and cuBLAS in the same format on the
    same operands, in one run, each checked against one reference (A·B of the rounded inputs) and timed:
    ``({name: result}, cuBLAS result or None)``. A kernel that cannot run on this GPU is left out, and ``say``
    gets the reason in one sentence."""
    from ..gemm import tensor_cores
    from ..runtime import device

    _check_precisions([precision])
    gpu.cuda()
    spec = device.current()
    ref = tensor_cores.reference(A, B, precision)
    out = {}
    for name, k in kernels.items():
        why = tensor_cores.unavailable_reason(k, spec)
        if why:
            say(why)
            continue
        out[name] = bench.time_gemm(k, A, B, repeat, ref)
    return out, time_cublas(A, B, precision, repeat, ref)


def ladder(sizes: Iterable[Sequence[int]] = bench.DEFAULT_SIZES, precision: str = "FP16",
           names: Iterable[str] | None = None, repeat: int = 5, log: Callable[[str], object] = print,
           progress: Callable[[str], object] | None = None, interleave: bool = False) -> list[bench.GemmResult]:
    """Chapters 8 and 9's kernels for one input format (:func:`gemmlab.gemm.registry.by_precision`, or those named;
    those this GPU cannot run left out) and cuBLAS in the same format at each (M, N, K), checked against A·B of the
    rounded inputs, then timed, each on its own or, with ``interleave``, against each other: :func:`gemmlab.measure.bench.ladder`
    with that format's kernels, reference and cuBLAS."""
    _check_precisions([precision])
    if precision == "FP32":
        return bench.ladder(sizes, names, repeat, log, progress, interleave=interleave)
    from ..gemm import tensor_cores
    from ..runtime import device

    every = registry.by_precision(precision)
    unknown = sorted(set(names or ()) - set(every))
    if unknown:
        raise ValueError(f"no {precision} kernel named {', '.join(unknown)}; choose from {', '.join(every)}")
    gpu.cuda()
    spec = device.current()
    runnable = {n: k for n, k in every.items() if (names is None or n in names) and tensor_cores.unavailable_reason(k, spec) is None}
    return bench.ladder(sizes, None, repeat, log, progress, kernels=runnable, label=precision,
                        reference=lambda A, B: tensor_cores.reference(A, B, precision),
                        cublas=lambda A, B, ref: prepare_cublas(A, B, precision, ref), interleave=interleave)
