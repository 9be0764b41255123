"""The occupancy calculator (chapter 5): how many blocks of a kernel fit on one SM, and which limit decides.

:func:`calculate` follows the rules of ``include/cuda_occupancy.h`` from the CUDA toolkit; chapter 5
and the GPU tests check it against the driver's own answer (:mod:`gemmlab.measure.driver`). Pure Python, no GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from .limits import MAX_REGISTERS_PER_THREAD, DeviceSpec
from .traffic import ceil_div

REGISTER_ALLOCATION_UNIT = 256      # registers are given to a warp in chunks of 256 (8 per thread)
SHARED_ALLOCATION_UNIT = 128        # bytes; a block's shared memory is rounded up to this (sm_80 and later)
SUB_PARTITIONS = 4                  # an SM's register file is split among 4 schedulers (sm_70 and later)


@dataclass(frozen=True)
class Occupancy:
    """How many blocks of a kernel fit on one SM, and which limit decides it."""

    blocks_per_sm: int
    warps_per_sm: int
    max_warps_per_sm: int
    limits: dict                    # blocks allowed by each resource

    @property
    def occupancy(self) -> float:
        return self.warps_per_sm / self.max_warps_per_sm

    @property
    def binding(self) -> list[str]:
        """The limits that allow no more blocks than the answer (several can tie)."""
        return [name for name, n in self.limits.items() if n == self.blocks_per_sm]


def calculate(spec: DeviceSpec, threads_per_block: int, registers_per_thread: int, shared_bytes_per_block: int = 0) -> Occupancy:
    """Active blocks and warps per SM for a kernel on a device (``spec``: a :class:`~gemmlab.models.limits.DeviceSpec`).

    Each resource allows some number of blocks: threads (max threads per SM), the hardware's block
    slots, registers and shared memory; the smallest number wins. Registers are allocated per warp
    in units of 256 and live in one of the SM's four sub-partitions, so a sub-partition holds
    ``(registers per SM / 4) // registers per warp`` warps. Shared memory is the block's bytes plus
    the per-block reservation of sm_80 and later, rounded up to 128 bytes, against the SM's capacity
    (the driver's default carveout gives a kernel all of it). These are the rules of the
    ``include/cuda_occupancy.h`` header that ships with the CUDA toolkit; chapter 5 compares
    the result with the driver's ``cuOccupancyMaxActiveBlocksPerMultiprocessor``.
    """
    if not 1 <= threads_per_block <= spec.max_threads_per_block:
        raise ValueError(f"threads_per_block = {threads_per_block} must be between 1 and {spec.max_threads_per_block}")
    if not 0 <= registers_per_thread <= MAX_REGISTERS_PER_THREAD:
        raise ValueError(f"registers_per_thread = {registers_per_thread} must be between 0 and {MAX_REGISTERS_PER_THREAD}")
    if shared_bytes_per_block > spec.shared_per_block_optin:
        raise ValueError(f"{shared_bytes_per_block:,} bytes of shared memory per block exceed this device's "
                         f"maximum of {spec.shared_per_block_optin:,}")
    warps_per_block = ceil_div(threads_per_block, spec.warp_size)
    max_warps = spec.max_threads_per_sm // spec.warp_size
    regs_per_warp = ceil_div(max(registers_per_thread, 1) * spec.warp_size, REGISTER_ALLOCATION_UNIT) * REGISTER_ALLOCATION_UNIT
    # The hardware checks a block's registers as if its warps were spread over all four sub-partitions.
    if regs_per_warp * ceil_div(warps_per_block, SUB_PARTITIONS) * SUB_PARTITIONS > spec.registers_per_block:
        raise ValueError(f"{threads_per_block} threads x {registers_per_thread} registers exceed the "
                         f"{spec.registers_per_block:,} registers a block may use")
    warps_by_registers = (spec.registers_per_sm // SUB_PARTITIONS // regs_per_warp) * SUB_PARTITIONS
    smem = ceil_div(shared_bytes_per_block + spec.reserved_shared_per_block, SHARED_ALLOCATION_UNIT) * SHARED_ALLOCATION_UNIT
    limits = {
        "threads": max_warps // warps_per_block,
        "blocks": spec.max_blocks_per_sm,
        "registers": warps_by_registers // warps_per_block,
    }
    if smem:                        # a block that needs no shared memory is not limited by it
        limits["shared memory"] = spec.shared_per_sm // smem
    blocks = min(limits.values())
    return Occupancy(blocks, blocks * warps_per_block, max_warps, limits)
