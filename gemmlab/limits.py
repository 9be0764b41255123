"""CUDA limits the course relies on, defined once for every module that checks against them.

These hold on every GPU the course supports (compute capability 7.5 to 9.0); what varies between
GPUs (SMs, shared memory per SM, the opt-in maximum) comes from :mod:`gemmlab.device`.
"""

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
