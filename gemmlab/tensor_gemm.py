"""Tensor-core GEMM kernels (chapter 8): ``C = kernel(A, B)`` with A and B rounded to FP16 or BF16, products
summed in FP32, C in FP32.

The kernels of ``kernels/08_tensor_core.cu`` take 16-bit operands whose rows are padded with zeros to a
multiple of 8 elements (16 bytes): :func:`to_device_format` makes them from the caller's FP32 arrays, so a
16-byte chunk is never split by the edge of a row and any M, N, K works. :class:`TensorGemmKernel` is a
:class:`~gemmlab.gemm.GemmKernel` with a precision: the same checks, the same :class:`~gemmlab.gemm.DeviceProblem`
for timing loops, its dynamic shared memory requested at launch.

Checking: FP16 x FP16 and BF16 x BF16 products are exact in FP32 (11 + 11 and 8 + 8 significant bits fit in
24), so against the *rounded* inputs a kernel errs only in its FP32 sums: :func:`rounded` gives the inputs as
the kernel sees them, and chapter 1's bound (:mod:`gemmlab.verify`) applies to them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import checks, device, gpu, limits
from .mma import bf16_to_f32, to_bf16_bits
from .gemm import DeviceProblem, GemmKernel
from .tc_configs import CONFIGS, SOURCE, SUFFIXES, TcConfig

PRECISIONS = SUFFIXES
PAD = 8
"""Rows of A and B are padded to a multiple of this many 16-bit elements (16 bytes)."""


def _require(precision: str) -> None:
    if precision not in PRECISIONS:
        raise ValueError(f"the tensor-core kernels take {', '.join(PRECISIONS)} inputs, got {precision!r}")


def to_16bit(X: np.ndarray, precision: str) -> np.ndarray:
    """``X`` (float32) rounded to ``precision``, as uint16 bit patterns of the same shape."""
    _require(precision)
    X = np.ascontiguousarray(X, np.float32)
    return X.astype(np.float16).view(np.uint16) if precision == "FP16" else to_bf16_bits(X)


def rounded(X: np.ndarray, precision: str) -> np.ndarray:
    """``X`` as the kernel sees it: rounded to ``precision``, back in float32 (exactly representable there)."""
    bits = to_16bit(X, precision)
    return bits.view(np.float16).astype(np.float32) if precision == "FP16" else bf16_to_f32(bits)


def to_device_format(X: np.ndarray, precision: str) -> np.ndarray:
    """``X`` rounded to ``precision`` with each row padded with zeros to a multiple of :data:`PAD` elements."""
    bits = to_16bit(X, precision)
    rows, cols = bits.shape
    padded = np.zeros((rows, -(-cols // PAD) * PAD), np.uint16)
    padded[:, :cols] = bits
    return padded


def supports(precision: str, compute_capability: tuple[int, int]) -> bool:
    """Whether code for ``compute_capability`` has a tensor-core instruction for ``precision`` inputs:
    FP16 from 7.5 (Turing, a T4), BF16 from 8.0 (Ampere)."""
    _require(precision)
    return tuple(compute_capability) >= ((8, 0) if precision == "BF16" else (7, 5))


def _capability(target: str) -> tuple[int, int]:
    digits = target.split("_")[1]              # sm_90, compute_75
    return int(digits[:-1]), int(digits[-1])


@dataclass(frozen=True)
class TensorGemmKernel(GemmKernel):
    """A tensor-core kernel for one input precision; ``function`` is the entry point without its suffix."""

    precision: str = "FP16"
    dynamic_shared: int = 0

    @property
    def entry_point(self) -> str:
        return f"{self.function}_{PRECISIONS[self.precision]}"

    def resources(self):
        return self.compiled().resources(self.entry_point)

    def check(self, A, B, spec: device.DeviceSpec, free_bytes: int, extra_shared: int = 0) -> tuple[int, int, int]:
        if not supports(self.precision, spec.compute_capability):
            raise RuntimeError(f"{self.name}: {spec.name} (compute capability {spec.compute_capability[0]}."
                               f"{spec.compute_capability[1]}) has no {self.precision} tensor-core instruction; "
                               "FP16 needs 7.5, BF16 8.0")
        if extra_shared:
            raise ValueError(f"{self.name}: extra shared memory is for chapter 5's kernels, not the tensor-core ones")
        M, N, K = checks.check_gemm(self.name, A, B, self.block, self.grid, spec, free_bytes)
        if self.dynamic_shared > spec.shared_per_block_optin:
            raise ValueError(f"{self.name} needs {self.dynamic_shared:,} bytes of shared memory per block; "
                             f"{spec.name} allows {spec.shared_per_block_optin:,}")
        return M, N, K

    def launch(self, a_ptr, b_ptr, c_ptr, M: int, N: int, K: int, extra_shared: int = 0) -> None:
        compiled = self.compiled()
        if not supports(self.precision, _capability(compiled.arch)):
            raise RuntimeError(f"{self.name}: compiled for {compiled.arch}, which has no {self.precision} tensor-core "
                               "instruction (GEMMLAB_ARCH names an older architecture than BF16 needs, 8.0)")
        fn = compiled.prepared(self.entry_point, "PPPiii")
        if limits.needs_shared_opt_in(fn.shared_size_bytes, self.dynamic_shared):
            from pycuda.driver import function_attribute
            fn.set_attribute(function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, self.dynamic_shared)
        fn.prepared_call(self.grid(M, N), self.block, int(a_ptr), int(b_ptr), int(c_ptr), M, N, K,
                         shared_size=self.dynamic_shared)

    def on_device(self, A: np.ndarray, B: np.ndarray, extra_shared: int = 0) -> DeviceProblem:
        gpu.cuda()
        M, N, K = self.check(A, B, device.current(), device.free_memory(), extra_shared)
        from pycuda import gpuarray

        return DeviceProblem(self, M, N, K, gpuarray.to_gpu(to_device_format(A, self.precision)),
                             gpuarray.to_gpu(to_device_format(B, self.precision)), gpuarray.empty((M, N), np.float32))


def wmma_kernel(precision: str = "FP16") -> TensorGemmKernel:
    _require(precision)
    return TensorGemmKernel(f"tc_wmma_{precision.lower()}", 8, SOURCE, "tc_wmma", (256, 1, 1), (128, 128),
                            "WMMA 16x16x16 fragments from shared-memory tiles", precision=precision)


def mma_kernel(config: TcConfig, precision: str = "FP16", name: str | None = None) -> TensorGemmKernel:
    _require(precision)
    return TensorGemmKernel(name or f"{config.function}_{precision.lower()}", 8, SOURCE, config.function,
                            (config.threads, 1, 1), (config.BM, config.BN), "mma.sync + ldmatrix", precision=precision,
                            dynamic_shared=config.shared_bytes)
