"""A course GEMM kernel as ``C = kernel(A, B)`` on NumPy float32 arrays: the one launch path.

:class:`GemmKernel` knows its compile unit, its entry point, its block and the tile of C a block
computes; the grid follows. Calling it checks the inputs (:mod:`gemmlab.gemm.checks`), copies them to
the device, launches and copies C back. :meth:`GemmKernel.on_device` is the same path stopped
before the copy back, for the bench, which times :meth:`DeviceProblem.launch` in a loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, SupportsInt

import numpy as np

from ..models import verify
from ..runtime import compiler, device, gpu
from ..runtime.compiler import CompileUnit
from . import checks, units


@dataclass
class DeviceProblem:
    """One GEMM's operands on the device, ready to launch again and again (see :meth:`GemmKernel.on_device`)."""

    kernel: GemmKernel
    M: int
    N: int
    K: int
    a: Any              # pycuda.gpuarray.GPUArray (PyCUDA has no type information)
    b: Any
    c: Any
    extra_shared: int = 0

    def launch(self) -> None:
        """Enqueue the kernel once (no checks, no copies)."""
        self.kernel.launch(self.a.gpudata, self.b.gpudata, self.c.gpudata, self.M, self.N, self.K, self.extra_shared)

    def result(self) -> np.ndarray:
        """Wait for the GPU and copy C back (its first N columns, where the kernel wants C's rows padded)."""
        gpu.cuda().Context.synchronize()
        c = self.c.get()
        return c if c.shape[1] == self.N else np.ascontiguousarray(c[:, :self.N])


@dataclass(frozen=True)
class GemmKernel:
    """One GEMM kernel: ``C = kernel(A, B)`` for float32 row-major matrices.

    ``source`` is a kernel file (its course compile unit) or a :class:`~gemmlab.runtime.compiler.CompileUnit`;
    ``block`` is the thread block; ``tile`` the (rows, cols) of C one block computes. The grid follows
    from them: ``ceil(N / tile_cols) x ceil(M / tile_rows)``, times ``split_k`` along z for a kernel
    whose blocks each sum a part of K into C (C is zeroed first, in the same stream).
    """

    name: str
    chapter: int
    source: str | CompileUnit
    function: str
    block: tuple[int, int, int]
    tile: tuple[int, int]
    summary: str = ""
    split_k: int = 1

    @property
    def source_name(self) -> str:
        """The kernel file's name, e.g. ``07_fast.cu``."""
        return self.source.path.name if isinstance(self.source, CompileUnit) else Path(self.source).name

    def grid(self, M: int, N: int) -> tuple[int, int, int]:
        return (-(-N // self.tile[1]), -(-M // self.tile[0]), self.split_k)

    def check(self, A: np.ndarray, B: np.ndarray, spec: device.DeviceSpec, free_bytes: int, extra_shared: int = 0) -> tuple[int, int, int]:
        """Every check before a launch (``extra_shared``: unused dynamic shared memory per block, see :meth:`launch`)."""
        M, N, K = checks.check_gemm(self.name, A, B, self.block, self.grid, spec, free_bytes)
        if extra_shared:
            checks.check_extra_shared(self.name, extra_shared, self.resources().shared_bytes, spec)
        return M, N, K

    def compiled(self) -> compiler.CompiledFile:
        return units.load(self.source)

    @property
    def entry_point(self) -> str:
        """The kernel's name in the compiled code (what a profiler filters on)."""
        return self.function

    @property
    def input_precision(self) -> str:
        """The format the kernel multiplies in (FP32 here; chapter 8's tensor-core kernels say otherwise)."""
        return "FP32"

    def reference(self, A: np.ndarray, B: np.ndarray) -> verify.Reference:
        """What this kernel's result is checked against: A·B of the inputs as the kernel sees them."""
        return verify.Reference(A, B)

    def unavailable_on(self, spec: device.DeviceSpec) -> str | None:
        """Why this kernel cannot run on ``spec``, in one sentence, or None where it can: None for the FP32 kernels,
        which every GPU the course supports runs (the tensor-core and Hopper kernels say otherwise)."""
        return None

    def resources(self) -> compiler.Resources:
        """Registers, shared and local memory the compiler gave this kernel on this GPU."""
        return self.compiled().resources(self.function)

    def launch(self, a_ptr: SupportsInt, b_ptr: SupportsInt, c_ptr: SupportsInt, M: int, N: int, K: int,
               extra_shared: int = 0) -> None:
        """Enqueue the kernel on device buffers (no checks, no copies: for timing loops).

        ``extra_shared`` bytes of dynamic shared memory are requested and left unused: chapter 5
        lowers occupancy with them on purpose (above 48 KiB per block in all, the function opts in first)."""
        fn = self.compiled().prepared(self.function, "PPPiii", extra_shared)
        if self.split_k > 1:        # the parts are added into C: it starts at zero
            gpu.cuda().memset_d32_async(int(c_ptr), 0, M * N)
        fn.prepared_call(self.grid(M, N), self.block, int(a_ptr), int(b_ptr), int(c_ptr), M, N, K,
                         shared_size=extra_shared)

    def on_device(self, A: np.ndarray, B: np.ndarray, extra_shared: int = 0) -> DeviceProblem:
        """Check the inputs, copy them to the device and make room for C; nothing is launched yet."""
        gpu.cuda()
        M, N, K = self.check(A, B, device.current(), device.free_memory(), extra_shared)
        from pycuda import gpuarray

        return DeviceProblem(self, M, N, K, gpuarray.to_gpu(A), gpuarray.to_gpu(B),
                             gpuarray.empty((M, N), np.float32), extra_shared)

    def __call__(self, A: np.ndarray, B: np.ndarray, extra_shared: int = 0) -> np.ndarray:
        problem = self.on_device(A, B, extra_shared)
        problem.launch()
        return problem.result()
