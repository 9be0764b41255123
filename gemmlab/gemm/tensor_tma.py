"""Chapter 8's Hopper step: ``tc_inner``'s tile fed by the SM's copy engine (``tc_tma_ws`` in
``kernels/08_tensor_core.cu``, compiled for sm_90a in that file's second unit, :func:`gemmlab.gemm.units.arch_unit`).

The operands are chapter 8's (:func:`gemmlab.gemm.tensor_cores.device_operands`: rounded, rows padded with zeros to
16 bytes, B not transposed); the kernel takes them through two tensor maps (:mod:`gemmlab.runtime.tensor_maps`), whose boxes are
its tiles: A in boxes of 128 rows x BK columns, in the swizzle as wide as a box's rows (BK = 64: 128 bytes), B in
boxes of BK rows x 64 columns in the 128-byte swizzle, four per tile. What lies outside a matrix arrives as zeros,
so every size takes the one path. On any GPU but a Hopper the kernel says why it cannot run, in one sentence
(:class:`gemmlab.gemm.wgmma.Sm90aOnly`), and the bench leaves it out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import SupportsInt

from ..models import hopper
from ..runtime import compiler
from ..runtime.tensor_maps import launch_with_maps, map_addresses
from . import tc_configs, tensor_cores, units, wgmma
from .tc_configs import TMA_WS, TmaWsConfig


def unit() -> compiler.CompileUnit:
    """The compile unit of the Hopper step: ``08_tensor_core.cu`` with ``TC_TMA_WS`` defined, for sm_90a."""
    return units.arch_unit(tc_configs.SOURCE, TMA_WS.ARCH)


def tensor_maps(config: TmaWsConfig, precision: str, M: int, N: int, K: int) -> tuple[hopper.TensorMap, hopper.TensorMap]:
    """The tensor maps of A (M x K) and B (K x N) as the kernel reads them (addresses left 0): boxes of its tiles,
    rows as padded on the device (:func:`gemmlab.gemm.tensor_cores.padded_length`)."""
    lda, ldb = (tensor_cores.padded_length(n, precision) for n in (K, N))
    a_row = config.BK * tensor_cores.ELEMENT_BYTES[precision]
    a = hopper.matrix_map(M, lda, precision, config.BM, config.BK, f"{a_row}B")
    b = hopper.matrix_map(K, ldb, precision, config.BK, 64, "128B")
    return a, b


@dataclass(frozen=True)
class TmaWsKernel(wgmma.Sm90aOnly):
    """``tc_tma_ws`` as a course kernel: chapter 8's operands, checks and reference, launched through the driver with
    A's and B's tensor maps as ``__grid_constant__`` parameters; elsewhere than on Hopper it says why it cannot run
    (:class:`gemmlab.gemm.wgmma.Sm90aOnly`)."""

    SM90A_USES = " (the copy engine's tensor copies, setmaxnreg)"
    tma_config: TmaWsConfig = TMA_WS

    def launch(self, a_ptr: SupportsInt, b_ptr: SupportsInt, c_ptr: SupportsInt, M: int, N: int, K: int,
               extra_shared: int = 0) -> None:
        """Enqueue the kernel on device buffers laid out as ``on_device`` makes them."""
        c = self.tma_config
        maps = map_addresses((c, self.precision, int(a_ptr), int(b_ptr), M, N, K),
                             lambda: zip(tensor_maps(c, self.precision, M, N, K), (a_ptr, b_ptr)))
        launch_with_maps(self, self.grid(M, N), c.shared_bytes, c.THREADS, maps, c_ptr, M, N, K)


def tma_kernel(precision: str = "FP16", config: TmaWsConfig = TMA_WS, name: str | None = None) -> TmaWsKernel:
    """Chapter 8's Hopper step for FP16 or BF16 inputs."""
    if precision not in config.precisions:
        raise ValueError(f"{config.function} takes {' or '.join(config.precisions)} inputs, got {precision!r}")
    return TmaWsKernel(name or f"{config.function}_{tensor_cores.PRECISIONS[precision]}", 8, unit(), config.function,
                       (config.THREADS, 1, 1), (config.BM, config.BN), "mma.sync fed by the copy engine",
                       precision=precision, dynamic_shared=config.shared_bytes, tma_config=config)
