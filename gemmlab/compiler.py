"""Compiling ``kernels/*.cu`` with PyCUDA for the GPU in this machine, and reading what the compiler did.

:func:`load` compiles a file's compile unit (:mod:`gemmlab.compile_units`: the file, plus the
constants and entry points Python adds) once per process for the current device's architecture
(``sm_XY``) and prints its provenance line. With ``GEMMLAB_ARCH=compute_75`` (any virtual
architecture up to the device's own) it compiles to PTX instead, which the driver JIT-compiles:
the ``__CUDA_ARCH__ < 800`` branches a T4 runs then run on this GPU (:func:`target`).
:meth:`CompiledFile.resources` reports what the compiler gave each function: registers per thread, static shared memory, local memory;
:meth:`CompiledFile.sass` its machine code; :func:`ptxas_report` what ptxas decided and :func:`offline_sass` the
machine code nvcc makes for a given architecture, both with no GPU.
"""

from __future__ import annotations

import collections
import ctypes
import functools
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from . import compile_units, gpu, limits, provenance, watchdog
from .compile_units import CompileUnit

NVCC_OPTIONS = ("-std=c++17", "-lineinfo")
_ATTR_MAX_DYNAMIC_SHARED = 8        # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (cuda.h)
ARCH_VARIABLE = "GEMMLAB_ARCH"


class SassUnavailable(RuntimeError):
    """The machine code cannot be shown here (no ``cuobjdump``); the message says so in one sentence."""


#: What a SASS cell says where cuobjdump is missing.
NO_CUOBJDUMP = ("cuobjdump and nvdisasm (part of the CUDA toolkit) are not installed here, so this cell cannot "
                "disassemble the kernel: the stored outputs show the H200's machine code.")


@dataclass(frozen=True)
class Resources:
    """What the compiled function needs per thread and per block."""

    registers: int
    shared_bytes: int
    local_bytes: int
    max_threads_per_block: int


@dataclass
class CompiledFile:
    """One compile unit compiled for one architecture: the unit, ``sm_XY`` and the loaded module."""

    unit: CompileUnit
    arch: str                                       # sm_XY, or compute_XY where the driver JIT-compiled PTX
    module: Any                                     # a pycuda.driver.Module (PyCUDA has no type information)
    image: bytes = field(default=b"", repr=False)   # the cubin or PTX loaded, for direct driver calls (gemmlab.driver)
    _functions: dict[str | tuple[str, str], Any] = field(default_factory=dict, repr=False)
    _driver_module: ctypes.c_void_p | None = field(default=None, repr=False)
    _driver_functions: dict[str, ctypes.c_void_p] = field(default_factory=dict, repr=False)
    _driver_shared: dict[str, int] = field(default_factory=dict, repr=False)    # the dynamic shared memory each may use
    _shared: dict[str, int] = field(default_factory=dict, repr=False)           # the same for the PyCUDA functions

    def function(self, name: str) -> Any:
        """The PyCUDA function ``name`` (an ``extern "C"`` entry point of the file)."""
        if name not in self._functions:
            try:
                self._functions[name] = self.module.get_function(name)
            except Exception:
                raise KeyError(f"{provenance.display_path(self.unit.path)} has no extern \"C\" kernel named {name!r}") from None
        return self._functions[name]

    def driver_function(self, name: str, dynamic_shared: int = 0) -> ctypes.c_void_p:
        """The ``CUfunction`` ``name`` of this image as a ``ctypes`` handle, for the driver calls PyCUDA has no
        binding for (occupancy queries, launches with a tensor map passed by value); loaded once. With
        ``dynamic_shared`` bytes per block beyond the default limit, its limit is raised first, as a launch needs."""
        if name not in self._driver_functions:
            self.function(name)             # a clear KeyError for a name the file does not have
            if self._driver_module is None:
                module = ctypes.c_void_p()
                gpu.driver_call("cuModuleLoadData", ctypes.byref(module), ctypes.c_char_p(self.image))
                self._driver_module = module
            fn = ctypes.c_void_p()
            gpu.driver_call("cuModuleGetFunction", ctypes.byref(fn), self._driver_module, name.encode())
            self._driver_functions[name] = fn
        fn = self._driver_functions[name]
        self._opt_in(self._driver_shared, name, dynamic_shared,
                     lambda: gpu.driver_call("cuFuncSetAttribute", fn, _ATTR_MAX_DYNAMIC_SHARED, ctypes.c_int(dynamic_shared)))
        return fn

    def prepared(self, name: str, signature: str, dynamic_shared: int = 0) -> Any:
        """Function ``name`` prepared for ``prepared_call`` with PyCUDA's argument ``signature``
        (e.g. ``"PPPiii"``): a launch then costs microseconds of Python instead of tens. With ``dynamic_shared``
        bytes per block, its limit is raised first where a launch needs it (:meth:`allow_shared`)."""
        key = (name, signature)
        if key not in self._functions:
            self._functions[key] = self.function(name).prepare(signature)
        self.allow_shared(name, dynamic_shared)
        return self._functions[key]

    def allow_shared(self, name: str, dynamic_shared: int) -> None:
        """Let PyCUDA's function ``name`` launch with ``dynamic_shared`` bytes of dynamic shared memory: beyond the
        default 48 KiB per block it must opt in. Raised once per larger size, as :meth:`driver_function` does,
        because asking for the attributes and setting one at every launch costs each launch microseconds."""
        def set_limit() -> None:
            from pycuda.driver import function_attribute
            self.function(name).set_attribute(function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, dynamic_shared)

        self._opt_in(self._shared, name, dynamic_shared, set_limit)

    def _opt_in(self, raised: dict[str, int], name: str, dynamic_shared: int, set_limit: Callable[[], object]) -> None:
        """Call ``set_limit`` where function ``name`` needs an opt-in for ``dynamic_shared`` bytes, once per larger
        size (``raised`` remembers the largest asked for). The driver's and PyCUDA's handles of one function are
        two ``CUfunction`` objects, each with its own limit, hence one record for each."""
        if dynamic_shared <= raised.get(name, 0):
            return
        if limits.needs_shared_opt_in(self.resources(name).shared_bytes, dynamic_shared):
            set_limit()
        raised[name] = dynamic_shared

    def resources(self, name: str) -> Resources:
        """Registers, static shared memory and local memory the compiler gave function ``name``."""
        f = self.function(name)
        return Resources(f.num_regs, f.shared_size_bytes, f.local_size_bytes, f.max_threads_per_block)

    def sass(self, name: str) -> str:
        """The machine code (SASS) of function ``name`` as ``cuobjdump`` disassembles this very cubin
        (for PTX, the cubin ptxas makes of the same PTX for this GPU, as the driver's JIT does).
        Raises :class:`SassUnavailable` where ``cuobjdump`` is missing."""
        self.function(name)
        tools = _disassembler()
        cubin_bytes = self.image
        if self.arch.startswith("compute_"):
            from pycuda.compiler import compile as nvcc
            cubin_bytes = nvcc(self.unit.text, arch=self.arch, code=arch(), no_extern_c=True,
                               options=[*NVCC_OPTIONS, *self.unit.options], include_dirs=[str(self.unit.path.parent)])
        with tempfile.TemporaryDirectory() as tmp:
            cubin = Path(tmp) / "kernel.cubin"
            cubin.write_bytes(cubin_bytes)
            return _disassemble(tools, cubin, name)

    @property
    def path(self) -> Path:
        return self.unit.path

    @property
    def provenance(self) -> str:
        return self.unit.provenance(self.arch)


@dataclass(frozen=True)
class PtxasEntry:
    """What ptxas reported for one kernel: registers per thread, spills, static shared memory."""

    function: str
    registers: int
    spill_store_bytes: int
    spill_load_bytes: int
    shared_bytes: int


def parse_ptxas(report: str) -> list[PtxasEntry]:
    """The entries of an ``nvcc -Xptxas -v`` report, one per compiled kernel."""
    entries = []
    for block in re.split(r"(?=ptxas info\s+: Compiling entry function)", report)[1:]:
        named = re.search(r"entry function '(\w+)'", block)
        if named is None:
            raise ValueError(f"a ptxas report block without an entry function's name: {block[:200]!r}")
        name = named.group(1)
        spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", block)
        regs = re.search(r"Used (\d+) registers", block)
        smem = re.search(r"(\d+) bytes smem", block)
        entries.append(PtxasEntry(name, int(regs.group(1)) if regs else 0, int(spills.group(1)) if spills else 0,
                                  int(spills.group(2)) if spills else 0, int(smem.group(1)) if smem else 0))
    return entries


def _nvcc_cubin(text: str, arch: str, options: Iterable[str], tmp: str, include_dir: Path = provenance.KERNELS_DIR) -> tuple[Path, str]:
    """Compile CUDA source ``text`` with nvcc into a cubin for ``arch`` in folder ``tmp``: the cubin's path and
    ptxas's report. An architecture-specific target (``sm_90a``) takes the ``-gencode`` form, which compiles for
    that architecture alone (the shorthand would add a plain sm_90 pass, which refuses its instructions)."""
    nvcc = gpu.require_nvcc()
    cu, cubin = Path(tmp) / "kernel.cu", Path(tmp) / "kernel.cubin"
    cu.write_text(text, encoding="utf-8")
    target = [f"-gencode=arch=compute_{arch[3:]},code={arch}"] if arch.endswith("a") else [f"-arch={arch}"]
    proc = subprocess.run([nvcc, *NVCC_OPTIONS, *options, "-cubin", *target, "-Xptxas", "-v", f"-I{include_dir}",
                           "-o", str(cubin), str(cu)], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"nvcc failed for {arch}:\n{proc.stderr.strip()[-2000:]}")
    return cubin, proc.stdout + proc.stderr


def ptxas_report(text: str, arch: str, options: Iterable[str] = ()) -> list[PtxasEntry]:
    """Compile CUDA source ``text`` for ``arch`` (e.g. ``"sm_90"``) with ``nvcc -Xptxas -v`` (and any
    further ``options``, such as a unit's ``-D`` constants) and return ptxas's report per kernel. Needs
    ``nvcc`` only, no GPU: the report is what the compiler decided."""
    with tempfile.TemporaryDirectory() as tmp:
        return parse_ptxas(_nvcc_cubin(text, arch, options, tmp)[1])


def offline_sass(unit: CompileUnit, arch: str, names: Iterable[str]) -> dict[str, str]:
    """The machine code of functions ``names`` of a compile unit compiled by nvcc for ``arch`` (``sm_90``,
    ``sm_90a`` ...), ``{name: listing}``, with no GPU: what :meth:`CompiledFile.sass` shows on a GPU of that
    architecture, from the same compiler. Needs nvcc and cuobjdump (:class:`SassUnavailable` without it)."""
    tools = _disassembler()
    with tempfile.TemporaryDirectory() as tmp:
        cubin, _ = _nvcc_cubin(unit.text, arch, unit.options, tmp, unit.path.parent)
        return {name: _disassemble(tools, cubin, name) for name in names}


def _disassembler() -> tuple[str, str]:
    """The paths of cuobjdump and of nvdisasm, which it runs (both in the toolkit, or NVIDIA's wheels of both)."""
    cuobjdump, nvdisasm = watchdog.find_tool("cuobjdump"), watchdog.find_tool("nvdisasm")
    if cuobjdump is None or nvdisasm is None:
        raise SassUnavailable(NO_CUOBJDUMP)
    return cuobjdump, nvdisasm


def _disassemble(tools: tuple[str, str], cubin: Path, name: str) -> str:
    """``cuobjdump -sass`` of one function of a cubin, with nvdisasm's folder first on its PATH (beside nvcc, or in
    its wheel, it may be on none)."""
    cuobjdump, nvdisasm = tools
    env = {**os.environ, "PATH": os.pathsep.join([os.path.dirname(nvdisasm), os.environ.get("PATH", "")])}
    proc = subprocess.run([cuobjdump, "-sass", "-fun", name, str(cubin)], capture_output=True, text=True, timeout=120, env=env)
    if proc.returncode != 0 or "not found" in proc.stderr:
        raise RuntimeError(f"cuobjdump failed for {name}: {proc.stderr.strip()[:200]}")
    return proc.stdout


def opcodes(sass: str) -> list[str]:
    """The instructions of a SASS listing in program order, each with its suffixes (``LDS.128``, ``HMMA.16816.F32``),
    predicates dropped; ``.U`` (unsigned) is dropped too, so sm_75 and later read alike."""
    ops = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)", sass)
    return [op.replace(".U.", ".").removesuffix(".U") for op in ops]


def opcode_counts(sass: str, prefixes: Iterable[str] = ("LDS", "STS")) -> dict[str, int]:
    """How often each instruction whose opcode starts with one of ``prefixes`` appears in a SASS
    listing (:func:`opcodes`), with its width suffix (``LDS``, ``LDS.128``, ...)."""
    return dict(sorted(collections.Counter(op for op in opcodes(sass) if op.startswith(tuple(prefixes))).items()))


_loaded: dict[tuple, CompiledFile] = {}


def arch() -> str:
    """``sm_XY`` of device 0."""
    drv = gpu.cuda()
    major, minor = drv.Context.get_device().compute_capability()
    return f"sm_{major}{minor}"


def capability(arch: str) -> tuple[int, int]:
    """``(major, minor)`` of an architecture name, what code compiled for it may use: (7, 5) for ``compute_75``,
    (9, 0) for ``sm_90`` or ``sm_90a``, (10, 0) for ``sm_100f`` (:func:`target` may name an older one than the GPU's)."""
    digits = arch.split("_")[1].rstrip("af")
    return int(digits[:-1]), int(digits[-1])


def target() -> str:
    """What the kernels are compiled for: this GPU's ``sm_XY``, or the virtual architecture named by
    ``$GEMMLAB_ARCH``, e.g. ``compute_75``: PTX that the driver JIT-compiles for this GPU, so the
    code a T4 runs (no ``cp.async``) runs on an H200 too."""
    native = arch()
    want = os.environ.get(ARCH_VARIABLE, "").strip()
    if not want or want == native:
        return native
    m = re.fullmatch(r"compute_(\d+)(\d)", want)      # compute_75, compute_90, compute_100
    if m is None:
        raise ValueError(f"{ARCH_VARIABLE}={want!r} is not a virtual architecture: give one such as compute_75, "
                         f"or leave it unset to compile for this GPU ({native}).")
    if (int(m[1]), int(m[2])) > (int(native[3:-1]), int(native[-1])):
        raise ValueError(f"{ARCH_VARIABLE}={want} is newer than this GPU ({native}): its PTX could not run here.")
    return want


def _arch_specific_target(wanted: str) -> str:
    """``wanted`` (e.g. ``sm_90a``) where this GPU and the run allow it, else :class:`gemmlab.gpu.GPUUnavailable`."""
    native = arch()
    if native != wanted.rstrip("a"):
        raise gpu.GPUUnavailable(f"this code uses {wanted} instructions, which only a GPU of compute capability "
                                 f"{wanted[3:-2]}.{wanted[-2]} (Hopper) runs; this one is {native}.")
    if target() != native:
        raise gpu.GPUUnavailable(f"this code uses {wanted} instructions and cannot be compiled for "
                                 f"{ARCH_VARIABLE}={target()}; unset {ARCH_VARIABLE} to run it.")
    return wanted


def build(text: str, options: Iterable[str] = (), include_dirs: Iterable[str] = (),
          arch_specific: str | None = None) -> tuple[str, bytes]:
    """Compile CUDA source ``text`` for :func:`target`: ``(arch, image)``, the image a cubin, or
    NUL-terminated PTX for the driver to JIT-compile where the target is a virtual architecture. With
    ``arch_specific`` (``sm_90a``), a cubin for that architecture alone, on that GPU only."""
    gpu.cuda()
    gpu.require_nvcc()
    from pycuda.compiler import compile as nvcc

    if arch_specific:
        wanted = _arch_specific_target(arch_specific)
        image = nvcc(text, arch=f"compute_{wanted[3:]}", code=wanted, no_extern_c=True,
                     options=[*NVCC_OPTIONS, *options], include_dirs=list(include_dirs), target="cubin")
        return wanted, image
    chosen = target()
    jit = chosen.startswith("compute_")
    image = nvcc(text, arch=chosen, no_extern_c=True, options=[*NVCC_OPTIONS, *options],
                 include_dirs=list(include_dirs), target="ptx" if jit else "cubin")
    if jit:
        image = image.rstrip(b"\0") + b"\0"
    return chosen, image


@functools.lru_cache(maxsize=None)
def _unit_of(what: str | Path | CompileUnit) -> CompileUnit:
    """The unit of a file name, found once: resolving the path costs tens of microseconds, as much as a
    small GEMM, and :func:`load` runs on every launch. (The unit reads the file's text afresh when used.)"""
    return what if isinstance(what, CompileUnit) else compile_units.unit(what)


def load(what: str | Path | CompileUnit, quiet: bool = False) -> CompiledFile:
    """Compile a kernel file (by name or path: its course compile unit) or a
    :class:`~gemmlab.compile_units.CompileUnit` for this GPU (or for :func:`target`'s virtual
    architecture), once per process and version of the file, and print its provenance line.

    The line carries the hash of the file handed to the compiler and of what Python added to it, so it
    always names the source that produced the outputs that follow it.
    """
    unit = _unit_of(what)
    st = unit.path.stat()
    key = (unit, st.st_mtime_ns, st.st_size)   # cheap: called on every launch (a unit hashes its cached strings)
    if key in _loaded:
        return _loaded[key]
    import pycuda.driver as drv

    chosen, image = build(unit.text, unit.options, [str(unit.path.parent)], unit.arch_specific)
    compiled = CompiledFile(unit, chosen, drv.module_from_buffer(image), image=image)
    _loaded[key] = compiled
    if not quiet:
        print(compiled.provenance)
    return compiled
