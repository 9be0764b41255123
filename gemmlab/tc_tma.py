"""Chapter 8's Hopper step: ``tc_inner``'s tile fed by the SM's copy engine (``tc_tma_ws`` in
``kernels/08_tensor_core.cu``, compiled for sm_90a in that file's second unit, :func:`gemmlab.compile_units.arch_unit`).

The operands are chapter 8's (:func:`gemmlab.tensor_gemm.device_operands`: rounded, rows padded with zeros to
16 bytes, B not transposed); the kernel takes them through two tensor maps (:mod:`gemmlab.tma`), whose boxes are
its tiles: A in boxes of 128 rows x BK columns, in the swizzle as wide as a box's rows (BK = 64: 128 bytes), B in
boxes of BK rows x 64 columns in the 128-byte swizzle, four per tile. What lies outside a matrix arrives as zeros,
so every size takes the one path. On any GPU but a Hopper the kernel says why it cannot run, in one sentence
(:meth:`TmaWsKernel.unavailable_on`), and the bench leaves it out.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass

from . import checks, compile_units, compiler, device, gpu, hopper, tc_configs, tensor_gemm, tma
from .gemm import DeviceProblem
from .tc_configs import TMA_WS, TmaWsConfig

_MAPS: dict[tuple, list] = {}
"""Encoded tensor maps (with the buffers that keep their aligned copies alive) by configuration, format, device
buffers and size: encoded once, then reused by every launch on the same operands."""


def unit():
    """The compile unit of the Hopper step: ``08_tensor_core.cu`` with ``TC_TMA_WS`` defined, for sm_90a."""
    return compile_units.arch_unit(tc_configs.SOURCE, TMA_WS.ARCH)


def tensor_maps(config: TmaWsConfig, precision: str, M: int, N: int, K: int) -> tuple[hopper.TensorMap, hopper.TensorMap]:
    """The tensor maps of A (M x K) and B (K x N) as the kernel reads them (addresses left 0): boxes of its tiles,
    rows as padded on the device (:func:`gemmlab.tensor_gemm.padded_length`)."""
    lda, ldb = (tensor_gemm.padded_length(n, precision) for n in (K, N))
    a_row = config.BK * tensor_gemm.ELEMENT_BYTES[precision]
    a = hopper.matrix_map(M, lda, precision, config.BM, config.BK, f"{a_row}B")
    b = hopper.matrix_map(K, ldb, precision, config.BK, 64, "128B")
    return a, b


@dataclass(frozen=True)
class TmaWsKernel(tensor_gemm.TensorGemmKernel):
    """``tc_tma_ws`` as a course kernel: chapter 8's operands, checks and reference, launched through the driver with
    A's and B's tensor maps as ``__grid_constant__`` parameters."""

    tma_config: TmaWsConfig = TMA_WS

    def unavailable_on(self, spec: device.DeviceSpec) -> str | None:
        """Why this kernel cannot run on ``spec`` (or be compiled in this run), in one sentence, or None."""
        if tuple(spec.compute_capability) != (9, 0):
            return (f"{self.name} uses sm_90a instructions (the copy engine's tensor copies, setmaxnreg), which only "
                    f"a Hopper GPU (compute capability 9.0) runs; the {spec.name} is "
                    f"{spec.compute_capability[0]}.{spec.compute_capability[1]}.")
        wanted = os.environ.get(compiler.ARCH_VARIABLE, "").strip()      # as compiler.target() reads it, without a GPU
        if wanted and wanted != "sm_90":
            return f"{self.name} uses sm_90a instructions and cannot be compiled under {compiler.ARCH_VARIABLE}={wanted}."
        return super().unavailable_on(spec)                            # the format and the shared memory

    def check(self, A, B, spec: device.DeviceSpec, free_bytes: int, extra_shared: int = 0) -> tuple[int, int, int]:
        if extra_shared:
            raise ValueError(f"{self.name}: extra shared memory is for chapter 5's kernels, not the tensor-core ones")
        why = self.unavailable_on(spec)
        if why:
            raise gpu.GPUUnavailable(why)
        return checks.check_gemm(self.name, A, B, self.block, self.grid, spec, free_bytes)

    def launch(self, a_ptr, b_ptr, c_ptr, M: int, N: int, K: int, extra_shared: int = 0) -> None:
        """Enqueue the kernel on device buffers laid out as :meth:`on_device` makes them."""
        c = self.tma_config
        key = (c, self.precision, int(a_ptr), int(b_ptr), M, N, K)
        if key not in _MAPS:
            maps = tensor_maps(c, self.precision, M, N, K)
            _MAPS[key] = [tma._aligned_copy(tma.encode(m, int(p))) for m, p in zip(maps, (a_ptr, b_ptr))]
        fn = self.compiled().driver_function(self.entry_point, c.shared_bytes)
        args = [ctypes.c_uint64(int(c_ptr)), ctypes.c_int(M), ctypes.c_int(N), ctypes.c_int(K)]
        tma._launch(fn, self.grid(M, N), c.shared_bytes, [*(address for _, address in _MAPS[key]),
                                                          *(ctypes.addressof(x) for x in args)], c.THREADS, sync=False)

    def on_device(self, A, B, extra_shared: int = 0) -> DeviceProblem:
        checks.check_gemm_shapes(A, B)             # the inputs' mistakes are named before any GPU is needed
        return super().on_device(A, B, extra_shared)


def tma_kernel(precision: str = "FP16", config: TmaWsConfig = TMA_WS, name: str | None = None) -> TmaWsKernel:
    """Chapter 8's Hopper step for FP16 or BF16 inputs."""
    if precision not in config.precisions:
        raise ValueError(f"{config.function} takes {' or '.join(config.precisions)} inputs, got {precision!r}")
    return TmaWsKernel(name or f"{config.function}_{tensor_gemm.PRECISIONS[precision]}", 8, unit(), config.function,
                       (config.THREADS, 1, 1), (config.BM, config.BN), "mma.sync fed by the copy engine",
                       precision=precision, dynamic_shared=config.shared_bytes, tma_config=config)
