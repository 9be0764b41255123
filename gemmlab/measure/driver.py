"""The CUDA driver's own occupancy answer, for what PyCUDA does not expose.

Chapter 5 checks :func:`gemmlab.models.occupancy.calculate` against
``cuOccupancyMaxActiveBlocksPerMultiprocessor``. PyCUDA has no binding for it, so this module
calls ``libcuda`` through ``ctypes``: it loads the same cubin (or PTX) that :func:`gemmlab.gemm.units.load`
built into the current (PyCUDA) context and asks the driver about one of its functions.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Iterable

from ..gemm import units
from ..models import occupancy
from ..runtime import device, gpu
from ..runtime.compiler import CompileUnit
from ..runtime.gpu import driver_call as _call


def max_active_blocks(source: str | CompileUnit, function: str, threads_per_block: int, dynamic_shared_bytes: int = 0) -> int:
    """Blocks of ``function`` (in kernel file ``source``) that the driver says fit on one SM at once,
    for blocks of ``threads_per_block`` threads with ``dynamic_shared_bytes`` of dynamic shared memory."""
    gpu.cuda()
    compiled = units.load(source)
    fn = compiled.driver_function(function, dynamic_shared_bytes)        # the limit raised, as a launch would
    blocks = ctypes.c_int()
    _call("cuOccupancyMaxActiveBlocksPerMultiprocessor", ctypes.byref(blocks), fn,
          ctypes.c_int(threads_per_block), ctypes.c_size_t(dynamic_shared_bytes))
    return blocks.value


@dataclass(frozen=True)
class OccupancyCase:
    """One configuration, with the calculator's and the driver's blocks per SM."""

    source: str | CompileUnit
    function: str
    registers: int
    static_shared: int
    threads: int
    dynamic_shared: int
    model: int                      # gemmlab.models.occupancy.calculate (0 where it says the block cannot run)
    driver: int                     # cuOccupancyMaxActiveBlocksPerMultiprocessor
    binding: tuple

    @property
    def agree(self) -> bool:
        return self.model == self.driver


def compare(source: str | CompileUnit, function: str, threads: int, dynamic_shared: int = 0) -> OccupancyCase:
    """The calculator and the driver on one kernel and launch configuration."""
    res = units.load(source).resources(function)
    try:
        occ = occupancy.calculate(device.current(), threads, res.registers, res.shared_bytes + dynamic_shared)
        model, binding = occ.blocks_per_sm, tuple(occ.binding)
    except ValueError:              # more registers or shared memory than one block may have
        model, binding = 0, ("does not fit",)
    return OccupancyCase(source, function, res.registers, res.shared_bytes, threads, dynamic_shared, model,
                         max_active_blocks(source, function, threads, dynamic_shared), binding)


def sweep(functions: Iterable[tuple[str | CompileUnit, str]], threads: Iterable[int] = (32, 64, 96, 128, 192, 256, 384, 512, 640, 768, 1024),
          dynamic_shared: Iterable[int] = (0, 1000, 4096, 12288, 24576, 40000, 49152, 65536, 100000, 150000, 200000)
          ) -> list[OccupancyCase]:
    """:func:`compare` over every ``(source, function)`` × block size × dynamic shared memory that the
    function and the device allow (block sizes up to the function's maximum, shared memory up to the opt-in limit)."""
    spec = device.current()
    cases = []
    for source, function in functions:
        res = units.load(source).resources(function)
        for t in threads:
            for d in dynamic_shared:
                if t <= res.max_threads_per_block and res.shared_bytes + d <= spec.shared_per_block_optin:
                    cases.append(compare(source, function, t, d))
    return cases
