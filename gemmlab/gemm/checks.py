"""Input checks for every launch: operands, sizes, blocks, grids, shared and device memory.

Plain functions of shapes and a :class:`~gemmlab.runtime.device.DeviceSpec`, so they are tested on any
machine with the published specs. A bad input raises an exception that names the problem and the
offending value before anything touches the GPU; it never reaches a kernel.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from ..models import limits, traffic
from ..runtime.device import DeviceSpec


class LaunchConfigError(ValueError):
    """A block, grid or amount of shared memory the device cannot run."""


class DeviceMemoryError(MemoryError):
    """The problem does not fit in the device memory that is free."""


def check_matrix(name: str, X: object) -> tuple[int, int]:
    """Type, dtype and rank of one operand; returns its shape."""
    if not isinstance(X, np.ndarray):
        raise TypeError(f"{name} must be a NumPy array, got {type(X).__name__}")
    if X.dtype != np.float32:
        raise TypeError(f"{name} has dtype {X.dtype}; the course kernels take float32 "
                        f"(convert with {name}.astype(np.float32))")
    if X.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got {X.ndim}-D with shape {X.shape}")
    return X.shape


def check_gemm_shapes(A: object, B: object) -> tuple[int, int, int]:
    """(M, N, K) for C = A @ B, after checking both operands and that their shapes agree."""
    M, K = check_matrix("A", A)
    K2, N = check_matrix("B", B)
    if K != K2:
        raise ValueError(f"inner dimensions differ: A is {M}x{K} and B is {K2}x{N} "
                         f"(A.shape[1] = {K} must equal B.shape[0] = {K2})")
    check_sizes(M, N, K)
    return M, N, K


def check_sizes(M: int, N: int, K: int) -> None:
    """Each of M, N, K at least 1 and small enough for the kernels' int arguments."""
    for dim, v in (("M", M), ("N", N), ("K", K)):
        if v < 1:
            raise ValueError(f"{dim} = {v}: every dimension must be at least 1 (an empty matrix has nothing to multiply)")
        if v > limits.INT_MAX:
            raise ValueError(f"{dim} = {v:,} is larger than the kernels' int limit {limits.INT_MAX:,}")


def check_contiguous(name: str, X: np.ndarray) -> None:
    if not X.flags.c_contiguous:
        raise ValueError(f"{name} is not C-contiguous (strides {X.strides} for shape {X.shape}); "
                         f"the kernels read row-major memory: pass np.ascontiguousarray({name})")


def check_block(block: Sequence[int], spec: DeviceSpec) -> None:
    """A thread block the device can run: per-dimension limits and threads per block."""
    if len(block) != 3 or any(int(b) < 1 for b in block):
        raise LaunchConfigError(f"block {tuple(block)} must be three positive sizes (x, y, z)")
    for axis, b, lim in zip("xyz", block, spec.max_block_dims):
        if b > lim:
            raise LaunchConfigError(f"block {tuple(block)}: {axis} = {b} exceeds this device's limit of {lim}")
    threads = math.prod(block)
    if threads > spec.max_threads_per_block:
        raise LaunchConfigError(f"block {tuple(block)} has {threads} threads; this device "
                                f"({spec.name}) allows at most {spec.max_threads_per_block} per block")


def check_grid(grid: Sequence[int], spec: DeviceSpec) -> None:
    for axis, g, lim in zip("xyz", grid, spec.max_grid_dims):
        if g > lim:
            raise LaunchConfigError(f"grid {tuple(grid)}: {axis} = {g:,} blocks exceeds this device's limit of {lim:,}")


def check_extra_shared(name: str, extra_shared: int, static_bytes: int, spec: DeviceSpec) -> None:
    """Refuse unused dynamic shared memory (chapter 5) that would not fit next to a kernel's own ``static_bytes``."""
    if extra_shared < 0:
        raise LaunchConfigError(f"extra_shared = {extra_shared} must be 0 or more bytes")
    if static_bytes + extra_shared > spec.shared_per_block_optin:
        raise LaunchConfigError(f"{name} uses {static_bytes:,} bytes of shared memory; with {extra_shared:,} more "
                                f"a block needs {static_bytes + extra_shared:,}, above this GPU's {spec.shared_per_block_optin:,}")


def check_fits(nbytes: int, free_bytes: int, what: str) -> None:
    if nbytes > free_bytes:
        raise DeviceMemoryError(f"{what} needs {nbytes / 2**30:,.2f} GiB of device memory, "
                                f"but only {free_bytes / 2**30:,.2f} GiB is free")


def check_gemm(name: str, A: np.ndarray, B: np.ndarray, block: tuple[int, int, int],
               grid_of: Callable[[int, int], tuple[int, int, int]], spec: DeviceSpec,
               free_bytes: int) -> tuple[int, int, int]:
    """Every check of one GEMM launch, in the order a reader would want to hear about problems:
    operands and sizes, block, grid (``grid_of(M, N)``), device memory for A, B and C, contiguity.
    Returns (M, N, K)."""
    M, N, K = check_gemm_shapes(A, B)
    check_block(block, spec)
    check_grid(grid_of(M, N), spec)
    check_fits(traffic.compulsory_bytes(M, N, K), free_bytes, f"{name} at M={M}, N={N}, K={K} (A, B and C)")
    check_contiguous("A", A)
    check_contiguous("B", B)
    return M, N, K
