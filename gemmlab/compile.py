"""Compiling ``kernels/*.cu`` with PyCUDA for the GPU in this machine.

:func:`load` compiles a file once per process for the current device's architecture
(``sm_XY``) and prints its provenance line. :meth:`CompiledFile.resources` reports what
the compiler gave each function: registers per thread, static shared memory, local memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from . import gpu, provenance

NVCC_OPTIONS = ("-std=c++17", "-lineinfo")


@dataclass(frozen=True)
class Resources:
    """What the compiled function needs per thread and per block."""

    registers: int
    shared_bytes: int
    local_bytes: int
    max_threads_per_block: int


@dataclass
class CompiledFile:
    """One kernel file compiled for one architecture: its path, short hash, ``sm_XY`` and module."""

    path: Path
    sha: str
    arch: str
    module: object
    _functions: dict = field(default_factory=dict, repr=False)

    def function(self, name: str):
        """The PyCUDA function ``name`` (an ``extern "C"`` entry point of the file)."""
        if name not in self._functions:
            try:
                self._functions[name] = self.module.get_function(name)
            except Exception:
                raise KeyError(f"{provenance.display_path(self.path)} has no extern \"C\" kernel named {name!r}") from None
        return self._functions[name]

    def prepared(self, name: str, signature: str):
        """Function ``name`` prepared for ``prepared_call`` with PyCUDA's argument ``signature``
        (e.g. ``"PPPiii"``): a launch then costs microseconds of Python instead of tens."""
        key = (name, signature)
        if key not in self._functions:
            self._functions[key] = self.function(name).prepare(signature)
        return self._functions[key]

    def resources(self, name: str) -> Resources:
        """Registers, static shared memory and local memory the compiler gave function ``name``."""
        f = self.function(name)
        return Resources(f.num_regs, f.shared_size_bytes, f.local_size_bytes, f.max_threads_per_block)

    @property
    def provenance(self) -> str:
        return f"[gemmlab] {provenance.display_path(self.path)} sha256:{self.sha} {self.arch}"


_loaded: dict[tuple[str, int, int], CompiledFile] = {}


def arch() -> str:
    """``sm_XY`` of device 0."""
    drv = gpu.cuda()
    major, minor = drv.Context.get_device().compute_capability()
    return f"sm_{major}{minor}"


def load(path: str | Path, quiet: bool = False) -> CompiledFile:
    """Compile a kernel file for this GPU (once per process and version of the file) and print its provenance line.

    The hash is taken of the exact text handed to the compiler, so the line always names
    the source that produced the outputs that follow it.
    """
    file = provenance.kernel_path(path)
    st = file.stat()
    key = (str(file), st.st_mtime_ns, st.st_size)   # cheap enough to call on every launch
    if key in _loaded:
        return _loaded[key]
    text = file.read_text(encoding="utf-8")
    sha = provenance.short_sha(text)
    gpu.cuda()
    gpu.require_nvcc()
    from pycuda.compiler import SourceModule

    target = arch()
    module = SourceModule(text, arch=target, no_extern_c=True, options=list(NVCC_OPTIONS),
                          include_dirs=[str(file.parent)])
    compiled = CompiledFile(file, sha, target, module)
    _loaded[key] = compiled
    if not quiet:
        print(compiled.provenance)
    return compiled
