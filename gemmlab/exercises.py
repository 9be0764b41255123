"""Checking a reader's kernel: compile CUDA source given as text and test it like a course kernel.

Exercise solutions that are kernels call :func:`check_kernel`; it compiles the source for this GPU,
runs it on operands of awkward sizes and compares each result with the float64 reference.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from . import checks, compiler, device, gpu, provenance, tables, verify

SIZES = ((1, 1, 1), (31, 33, 17), (64, 64, 64), (100, 37, 250), (257, 129, 65))


def check_kernel(source: str, function: str, block: tuple[int, int, int],
                 grid: Callable[[int, int], tuple[int, int, int]], sizes=SIZES, quiet: bool = False) -> bool:
    """Compile ``source``, launch ``function(A, B, C, M, N, K)`` with ``block`` and ``grid(M, N)``
    at each (M, N, K) and print one verdict per size. True when every size is right."""
    drv = gpu.cuda()
    gpu.require_nvcc()
    from pycuda import gpuarray

    spec = device.current()
    checks.check_block(block, spec)
    _, image = compiler.build(source)
    kernel = drv.module_from_buffer(image).get_function(function)
    rows, ok = [], True
    for M, N, K in sizes:
        A, B = verify.random_operands(M, N, K, seed=M + 3 * N + 7 * K)
        g = tuple(grid(M, N))
        checks.check_grid(g, spec)
        a, b = gpuarray.to_gpu(A), gpuarray.to_gpu(B)
        c = gpuarray.to_gpu(np.full((M, N), np.nan, np.float32))   # unwritten elements stay NaN and fail
        kernel(a.gpudata, b.gpudata, c.gpudata, np.int32(M), np.int32(N), np.int32(K), block=block, grid=g)
        drv.Context.synchronize()
        v = verify.check(c.get(), A, B)
        ok &= v.ok
        rows.append((f"{M}x{N}x{K}", str(v)))
    if not quiet:
        print(f"[gemmlab] exercise kernel {function} sha256:{provenance.short_sha(source)}")
        print(tables.table(rows, ["M x N x K", "verdict"], ["<", "<"]))
    return ok
