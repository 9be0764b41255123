"""Tensor maps for Hopper's copy engine (TMA), encoded by the CUDA driver, and the launches that hand them to a
kernel.

``cuTensorMapEncodeTiled`` turns a :class:`gemmlab.models.hopper.TensorMap` into the 128-byte descriptor that a kernel takes
as a ``const __grid_constant__ CUtensorMap`` parameter and hands to ``cp.async.bulk.tensor``. PyCUDA has no binding for
it, so this module calls ``libcuda`` through ``ctypes`` (:func:`gemmlab.runtime.gpu.driver_call`). The parameters are checked
first (:meth:`gemmlab.models.hopper.TensorMap.problems`): a broken rule is named in a sentence before the driver could answer
with a bare error code. :func:`driver_accepts` asks the driver alone, so that a GPU test can hold the Python rules
against the driver's own verdicts. :func:`tile_image` runs the first Hopper kernel (``kernels/09_hopper.cu``): one
copy into swizzled shared memory, completed on an ``mbarrier``, written back so that it can be compared with
:func:`gemmlab.models.hopper.box_image`. :func:`map_addresses` and :func:`launch_with_maps` encode a kernel's maps once and
launch it through ``cuLaunchKernel`` with them (chapter 8's Hopper step, :mod:`gemmlab.gemm.tensor_tma`, and chapter 9's
GEMMs, :mod:`gemmlab.gemm.wgmma`).
"""

from __future__ import annotations

import ctypes
from dataclasses import replace
from typing import Callable, Iterable, Protocol, Sequence, SupportsInt

import numpy as np

from ..models import hopper
from . import compiler, device, gpu, provenance

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
    every broken rule (before the driver is asked), :class:`gemmlab.runtime.gpu.GPUUnavailable` on a GPU older than Hopper."""
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
"""The kernel file of the copy engine's first kernel (``tma_tile_image``) and of chapter 9's GEMMs."""
ARCH = "sm_90a"
"""The one architecture that file compiles for (``wgmma`` and the copy engine's instructions are sm_90a's own)."""
THREADS = 128


def unit() -> compiler.CompileUnit:
    """The compile unit of :data:`SOURCE`: the file as it is, for sm_90a (:mod:`gemmlab.gemm.units` gives the same)."""
    return compiler.CompileUnit(provenance.kernel_path(SOURCE), arch_specific=ARCH)


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
    :func:`gemmlab.models.hopper.box_image`.

    ``expect_bytes`` is what the ``mbarrier`` is told to expect, by default the box's size
    (:attr:`gemmlab.models.hopper.TensorMap.box_bytes`). Expect more and the barrier never completes: the kernel hangs,
    as chapter 3's barrier did; run that only in a child process under :func:`gemmlab.runtime.watchdog.run_isolated`."""
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
    compiled = compiler.load(unit())
    args = [ctypes.c_int(x), ctypes.c_int(y), ctypes.c_uint64(int(out.gpudata)), ctypes.c_int(expect)]
    _launch(compiled.driver_function("tma_tile_image", expect), (1, 1, 1), expect,
            [map_address, *(ctypes.addressof(a) for a in args)])
    del keep
    return out.get()[:m.box_bytes]


def _launch(fn: ctypes.c_void_p, grid: tuple[int, int, int], shared: int, params: Sequence[int | None],
            threads: int = THREADS, sync: bool = True) -> None:
    """``cuLaunchKernel`` of ``fn`` (from :meth:`gemmlab.runtime.compiler.CompiledFile.driver_function`, asked for ``shared``
    bytes) on the default stream with ``threads`` threads per block and ``shared`` bytes of dynamic shared memory;
    ``params`` holds the address of each argument's value (a tensor map's: its 64-byte-aligned copy).
    ``sync=False`` leaves it running, for timing loops."""
    array = (ctypes.c_void_p * len(params))(*params)
    gpu.driver_call("cuLaunchKernel", fn, *(ctypes.c_uint(g) for g in grid), ctypes.c_uint(threads), ctypes.c_uint(1),
                    ctypes.c_uint(1), ctypes.c_uint(shared), ctypes.c_void_p(0), array, ctypes.c_void_p(0))
    if sync:
        gpu.cuda().Context.synchronize()


class KernelWithMaps(Protocol):
    """What a launch through the driver needs of a course kernel: its compiled unit and its entry point."""

    @property
    def entry_point(self) -> str: ...

    def compiled(self) -> compiler.CompiledFile: ...


class _LaunchConfig(ctypes.Structure):
    """``CUlaunchConfig``: what ``cuOccupancyMaxActiveClusters`` is asked about."""
    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p), ("attrs", ctypes.c_void_p),
                ("numAttrs", ctypes.c_uint)]


def _active_clusters(kernel: KernelWithMaps, cluster: int, threads: int, shared: int) -> int:
    """How many clusters of ``cluster`` blocks of ``kernel`` (its cluster size is compiled in), each of ``threads``
    threads and ``shared`` bytes of dynamic shared memory, the GPU holds at once, as the driver counts them: SMs are
    grouped, and a cluster's blocks must sit in one group, so this can be less than SMs / 2. A persistent grid larger
    than this would run its last clusters after the others, doubling the time."""
    key = (kernel.entry_point, threads, shared)
    if key not in _CLUSTERS:
        fn = kernel.compiled().driver_function(kernel.entry_point, shared)
        config = _LaunchConfig(cluster * device.current().sms, 1, 1, threads, 1, 1, shared, None, None, 0)
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


def launch_with_maps(kernel: KernelWithMaps, grid: tuple[int, int, int], shared: int, threads: int,
                     maps: list[int], c_ptr: SupportsInt, M: int, N: int, K: int,
                     extra: Sequence[ctypes.c_uint64 | ctypes.c_uint] = ()) -> None:
    """Enqueue ``kernel`` (a course kernel of an sm_90a unit) without waiting: its tensor maps first (``maps``, from
    :func:`map_addresses`), then ``C, M, N, K`` and any ``extra`` ctypes values."""
    args = [ctypes.c_uint64(int(c_ptr)), ctypes.c_int(M), ctypes.c_int(N), ctypes.c_int(K), *extra]
    _launch(kernel.compiled().driver_function(kernel.entry_point, shared), grid, shared,
            [*maps, *(ctypes.addressof(x) for x in args)], threads, sync=False)
