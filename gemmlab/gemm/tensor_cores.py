"""Tensor-core GEMM kernels (chapter 8): ``C = kernel(A, B)`` with A and B rounded to FP16, BF16 or TF32,
products summed in FP32, C in FP32.

The kernels of ``kernels/08_tensor_core.cu`` take operands whose rows are padded with zeros to a multiple of
16 bytes (8 16-bit elements, 4 TF32 ones): :func:`to_device_format` makes them from the caller's FP32 arrays,
so a 16-byte chunk is never split by the edge of a row and any M, N, K works. For TF32 the kernels take B's
transpose (K along its rows, as A has it): ``ldmatrix`` transposes 16-bit elements only. :class:`TensorGemmKernel` is a
:class:`~gemmlab.gemm.base.GemmKernel` with a precision: the same checks, the same :class:`~gemmlab.gemm.base.DeviceProblem`
for timing loops, its dynamic shared memory requested at launch.

Checking: FP16 x FP16, BF16 x BF16 and TF32 x TF32 products are exact in FP32 (11 + 11, 8 + 8 and 11 + 11
significant bits fit in 24), so against the *rounded* inputs a kernel errs only in its FP32 sums: :func:`rounded` gives the inputs as
the kernel sees them, and chapter 1's bound (:mod:`gemmlab.models.verify`) applies to them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import SupportsInt

import numpy as np

from ..models import shapes, tail, verify
from ..models.mma import bf16_to_f32, to_bf16_bits, to_tf32
from ..runtime import compiler, device, gpu
from . import checks
from .base import DeviceProblem, GemmKernel
from .tc_configs import ELEMENT_BYTES, SIXTEEN_BIT, SOURCE, SUFFIXES, TcConfig

PRECISIONS = SUFFIXES
"""The input formats of the tensor-core kernels and the suffix of their entry points."""
PAD_BYTES = 16
"""Rows of A and B are padded to a multiple of this many bytes (8 16-bit elements, 4 TF32 ones)."""
MIN_CAPABILITY = {"FP16": (7, 5), "BF16": (8, 0), "TF32": (8, 0)}
"""The oldest GPU with a tensor-core instruction for each input format. FP16 came with Turing (a T4), BF16
and TF32 with Ampere."""


def _require(precision: str) -> None:
    if precision not in PRECISIONS:
        raise ValueError(f"the tensor-core kernels take {', '.join(PRECISIONS)} inputs, got {precision!r}")


def to_words(X: np.ndarray, precision: str) -> np.ndarray:
    """``X`` (float32) rounded to ``precision``, as the kernels store it: uint16 bit patterns for FP16 and
    BF16, float32 with the low 13 bits zero for TF32; same shape."""
    _require(precision)
    X = np.ascontiguousarray(X, np.float32)
    if precision == "TF32":
        return to_tf32(X)
    return X.astype(np.float16).view(np.uint16) if precision == "FP16" else to_bf16_bits(X)


def rounded(X: np.ndarray, precision: str) -> np.ndarray:
    """``X`` as the kernel sees it: rounded to ``precision``, back in float32 (exactly representable there)."""
    words = to_words(X, precision)
    if precision == "TF32":
        return words
    return words.view(np.float16).astype(np.float32) if precision == "FP16" else bf16_to_f32(words)


def padded_length(n: int, precision: str) -> int:
    """A row of ``n`` elements of ``precision``, padded to a multiple of :data:`PAD_BYTES`."""
    per = PAD_BYTES // ELEMENT_BYTES[precision]
    return -(-n // per) * per


def to_device_format(X: np.ndarray, precision: str) -> np.ndarray:
    """``X`` rounded to ``precision`` with each row padded with zeros to a multiple of :data:`PAD_BYTES`."""
    words = to_words(X, precision)
    rows, cols = words.shape
    padded = np.zeros((rows, padded_length(cols, precision)), words.dtype)
    padded[:, :cols] = words
    return padded


def device_operands(A: np.ndarray, B: np.ndarray, precision: str,
                    transpose_b: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A and B as the kernels for ``precision`` take them: rounded and padded, B transposed where
    ``transpose_b`` says (by default as chapter 8's kernels want it: for TF32 only)."""
    if transpose_b is None:
        transpose_b = precision == "TF32"
    return to_device_format(A, precision), to_device_format(np.asarray(B, np.float32).T if transpose_b else B, precision)


def reference(A: np.ndarray, B: np.ndarray, precision: str) -> verify.Reference:
    """What a product in ``precision`` is checked against: A·B of the inputs rounded to it (FP32: as they are).
    The products of rounded inputs are exact in FP32, so chapter 1's bound for FP32 sums applies."""
    if precision == "FP32":
        return verify.Reference(A, B)
    return verify.Reference(rounded(A, precision), rounded(B, precision))


MANTISSA_BITS = {"FP32": 23, "TF32": 10, "FP16": 10, "BF16": 7}
"""Stored mantissa bits of each format (one more, implicit, is significant)."""


def unit_roundoff(precision: str) -> float:
    """Half a unit in the last place relative to 1: how far rounding to nearest moves a value, relatively."""
    return 2.0 ** -(MANTISSA_BITS[precision] + 1)


def error_bound(precision: str, K: int) -> float:
    """How far C = A·B computed from FP32 inputs rounded to ``precision``, with exact products summed in FP32,
    can lie from the exact product, in units of ``|A|·|B|`` (element by element): rounding each input moves a
    product by at most ``2u + u²`` of ``|a|·|b|`` (``u`` = :func:`unit_roundoff`; 0 for FP32 inputs, which are not
    rounded), and the FP32 sum of K terms adds chapter 1's ``gamma(K+2)`` of the rounded terms, at most
    ``(1 + u)²`` times ``|a|·|b|``. A worst case over every order of summation; typical errors are far smaller."""
    u = 0.0 if precision == "FP32" else unit_roundoff(precision)
    n = K + 2
    gamma = n * verify.UNIT_ROUNDOFF / (1 - n * verify.UNIT_ROUNDOFF)
    return 2 * u + u * u + gamma * (1 + u) ** 2


def supports(precision: str, compute_capability: tuple[int, int]) -> bool:
    """Whether code for ``compute_capability`` has a tensor-core instruction for ``precision`` inputs
    (:data:`MIN_CAPABILITY`)."""
    _require(precision)
    return tuple(compute_capability) >= MIN_CAPABILITY[precision]


@dataclass(frozen=True)
class TensorGemmKernel(GemmKernel):
    """A tensor-core kernel for one input precision; ``function`` is the entry point without its suffix."""

    precision: str = "FP16"
    dynamic_shared: int = 0
    shared_before_sm80: int | None = None
    """The dynamic shared memory where the kernel is compiled for an architecture older than sm_80 (a shorter ring
    of tiles there); None: ``dynamic_shared`` everywhere."""
    config: TcConfig | None = None
    """The configuration of ``tc_gemm`` behind an ``mma.sync`` kernel (None for WMMA)."""
    tail_whole: int | None = None
    """For a ``TAIL`` configuration: tiles to run whole whatever :func:`gemmlab.models.tail.split` would choose, the rest
    shared (the tests force odd splits so); None: the launcher's rule."""

    @property
    def entry_point(self) -> str:
        return f"{self.function}_{PRECISIONS[self.precision]}"

    def resources(self) -> compiler.Resources:
        return self.compiled().resources(self.entry_point)

    @property
    def input_precision(self) -> str:
        return self.precision

    def shared_for(self, capability: tuple[int, int]) -> int:
        """The dynamic shared memory a block asks for where the kernel is compiled for ``capability``."""
        if self.shared_before_sm80 is not None and tuple(capability) < (8, 0):
            return self.shared_before_sm80
        return self.dynamic_shared

    def reference(self, A: np.ndarray, B: np.ndarray) -> verify.Reference:
        """A·B of the inputs rounded to this kernel's format (:func:`reference`)."""
        return reference(A, B, self.precision)

    def unavailable_on(self, spec: device.DeviceSpec) -> str | None:
        """Why this kernel cannot run on ``spec``, in one sentence, or None where it can."""
        if not supports(self.precision, spec.compute_capability):
            return (f"{self.name}: the {spec.name} has no {self.precision} tensor-core instruction "
                    f"(compute capability {MIN_CAPABILITY[self.precision][0]}.{MIN_CAPABILITY[self.precision][1]} or newer).")
        shared = self.shared_for(spec.compute_capability)
        if shared > spec.shared_per_block_optin:
            return (f"{self.name}: needs {shared:,} bytes of shared memory per block; the {spec.name} "
                    f"allows {spec.shared_per_block_optin:,}.")
        return None

    def check(self, A: np.ndarray, B: np.ndarray, spec: device.DeviceSpec, free_bytes: int, extra_shared: int = 0) -> tuple[int, int, int]:
        """M, N, K of a product this kernel can compute on ``spec``; a clear error otherwise: RuntimeError where
        the GPU lacks the instruction, ValueError for anything else (:meth:`unavailable_on` says why)."""
        why = self.unavailable_on(spec)
        if why and not supports(self.precision, spec.compute_capability):
            raise RuntimeError(why)
        if extra_shared:
            raise ValueError(f"{self.name}: extra shared memory is for chapter 5's kernels, not the tensor-core ones")
        if why:
            raise ValueError(why)
        return checks.check_gemm(self.name, A, B, self.block, self.grid, spec, free_bytes)

    def launch(self, a_ptr: SupportsInt, b_ptr: SupportsInt, c_ptr: SupportsInt, M: int, N: int, K: int,
               extra_shared: int = 0) -> None:
        compiled = self.compiled()
        if not supports(self.precision, compiler.capability(compiled.arch)):
            raise RuntimeError(f"{self.name}: compiled for {compiled.arch}, which has no {self.precision} tensor-core "
                               "instruction (GEMMLAB_ARCH names an older architecture than BF16 and TF32 need, 8.0)")
        shared = self.shared_for(compiler.capability(compiled.arch))
        if self.config is not None and self.config.TAIL:
            self._launch_tail(compiled, shared, a_ptr, b_ptr, c_ptr, M, N, K)
            return
        fn = compiled.prepared(self.entry_point, "PPPiii", shared)
        fn.prepared_call(self.grid(M, N), self.block, int(a_ptr), int(b_ptr), int(c_ptr), M, N, K, shared_size=shared)

    def tail_split(self, M: int, N: int, K: int, sms: int) -> tail.Split:
        """How a ``TAIL`` kernel divides the tiles of an M x N x K product on ``sms`` SMs (:func:`gemmlab.models.tail.split`)."""
        c = self.config
        if c is None or not c.TAIL:
            raise ValueError(f"{self.name} shares no last wave: only a TAIL configuration has a split")
        k_tiles = -(-padded_length(K, self.precision) // c.BK)
        return tail.split(shapes.tiles(M, N, self.tile), k_tiles, sms, self.tail_whole)

    def _launch_tail(self, compiled: compiler.CompiledFile, shared: int, a_ptr: SupportsInt, b_ptr: SupportsInt,
                     c_ptr: SupportsInt, M: int, N: int, K: int) -> None:
        """The whole tiles and the shared ones in one grid (1-D), after C's shared tiles are set to zero."""
        s = self.tail_split(M, N, K, device.current().sms)
        if s.units:
            zero = compiled.prepared("tc_tail_zero", "Piiiii", 0)
            zero.prepared_call((s.shared_tiles, 1, 1), (256, 1, 1), int(c_ptr), M, N, *self.tile, s.whole)
        fn = compiled.prepared(self.entry_point, "PPPiiiii", shared)
        fn.prepared_call((s.blocks, 1, 1), self.block, int(a_ptr), int(b_ptr), int(c_ptr), M, N, K, s.whole, s.units,
                         shared_size=shared)

    def on_device(self, A: np.ndarray, B: np.ndarray, extra_shared: int = 0) -> DeviceProblem:
        gpu.cuda()
        M, N, K = self.check(A, B, device.current(), device.free_memory(), extra_shared)
        from pycuda import gpuarray

        a, b = device_operands(A, B, self.precision)
        return DeviceProblem(self, M, N, K, gpuarray.to_gpu(a), gpuarray.to_gpu(b), gpuarray.empty((M, N), np.float32))


def unavailable_reason(kernel: GemmKernel, spec: device.DeviceSpec) -> str | None:
    """Why ``kernel`` cannot run on ``spec``, in one sentence, or None where it can
    (:meth:`TensorGemmKernel.unavailable_on`, which chapter 9's kernels extend; None for an FP32 kernel)."""
    return kernel.unavailable_on(spec)


def wmma_kernel(precision: str = "FP16") -> TensorGemmKernel:
    """Chapter 8's first step, WMMA fragments; FP16 or BF16 inputs."""
    if precision not in SIXTEEN_BIT:
        raise ValueError(f"the WMMA kernel takes {' or '.join(SIXTEEN_BIT)} inputs, got {precision!r}")
    return TensorGemmKernel(f"tc_wmma_{PRECISIONS[precision]}", 8, SOURCE, "tc_wmma", (256, 1, 1), (128, 128),
                            "WMMA 16x16x16 fragments from shared-memory tiles", precision=precision)


def mma_kernel(config: TcConfig, precision: str = "FP16", name: str | None = None) -> TensorGemmKernel:
    """The ``mma.sync`` kernel of one configuration for ``precision`` inputs (one of ``config.precisions``)."""
    _require(precision)
    if precision not in config.precisions:
        raise ValueError(f"{config.function} is compiled for {', '.join(config.precisions)} inputs, not {precision}")
    return TensorGemmKernel(name or f"{config.function}_{PRECISIONS[precision]}", 8, SOURCE, config.function,
                            (config.threads, 1, 1), (config.BM, config.BN), "mma.sync + ldmatrix", precision=precision,
                            dynamic_shared=config.shared_bytes(precision),
                            shared_before_sm80=config.shared_bytes(precision, (7, 5)), config=config)
