"""Tensor maps for Hopper's copy engine (groundwork for chapter 9): a :class:`gemmlab.hopper.TensorMap`
encoded by the CUDA driver.

``cuTensorMapEncodeTiled`` turns the parameters into the 128-byte descriptor that a kernel takes as a
``const __grid_constant__ CUtensorMap`` parameter and hands to ``cp.async.bulk.tensor``. PyCUDA has no
binding for it, so this module calls ``libcuda`` through ``ctypes`` (:func:`gemmlab.gpu.driver_call`). The
parameters are checked first (:meth:`gemmlab.hopper.TensorMap.problems`): a broken rule is named in a sentence
before the driver could answer with a bare error code. :func:`driver_accepts` asks the driver alone, so that a
GPU test can hold the Python rules against the driver's own verdicts. :func:`tile_image` runs the first Hopper
kernel (``kernels/09_hopper.cu``): one copy into swizzled shared memory, completed on an ``mbarrier``, written back
so that it can be compared with :func:`gemmlab.hopper.box_image`; :func:`gemm` runs the GEMMs on the copy engine
and ``wgmma`` (:data:`GEMM_V0`, :data:`GEMM_WS` and the steps after it, to :data:`GEMM_SPLIT`, and beside them
:data:`GEMM_STREAMK` and :data:`GEMM_PINGPONG`).
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Sequence, SupportsInt

import numpy as np

from . import checks, compile_units, compiler, device, gpu, hopper, tensor_gemm
from .gemm import DeviceProblem

TENSOR_MAP_BYTES = 128
TENSOR_MAP_ALIGNMENT = 64
SWIZZLE_ENUM = {"none": 0, "32B": 1, "64B": 2, "128B": 3}
"""``CUtensorMapSwizzle`` values."""
L2_PROMOTION_256B = 3
"""``CU_TENSOR_MAP_L2_PROMOTION_L2_256B``: the copy engine fetches 256-byte lines into the L2."""
OOB_FILL_ZEROS = 0
"""``CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE``: elements outside the tensor arrive as zeros."""


def _encode(m: hopper.TensorMap, address: int) -> tuple[int, bytes]:
    """(driver status, the 128 bytes) of ``cuTensorMapEncodeTiled`` for ``m`` at global ``address``."""
    rank = len(m.global_dims)
    strides = m.element_strides or (1,) * rank
    raw = ctypes.create_string_buffer(TENSOR_MAP_BYTES + TENSOR_MAP_ALIGNMENT)
    start = -ctypes.addressof(raw) % TENSOR_MAP_ALIGNMENT            # the map must be 64-byte aligned
    out = ctypes.c_void_p(ctypes.addressof(raw) + start)
    lib = gpu.libcuda()
    status = lib.cuTensorMapEncodeTiled(
        out, ctypes.c_int(hopper.DATA_TYPES[m.dtype][0]), ctypes.c_uint32(rank), ctypes.c_void_p(address),
        (ctypes.c_uint64 * rank)(*m.global_dims), (ctypes.c_uint64 * max(rank - 1, 1))(*m.global_strides),
        (ctypes.c_uint32 * rank)(*m.box_dims), (ctypes.c_uint32 * rank)(*strides), ctypes.c_int(0),
        ctypes.c_int(SWIZZLE_ENUM[m.swizzle]), ctypes.c_int(L2_PROMOTION_256B), ctypes.c_int(OOB_FILL_ZEROS))
    return status, raw.raw[start:start + TENSOR_MAP_BYTES]


def _require_hopper() -> None:
    gpu.cuda()
    spec = device.current()
    if tuple(spec.compute_capability) < (9, 0):
        raise gpu.GPUUnavailable(f"tensor maps need compute capability 9.0 (Hopper); the {spec.name} is "
                                 f"{spec.compute_capability[0]}.{spec.compute_capability[1]}.")


def encode(m: hopper.TensorMap, address: int) -> bytes:
    """The 128-byte tensor map of ``m`` for a global tensor at device ``address``; a :class:`ValueError` naming
    every broken rule (before the driver is asked), :class:`gemmlab.gpu.GPUUnavailable` on a GPU older than Hopper."""
    problems = replace(m, address=address).problems()
    if problems:
        raise ValueError("the tensor map breaks the driver's rules: " + "; ".join(problems) + ".")
    _require_hopper()
    status, data = _encode(m, address)
    if status != 0:
        raise gpu.DriverError(f"cuTensorMapEncodeTiled refused a map that breaks none of the documented rules "
                              f"({gpu.driver_error_text(status)}): {m}")
    return data


def driver_accepts(m: hopper.TensorMap, address: int) -> bool:
    """Whether the driver encodes ``m`` at ``address``, asked without the Python checks."""
    _require_hopper()
    return _encode(m, address)[0] == 0


SOURCE = "09_hopper.cu"
THREADS = 128


def _aligned_copy(data: bytes) -> tuple[ctypes.Array, int]:
    """(the buffer that keeps it alive, the address of a 64-byte-aligned copy of ``data``)."""
    raw = ctypes.create_string_buffer(len(data) + TENSOR_MAP_ALIGNMENT)
    start = -ctypes.addressof(raw) % TENSOR_MAP_ALIGNMENT
    ctypes.memmove(ctypes.addressof(raw) + start, data, len(data))
    return raw, ctypes.addressof(raw) + start


def tile_image(matrix: np.ndarray, dtype: str, box_rows: int, box_cols: int, swizzle: str = "128B", x: int = 0,
               y: int = 0, expect_bytes: int | None = None) -> np.ndarray:
    """The bytes the copy engine writes into shared memory (``kernels/09_hopper.cu``, one block) for the box whose
    first element is column ``x``, row ``y`` of the row-major ``matrix`` (its values' bytes are copied as they are;
    ``dtype`` names the tensor map's format, which must have the same element size). Compare with
    :func:`gemmlab.hopper.box_image`.

    ``expect_bytes`` is what the ``mbarrier`` is told to expect, by default the box's size
    (:attr:`gemmlab.hopper.TensorMap.box_bytes`). Expect more and the barrier never completes: the kernel hangs,
    as chapter 3's barrier did; run that only in a child process under :func:`gemmlab.watchdog.run_isolated`."""
    M = np.ascontiguousarray(matrix)
    if M.ndim != 2 or M.itemsize != hopper.DATA_TYPES.get(dtype, (0, -1))[1]:
        raise ValueError(f"matrix must be 2-D with {dtype}-sized elements, got shape {M.shape}, {M.itemsize} bytes each")
    m = hopper.matrix_map(M.shape[0], M.shape[1], dtype, box_rows, box_cols, swizzle)
    expect = m.box_bytes if expect_bytes is None else int(expect_bytes)
    if expect < m.box_bytes or expect % 16:
        raise ValueError(f"expect_bytes must be a multiple of 16 of at least the box's {m.box_bytes:,} bytes, got {expect}")
    _require_hopper()
    from pycuda import gpuarray

    src = gpuarray.to_gpu(M)
    out = gpuarray.zeros(expect, np.uint8)
    keep, map_address = _aligned_copy(encode(m, int(src.gpudata)))
    compiled = compile_units.load(SOURCE)
    args = [ctypes.c_int(x), ctypes.c_int(y), ctypes.c_uint64(int(out.gpudata)), ctypes.c_int(expect)]
    _launch(compiled.driver_function("tma_tile_image", expect), (1, 1, 1), expect,
            [map_address, *(ctypes.addressof(a) for a in args)])
    del keep
    return out.get()[:m.box_bytes]


def _launch(fn: ctypes.c_void_p, grid: tuple[int, int, int], shared: int, params: Sequence[int | None],
            threads: int = THREADS, sync: bool = True) -> None:
    """``cuLaunchKernel`` of ``fn`` (from :meth:`gemmlab.compiler.CompiledFile.driver_function`, asked for ``shared``
    bytes) on the default stream with ``threads`` threads per block and ``shared`` bytes of dynamic shared memory;
    ``params`` holds the address of each argument's value (a tensor map's: its 64-byte-aligned copy).
    ``sync=False`` leaves it running, for timing loops."""
    array = (ctypes.c_void_p * len(params))(*params)
    gpu.driver_call("cuLaunchKernel", fn, *(ctypes.c_uint(g) for g in grid), ctypes.c_uint(threads), ctypes.c_uint(1),
                    ctypes.c_uint(1), ctypes.c_uint(shared), ctypes.c_void_p(0), array, ctypes.c_void_p(0))
    if sync:
        gpu.cuda().Context.synchronize()


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
    """True for the kernel whose last round is shared out (:mod:`gemmlab.streamk`), which then takes a flag per
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
"""Every GEMM of ``09_hopper.cu``: chapter 9's ladder (:data:`gemmlab.registry.HOPPER_STEPS`), the kernels beside it
(:data:`gemmlab.registry.HOPPER_ALTERNATIVES`) and the candidates."""


@dataclass(frozen=True)
class Sm90aOnly(tensor_gemm.TensorGemmKernel):
    """A tensor-core course kernel compiled for sm_90a alone (chapter 9's GEMMs, chapter 8's Hopper step): on any
    other GPU, or under ``GEMMLAB_ARCH``, it says why it cannot run in one sentence, and refuses to launch with
    :class:`gemmlab.gpu.GPUUnavailable`; wrong shapes are named before a GPU is needed. ``SM90A_USES`` names the
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
    """A GEMM of ``09_hopper.cu`` as a course kernel (``C = kernel(A, B)``, :func:`gemmlab.bench.time_gemm`): chapter
    8's kernel for its format, entry point, reference and shared memory (``dynamic_shared`` is the configuration's,
    as :func:`hopper_kernel` sets it), launched with tensor maps encoded once per set of device buffers."""

    hopper_config: HopperGemm = GEMM_WS
    precision: str = "BF16"

    def grid(self, M: int, N: int) -> tuple[int, int, int]:
        c = self.hopper_config
        if not c.persistent:
            return super().grid(M, N)
        work = -(-M // (c.BM * c.cluster)) * -(-N // c.BN)          # tiles of C, or pairs of them in clusters of two
        room = device.current().sms if c.cluster == 1 else _active_clusters(self)
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
            stride = tensor_gemm.padded_length(K, self.precision) * 2
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

        a, bt = tensor_gemm.device_operands(A, B, self.precision, transpose_b=True)
        c = gpuarray.empty((M, c_columns(self.hopper_config, N)), np.float32)
        return DeviceProblem(self, M, N, K, gpuarray.to_gpu(a), gpuarray.to_gpu(bt), c)


def c_columns(config: HopperGemm, N: int) -> int:
    """The length of C's rows on the device: N, or with a copy-engine epilogue N padded to a multiple of 16 bytes
    (a tensor map's rule for strides; :meth:`gemmlab.gemm.DeviceProblem.result` returns the first N columns)."""
    per = tensor_gemm.PAD_BYTES // 4                                # FP32 elements per 16 bytes
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


class _LaunchConfig(ctypes.Structure):
    """``CUlaunchConfig``: what ``cuOccupancyMaxActiveClusters`` is asked about."""
    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p), ("attrs", ctypes.c_void_p),
                ("numAttrs", ctypes.c_uint)]


def _active_clusters(kernel: HopperGemmKernel) -> int:
    """How many clusters of ``kernel`` (its cluster size is compiled in) the GPU holds at once, as the driver counts
    them: SMs are grouped, and a cluster's blocks must sit in one group, so this can be less than SMs / 2. A
    persistent grid larger than this would run its last clusters after the others, doubling the time."""
    c = kernel.hopper_config
    key = (kernel.entry_point, c.threads, c.shared)
    if key not in _CLUSTERS:
        fn = kernel.compiled().driver_function(kernel.entry_point, c.shared)
        config = _LaunchConfig(c.cluster * device.current().sms, 1, 1, c.threads, 1, 1, c.shared, None, None, 0)
        count = ctypes.c_int(0)
        gpu.driver_call("cuOccupancyMaxActiveClusters", ctypes.byref(count), fn, ctypes.byref(config))
        _CLUSTERS[key] = max(1, count.value)
    return _CLUSTERS[key]


_CLUSTERS: dict[tuple, int] = {}
"""Clusters the GPU holds at once, by entry point, threads and shared memory (asked once)."""

_MAPS: dict[tuple, list] = {}
"""Encoded tensor maps (with the buffers that keep them alive) by kernel configuration, format, device buffers and
size: encoded once, then reused by every launch on the same operands."""


def map_addresses(key: tuple, maps: Callable[[], Iterable[tuple[hopper.TensorMap, SupportsInt]]]) -> list[int]:
    """The addresses of 64-byte-aligned copies of the tensor maps that ``maps()`` returns as ``(TensorMap, device
    pointer)`` pairs, encoded by the driver the first time ``key`` is asked for. The key must name the kernel's
    configuration: a map holds its box (the kernel's tile), and a map made for another kernel at the same addresses
    would copy fewer bytes than this kernel's barrier expects, which would then wait forever."""
    if key not in _MAPS:
        _MAPS[key] = [_aligned_copy(encode(m, int(p))) for m, p in maps()]
    return [address for _, address in _MAPS[key]]


def launch_with_maps(kernel: tensor_gemm.TensorGemmKernel, grid: tuple[int, int, int], shared: int, threads: int,
                     maps: list[int], c_ptr: SupportsInt, M: int, N: int, K: int,
                     extra: Sequence[ctypes.c_uint64 | ctypes.c_uint] = ()) -> None:
    """Enqueue ``kernel`` (a course kernel of an sm_90a unit) without waiting: its tensor maps first (``maps``, from
    :func:`map_addresses`), then ``C, M, N, K`` and any ``extra`` ctypes values."""
    args = [ctypes.c_uint64(int(c_ptr)), ctypes.c_int(M), ctypes.c_int(N), ctypes.c_int(K), *extra]
    _launch(kernel.compiled().driver_function(kernel.entry_point, shared), grid, shared,
            [*maps, *(ctypes.addressof(x) for x in args)], threads, sync=False)


PRECISIONS = ("BF16", "FP16")
"""The input formats of ``09_hopper.cu``'s GEMMs (FP32 sums): each has an entry point per format."""


def hopper_kernel(config: HopperGemm = GEMM_WS, name: str | None = None, precision: str = "BF16") -> HopperGemmKernel:
    """The course kernel of one of ``09_hopper.cu``'s GEMMs for ``precision`` inputs (BF16 or FP16)."""
    if precision not in PRECISIONS:
        raise ValueError(f"{config.function} takes {' or '.join(PRECISIONS)} inputs, got {precision!r}")
    return HopperGemmKernel(name or f"{config.function}_{tensor_gemm.PRECISIONS[precision]}", 9, SOURCE, config.function,
                            (config.threads, 1, 1), (config.BM, config.BN), f"{config.function}: copy engine and wgmma",
                            precision=precision, dynamic_shared=config.shared, hopper_config=config)


def gemm(A: np.ndarray, B: np.ndarray, kernel: HopperGemm = GEMM_WS, precision: str = "BF16") -> np.ndarray:
    """C = A·B (FP32) by one of chapter 9's kernels. A and B are rounded to ``precision`` (BF16 or FP16) and their
    rows padded to 16 bytes; the kernels take B transposed, both through tensor maps whose boxes are the kernel's
    tiles, and the copy engine's zeros past the edges handle every size."""
    return hopper_kernel(kernel, precision=precision)(A, B)
