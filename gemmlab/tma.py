"""Tensor maps for Hopper's copy engine (groundwork for chapter 9): a :class:`gemmlab.hopper.TensorMap`
encoded by the CUDA driver.

``cuTensorMapEncodeTiled`` turns the parameters into the 128-byte descriptor that a kernel takes as a
``const __grid_constant__ CUtensorMap`` parameter and hands to ``cp.async.bulk.tensor``. PyCUDA has no
binding for it, so this module calls ``libcuda`` through ``ctypes`` (:func:`gemmlab.gpu.driver_call`). The
parameters are checked first (:meth:`gemmlab.hopper.TensorMap.problems`): a broken rule is named in a sentence
before the driver could answer with a bare error code. :func:`driver_accepts` asks the driver alone, so that a
GPU test can hold the Python rules against the driver's own verdicts.
"""

from __future__ import annotations

import ctypes
from dataclasses import replace

from . import device, gpu, hopper

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
        text = ctypes.c_char_p()
        gpu.libcuda().cuGetErrorString(status, ctypes.byref(text))
        raise gpu.DriverError(f"cuTensorMapEncodeTiled refused a map that breaks none of the documented rules "
                              f"({(text.value or b'error %d' % status).decode()}): {m}")
    return data


def driver_accepts(m: hopper.TensorMap, address: int) -> bool:
    """Whether the driver encodes ``m`` at ``address``, asked without the Python checks."""
    _require_hopper()
    return _encode(m, address)[0] == 0
