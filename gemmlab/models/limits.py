"""CUDA limits the course relies on, defined once for every module that checks against them.

The constants hold on every GPU the course supports (compute capability 7.5 to 9.0); what varies between
GPUs (SMs, shared memory per SM, the opt-in maximum) is a :class:`DeviceSpec`, which :func:`gemmlab.runtime.device.current`
reads from the driver (it lives here, below the GPU layers, so that the models can take one with no GPU).
"""

from __future__ import annotations

from dataclasses import dataclass, field

STATIC_SHARED_BYTES = 48 * 1024
"""The most shared memory a kernel may declare statically, and the most a launch gets without
opting in (static plus dynamic); the compiler rejects a kernel whose static arrays exceed it."""

MAX_REGISTERS_PER_THREAD = 255
"""What ptxas may give a thread; a kernel that needs more spills to local memory."""

MAX_THREADS_PER_BLOCK = 1024

INT_MAX = 2**31 - 1
"""The kernels take M, N and K as ``int``."""


def needs_shared_opt_in(static_bytes: int, dynamic_bytes: int) -> bool:
    """Whether a launch with this much static and dynamic shared memory per block must first raise the
    function's ``MAX_DYNAMIC_SHARED_SIZE_BYTES`` attribute (above :data:`STATIC_SHARED_BYTES` in all)."""
    return static_bytes + dynamic_bytes > STATIC_SHARED_BYTES


@dataclass(frozen=True)
class DeviceSpec:
    """A GPU's limits as the driver reports them (sizes in bytes, clocks in kHz)."""

    name: str
    compute_capability: tuple[int, int]
    sms: int
    max_threads_per_block: int
    max_block_dims: tuple[int, int, int]
    max_grid_dims: tuple[int, int, int]
    max_threads_per_sm: int
    max_blocks_per_sm: int
    warp_size: int
    registers_per_sm: int
    registers_per_block: int
    shared_per_block: int
    shared_per_block_optin: int
    shared_per_sm: int
    reserved_shared_per_block: int
    l2_bytes: int
    sm_clock_khz: int
    memory_clock_khz: int
    memory_bus_bits: int
    total_memory: int
    clock_source: str = field(default="driver", compare=False)

    @property
    def arch(self) -> str:
        return "sm_%d%d" % self.compute_capability
