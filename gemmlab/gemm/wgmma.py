"""Chapter 9's GEMMs: the copy engine (TMA) and ``wgmma`` in ``kernels/09_hopper.cu``.

:class:`HopperGemm` names each kernel of the file (:data:`GEMM_V0`, :data:`GEMM_WS` and the steps after it, to
:data:`GEMM_SPLIT`, and beside them :data:`GEMM_STREAMK` and :data:`GEMM_PINGPONG`); :func:`hopper_kernel` makes a
course kernel of one (``C = kernel(A, B)``), launched with tensor maps that the driver encodes
(:mod:`gemmlab.runtime.tensor_maps`), and :func:`gemm` runs it once.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass, replace
from typing import Any, SupportsInt

import numpy as np

from ..models import hopper
from ..runtime import compiler, device, gpu, tensor_maps
from ..runtime.tensor_maps import launch_with_maps, map_addresses
from . import checks, tensor_cores
from .base import DeviceProblem

SOURCE = tensor_maps.SOURCE
"""The kernel file of chapter 9's GEMMs (:data:`gemmlab.runtime.tensor_maps.SOURCE`)."""


@dataclass(frozen=True)
class HopperGemm:
    """One GEMM kernel of ``09_hopper.cu``: its entry point, the tile of C a block computes, the K-tile its tensor
    maps copy, the threads of a block and its dynamic shared memory (as the kernel file defines them)."""

    function: str
    BM: int
    BN: int
    BK: int
    threads: int
    shared: int
    persistent: bool = False
    cluster: int = 1
    c_map: bool = False
    """True for a kernel that stores C through the copy engine, which then takes C's tensor map too, with C's rows
    padded to a multiple of 16 bytes (:func:`c_columns`)."""
    streamk: bool = False
    """True for the kernel whose last round is shared out (:mod:`gemmlab.models.streamk`), which then takes a flag per
    consumer warpgroup of its grid and the launch's epoch too (``_streamk_arguments``)."""
    c_box_rows: int = 64
    """The rows of the box of C's tensor map, what one copy-engine store writes (:data:`C_BOX` gives the course's
    kernels' box; an epilogue that stores per warp takes 16)."""


GEMM_V0 = HopperGemm("wgmma_gemm_v0", 64, 128, 64, 128, 1024 + (64 + 128) * 64 * 2)
"""One warpgroup, one K-tile at a time (``WGMMA_GEMM_V0_SHARED``)."""
GEMM_WS = HopperGemm("wgmma_gemm_ws", 128, 256, 64, 384, 1024 + 4 * (128 + 256) * 64 * 2)
"""A producer and two consumer warpgroups around a ring of 4 stages (``WGMMA_GEMM_WS_SHARED``)."""
GEMM_OVERLAP = replace(GEMM_WS, function="wgmma_gemm_overlap")
"""The same, each consumer handing a stage back once the tile after it is queued (``wait_group 1``)."""
GEMM_PERSISTENT = replace(GEMM_WS, function="wgmma_gemm_persistent", persistent=True)
"""The same, one block per SM walking over the tiles of C in groups of rows (``WS_GROUP``)."""
GEMM_PAIRS = replace(GEMM_PERSISTENT, function="wgmma_gemm_pairs")
"""The same, its epilogue storing two neighbouring floats per instruction."""
GEMM_QUADS = replace(GEMM_PAIRS, function="wgmma_gemm_quads")
"""The paired-stores kernel with 16-byte stores (neighbouring lanes swap halves first); a candidate step."""
GEMM_CLUSTER = replace(GEMM_PAIRS, function="wgmma_gemm_cluster", cluster=2)
"""The same in clusters of two blocks, each block's copy engine fetching half of a shared B tile into both."""
C_BOX = (64, 32)
"""The box of C's tensor map as (rows, FP32 columns), what one copy-engine store writes (``C_BOX_BYTES``)."""
_STORE_BUFFERS = 2 * 2 * C_BOX[0] * C_BOX[1] * 4      # two boxes for each of the two consumer warpgroups
GEMM_TMA_STORE = replace(GEMM_CLUSTER, function="wgmma_gemm_tmastore", c_map=True, shared=GEMM_WS.shared + _STORE_BUFFERS)
"""The same with the epilogue through the copy engine, using two buffers of one box per consumer warpgroup
(``WGMMA_GEMM_TMA_STORE_SHARED``)."""
GEMM_STORER = replace(GEMM_TMA_STORE, function="wgmma_gemm_storer")
"""The same with the copy engine's stores issued by two idle warps of the producer warpgroup, to which the consumers
hand each box over (``STORER``)."""
GEMM_SPLIT = replace(GEMM_STORER, function="wgmma_gemm_split")
"""The same with half of each tile's epilogue handed over under the next tile's first two K-tiles (``SPLIT``): the
ladder's last step."""
GEMM_STREAMK = replace(GEMM_TMA_STORE, function="wgmma_gemm_streamk", streamk=True)
"""``GEMM_TMA_STORE`` with its last round of tiles shared out evenly along K between the units (stream-K), the parts of a
cut tile added up in C by the copy engine (``STREAMK`` in ``ws_gemm``)."""
GEMM_PINGPONG = replace(GEMM_PERSISTENT, function="wgmma_gemm_pingpong", BN=128, c_map=True,
                        shared=1024 + 6 * (128 + 128) * 64 * 2 + _STORE_BUFFERS)
"""Ping-pong consumers. Each consumer warpgroup owns whole 128 x 128 tiles and the two take turns at the tensor
cores, one storing (through the copy engine) while the other computes; a ring of 6 stages, no cluster
(``PINGPONG_SHARED``)."""
GEMMS = (GEMM_V0, GEMM_WS, GEMM_OVERLAP, GEMM_PERSISTENT, GEMM_PAIRS, GEMM_CLUSTER, GEMM_TMA_STORE, GEMM_STORER,
         GEMM_SPLIT, GEMM_QUADS, GEMM_STREAMK, GEMM_PINGPONG)
"""Every GEMM of ``09_hopper.cu``: chapter 9's ladder (:data:`gemmlab.gemm.registry.HOPPER_STEPS`), the kernels beside it
(:data:`gemmlab.gemm.registry.HOPPER_ALTERNATIVES`) and the candidates."""


@dataclass(frozen=True)
class Sm90aOnly(tensor_cores.TensorGemmKernel):
    """A tensor-core course kernel compiled for sm_90a alone (chapter 9's GEMMs, chapter 8's Hopper step): on any
    other GPU, or under ``GEMMLAB_ARCH``, it says why it cannot run in one sentence, and refuses to launch with
    :class:`gemmlab.runtime.gpu.GPUUnavailable`; wrong shapes are named before a GPU is needed. ``SM90A_USES`` names the
    instructions it needs, for that sentence."""

    SM90A_USES = ""

    def unavailable_on(self, spec: device.DeviceSpec) -> str | None:
        """Why this kernel cannot run on ``spec`` (or be compiled in this run), in one sentence, or None."""
        if tuple(spec.compute_capability) != (9, 0):
            return (f"{self.name} uses sm_90a instructions{self.SM90A_USES}, which only a Hopper GPU (compute capability "
                    f"9.0) runs; the {spec.name} is {spec.compute_capability[0]}.{spec.compute_capability[1]}.")
        wanted = os.environ.get(compiler.ARCH_VARIABLE, "").strip()      # as compiler.target() reads it, without a GPU
        if wanted and wanted != "sm_90":
            return f"{self.name} uses sm_90a instructions and cannot be compiled under {compiler.ARCH_VARIABLE}={wanted}."
        return super().unavailable_on(spec)                            # the format and the shared memory

    def on_device(self, A: np.ndarray, B: np.ndarray, extra_shared: int = 0) -> DeviceProblem:
        checks.check_gemm_shapes(A, B)             # the inputs' mistakes are named before any GPU is needed
        return super().on_device(A, B, extra_shared)

    def check(self, A: np.ndarray, B: np.ndarray, spec: device.DeviceSpec, free_bytes: int, extra_shared: int = 0) -> tuple[int, int, int]:
        if extra_shared:
            raise ValueError(f"{self.name}: extra shared memory is for chapter 5's kernels")
        why = self.unavailable_on(spec)
        if why:
            raise gpu.GPUUnavailable(why)
        return checks.check_gemm(self.name, A, B, self.block, self.grid, spec, free_bytes)


@dataclass(frozen=True)
class HopperGemmKernel(Sm90aOnly):
    """A GEMM of ``09_hopper.cu`` as a course kernel (``C = kernel(A, B)``, :func:`gemmlab.measure.bench.time_gemm`): chapter
    8's kernel for its format, entry point, reference and shared memory (``dynamic_shared`` is the configuration's,
    as :func:`hopper_kernel` sets it), launched with tensor maps encoded once per set of device buffers."""

    hopper_config: HopperGemm = GEMM_WS
    precision: str = "BF16"

    def grid(self, M: int, N: int) -> tuple[int, int, int]:
        c = self.hopper_config
        if not c.persistent:
            return super().grid(M, N)
        work = -(-M // (c.BM * c.cluster)) * -(-N // c.BN)          # tiles of C, or pairs of them in clusters of two
        room = device.current().sms if c.cluster == 1 else tensor_maps._active_clusters(self, c.cluster, c.threads, c.shared)
        return (c.cluster * max(1, min(room, work)), 1, 1)

    def operand_boxes(self) -> tuple[int, int]:
        """The rows of the boxes of A's and B's tensor maps, what one copy-engine load brings: the tile's rows of A
        and the block's share of the tile's columns of B (a draft that loads a stage in smaller boxes overrides it)."""
        c = self.hopper_config
        return c.BM, c.BN // c.cluster

    def launch(self, a_ptr: SupportsInt, b_ptr: SupportsInt, c_ptr: SupportsInt, M: int, N: int, K: int,
               extra_shared: int = 0) -> None:
        """Enqueue the kernel on device buffers laid out as :meth:`on_device` makes them (with a copy-engine
        epilogue, C's rows :func:`c_columns` long)."""
        c = self.hopper_config
        a_rows, b_rows = self.operand_boxes()

        def maps() -> list[tuple[hopper.TensorMap, SupportsInt]]:
            stride = tensor_cores.padded_length(K, self.precision) * 2
            out = [(hopper.matrix_map(rows, K, self.precision, box, c.BK, "128B", stride), p)
                   for rows, box, p in ((M, a_rows, a_ptr), (N, b_rows, b_ptr))]
            if c.c_map:
                out.append((hopper.matrix_map(M, N, "FP32", c.c_box_rows, C_BOX[1], "128B", c_columns(c, N) * 4), c_ptr))
            return out

        key = (c, a_rows, b_rows, self.precision, int(a_ptr), int(b_ptr), int(c_ptr) if c.c_map else 0, M, N, K)
        grid = self.grid(M, N)
        extra = _streamk_arguments(grid[0]) if c.streamk else []
        launch_with_maps(self, grid, c.shared, c.threads, map_addresses(key, maps), c_ptr, M, N, K, extra)

    def on_device(self, A: np.ndarray, B: np.ndarray, extra_shared: int = 0) -> DeviceProblem:
        checks.check_gemm_shapes(A, B)             # the inputs' mistakes are named before any GPU is needed
        gpu.cuda()
        M, N, K = self.check(A, B, device.current(), device.free_memory(), extra_shared)
        from pycuda import gpuarray

        a, bt = tensor_cores.device_operands(A, B, self.precision, transpose_b=True)
        c = gpuarray.empty((M, c_columns(self.hopper_config, N)), np.float32)
        return DeviceProblem(self, M, N, K, gpuarray.to_gpu(a), gpuarray.to_gpu(bt), c)


def c_columns(config: HopperGemm, N: int) -> int:
    """The length of C's rows on the device: N, or with a copy-engine epilogue N padded to a multiple of 16 bytes
    (a tensor map's rule for strides; :meth:`gemmlab.gemm.base.DeviceProblem.result` returns the first N columns)."""
    per = tensor_cores.PAD_BYTES // 4                                # FP32 elements per 16 bytes
    return -(-N // per) * per if config.c_map else N


def _streamk_arguments(blocks: int) -> list[ctypes.c_uint64 | ctypes.c_uint]:
    """The stream-K kernel's last two arguments: its flags (two per block, zero when made, one set for every launch
    of the process) and a new epoch. A flag holds the epoch of the launch that raised it, so nothing is cleared
    between launches and a flag from an earlier one never looks raised; launches on one stream never overlap."""
    if not _STREAMK_FLAGS:
        from pycuda import gpuarray
        _STREAMK_FLAGS.append(gpuarray.zeros(2 * device.current().sms, np.uint32))   # no grid has more blocks than SMs
    flags = _STREAMK_FLAGS[0]
    if 2 * blocks > flags.size:
        raise ValueError(f"a stream-K grid of {blocks} blocks needs {2 * blocks} flags; there are {flags.size}")
    _EPOCH[0] = _EPOCH[0] % 0xFFFFFFFF + 1                              # never 0, the flags' first value
    return [ctypes.c_uint64(int(flags.gpudata)), ctypes.c_uint(_EPOCH[0])]


_STREAMK_FLAGS: list[Any] = []          # one pycuda.gpuarray.GPUArray, made at the first stream-K launch
_EPOCH = [0]


PRECISIONS = ("BF16", "FP16")
"""The input formats of ``09_hopper.cu``'s GEMMs (FP32 sums): each has an entry point per format."""


def hopper_kernel(config: HopperGemm = GEMM_WS, name: str | None = None, precision: str = "BF16") -> HopperGemmKernel:
    """The course kernel of one of ``09_hopper.cu``'s GEMMs for ``precision`` inputs (BF16 or FP16)."""
    if precision not in PRECISIONS:
        raise ValueError(f"{config.function} takes {' or '.join(PRECISIONS)} inputs, got {precision!r}")
    return HopperGemmKernel(name or f"{config.function}_{tensor_cores.PRECISIONS[precision]}", 9, SOURCE, config.function,
                            (config.threads, 1, 1), (config.BM, config.BN), f"{config.function}: copy engine and wgmma",
                            precision=precision, dynamic_shared=config.shared, hopper_config=config)


def gemm(A: np.ndarray, B: np.ndarray, kernel: HopperGemm = GEMM_WS, precision: str = "BF16") -> np.ndarray:
    """C = A·B (FP32) by one of chapter 9's kernels. A and B are rounded to ``precision`` (BF16 or FP16) and their
    rows padded to 16 bytes; the kernels take B transposed, both through tensor maps whose boxes are the kernel's
    tiles, and the copy engine's zeros past the edges handle every size."""
    return hopper_kernel(kernel, precision=precision)(A, B)
