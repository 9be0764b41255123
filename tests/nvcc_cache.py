"""nvcc builds shared by every CPU test that compiles the course's kernels, one per (source, architecture, nvcc).

A compile unit is compiled for all its architectures in one nvcc call (``-gencode`` for each, ``--threads 0``),
with the checks the compile test reads (``-Werror all-warnings``, ptxas' ``-v``, ``-warn-spills`` and
``-warn-lmem-usage``) and gemmlab's own options (``gemmlab.runtime.compiler.NVCC_OPTIONS``). Each architecture's
result, its return code, its part of the compiler's report and its cubin, is stored under ``_build/nvcc-cache/``
(ignored by git), keyed by the sha256 of the source text, of the files it ``#include``s from the kernel folder, of
the options, of the architecture and of the output of ``nvcc --version``. The compile test
(tests/test_kernels_compile.py), the SASS claims (tests/test_sass.py), the Hopper steps' comparison
(tests/test_hopper_steps.py), the kernel solutions (tests/test_notebooks.py, tests/test_exercises.py) and the other
ptxas checks read the same builds, so a clean checkout (CI) compiles each unit once for each architecture, and a
second local run compiles nothing.

nvcc runs ptxas once per architecture and prints each run's report whole, each entry function named with its
architecture (``Compiling entry function 'k' for 'sm_80'``): that is how the report is split. Where nvcc fails, or
its output cannot be split that way, each architecture is compiled on its own instead, so that every architecture
gets exactly its own report and return code. Builds of one source are serialised by a file lock, so pytest-xdist's
workers share them too.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from gemmlab.runtime import compiler, gpu
from gemmlab.runtime.compiler import CompileUnit
from locking import file_lock

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "_build" / "nvcc-cache"
KERNELS = ROOT / "kernels"

ARCHS = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90")
"""Every GPU the course supports: each kernel file compiles for all of them (those in ARCH_SPECIFIC, theirs alone)."""

CHECKS = ("-Werror", "all-warnings", "-Xptxas", "-v,-warn-spills,-warn-lmem-usage")
"""What the compile test asks of nvcc and ptxas: no warning of either, and ptxas' resource report."""

UNIT_OPTIONS = (*compiler.NVCC_OPTIONS, *CHECKS)
"""The options of a course unit's build: gemmlab's own, as it compiles on a GPU, and the checks."""

SOLUTION_OPTIONS = ("-std=c++17", *CHECKS)
"""The options of a kernel solution's build (a chapter's exercise; the reader compiles it with nvcc's defaults)."""

TIMEOUT_S = 900
NICE = ("nice", "-n", "10")
"""nvcc runs at a lower priority: its builds fill the cores that the tests which wait on a browser leave idle, and
do not slow those tests past their timeouts."""
ENTRY = re.compile(r"Compiling entry function '\w+' for '(\w+)'")


@dataclass(frozen=True)
class Build:
    """One source compiled for one architecture: nvcc's return code, its output for that architecture (ptxas'
    report among it) and the cubin, where it compiled."""

    arch: str
    returncode: int
    stdout: str
    stderr: str
    cubin: Path | None

    @property
    def report(self) -> str:
        return self.stdout + self.stderr

    def succeeded(self) -> Build:
        if self.returncode != 0 or self.cubin is None:
            raise AssertionError(f"nvcc failed for {self.arch} (exit {self.returncode}):\n{self.report[-4000:]}")
        return self

    def entries(self) -> list[compiler.PtxasEntry]:
        """ptxas' report, one entry per kernel (what ``gemmlab.runtime.compiler.ptxas_report`` returns)."""
        return compiler.parse_ptxas(self.succeeded().report)

    def sass(self, names: Iterable[str]) -> dict[str, str]:
        """The machine code of functions ``names``, as cuobjdump disassembles this cubin."""
        return compiler.disassemble(self.succeeded().cubin, names)


def targets(unit: CompileUnit) -> tuple[str, ...]:
    """The architectures a unit compiles for: every supported GPU, or the one whose own instructions it uses."""
    return (unit.arch_specific,) if unit.arch_specific else ARCHS


def unit_builds(unit: CompileUnit) -> dict[str, Build]:
    """A course unit compiled as gemmlab compiles it, with the checks, for each of its architectures."""
    return builds(unit.text, targets(unit), (*UNIT_OPTIONS, *unit.options), unit.path.parent, unit.path.stem)


def unit_build(unit: CompileUnit, arch: str) -> Build:
    """:func:`unit_builds` for one of the unit's architectures (all of them are built together, once)."""
    return unit_builds(unit)[arch]


def solution_builds(source: str) -> dict[str, Build]:
    """A kernel solution's CUDA source compiled for every supported GPU."""
    return builds(source, ARCHS, SOLUTION_OPTIONS, None, "solution")


def executable(text: str, options: Iterable[str], include_dir: Path = KERNELS, name: str = "program") -> Path:
    """A host program nvcc compiled from ``text`` (for tests that run a kernel file's host-side code), cached under the
    same key as the kernels' builds."""
    options = tuple(options)
    key = _key(text, includes(text, include_dir), options, nvcc_version(), "executable")
    folder = CACHE / key[:32]
    with _lock(key):
        if not (folder / name).is_file():
            def fill(tmp: Path) -> None:
                cu = tmp / f"{name}.cu"
                cu.write_text(text, encoding="utf-8")
                subprocess.run([*NICE, nvcc(), *options, f"-I{include_dir}", "-o", str(tmp / name), str(cu)],
                               check=True, timeout=TIMEOUT_S)
            _publish(folder, fill)
    return folder / name


@functools.cache
def nvcc() -> str:
    """nvcc's path, found as gemmlab finds it (tests that compile ask for the nvcc_path fixture first)."""
    return gpu.require_nvcc()


@functools.cache
def nvcc_version() -> str:
    return subprocess.run([nvcc(), "--version"], capture_output=True, text=True, check=True, timeout=60).stdout


def includes(text: str, include_dir: Path | None) -> list[tuple[str, str]]:
    """(name, sha256) of every file of ``include_dir`` that ``text`` includes with quotes, and of theirs."""
    found: dict[str, str] = {}
    todo = [text]
    while include_dir is not None and todo:
        for name in re.findall(r'^\s*#\s*include\s+"([^"]+)"', todo.pop(), re.M):
            path = include_dir / name
            if name not in found and path.is_file():
                body = path.read_text(encoding="utf-8")
                found[name] = hashlib.sha256(body.encode()).hexdigest()
                todo.append(body)
    return sorted(found.items())


def _key(*parts) -> str:
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def _lock(key: str):
    """One process at a time builds a given source: pytest-xdist's workers wait for each other's build."""
    return file_lock(CACHE / ".locks" / f"{key[:24]}.lock")


_memo: dict[str, Build] = {}


def builds(text: str, archs: Iterable[str], options: Iterable[str], include_dir: Path | None = KERNELS,
           name: str = "kernel") -> dict[str, Build]:
    """``text`` compiled with ``options`` for each of ``archs``: from the cache, or by one nvcc call for all those
    not cached yet (``name`` is only written beside each build, for a reader of the cache)."""
    archs, options = tuple(archs), tuple(options)
    source = _key(text, includes(text, include_dir), options, nvcc_version())
    folders = {a: CACHE / _key(source, a)[:32] for a in archs}
    with _lock(source):
        missing = [a for a in archs if _load(folders[a]) is None]
        if missing:
            with tempfile.TemporaryDirectory(prefix="nvcc-") as tmp:
                for arch, (rc, out, err, cubin) in _compile(text, missing, options, include_dir, Path(tmp)).items():
                    _store(folders[arch], Build(arch, rc, out, err, cubin), name)
        return {a: _load(folders[a]) for a in archs}


def _compile(text: str, archs: list[str], options: tuple[str, ...], include_dir: Path | None,
             tmp: Path) -> dict[str, tuple[int, str, str, Path | None]]:
    """One nvcc call for all of ``archs``: each architecture's return code, output and cubin (``-keep`` leaves one
    cubin per architecture). Compiles each alone where that call fails or its report does not split cleanly."""
    cu = tmp / "kernel.cu"
    cu.write_text(text, encoding="utf-8")
    gencode = [f"-gencode=arch=compute_{a[3:]},code={a}" for a in archs]
    out = tmp / ("all" if len(archs) > 1 else archs[0])
    out.mkdir()
    if len(archs) == 1:
        cubins = {archs[0]: out / "kernel.cubin"}
        target = ["-cubin", *gencode, "-o", str(cubins[archs[0]])]
    else:                             # -keep leaves each architecture's cubin, named after its virtual architecture
        cubins = {a: out / f"kernel.compute_{a[3:]}.cubin" for a in archs}
        target = ["-fatbin", *gencode, "--threads", "0", "-keep", f"-keep-dir={out}", "-o", str(out / "kernel.fatbin")]
    proc = subprocess.run([*NICE, nvcc(), *options, *target, *([f"-I{include_dir}"] if include_dir else []), str(cu)],
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    if proc.returncode < 0:           # killed: no verdict on the source, nothing to cache
        raise RuntimeError(f"nvcc was killed by signal {-proc.returncode}:\n{proc.stderr[-2000:]}")
    if len(archs) == 1:
        ok = proc.returncode == 0 and cubins[archs[0]].is_file()
        return {archs[0]: (proc.returncode, proc.stdout, proc.stderr, cubins[archs[0]] if ok else None)}
    parts = split_report(proc.stderr, archs) if proc.returncode == 0 and not proc.stdout.strip() else None
    if parts is None or not all(c.is_file() for c in cubins.values()):
        return {a: r for arch in archs for a, r in _compile(text, [arch], options, include_dir, tmp).items()}
    return {a: (0, "", parts[a], cubins[a]) for a in archs}


def split_report(report: str, archs: Iterable[str]) -> dict[str, str] | None:
    """ptxas' report of a multi-architecture nvcc call that succeeded, by architecture; None where it does not split
    cleanly (an architecture without kernels while others have some, one not asked for, or two whose lines are
    interleaved). A run's first lines (``0 bytes gmem``) precede its first entry function and go with it."""
    archs = tuple(archs)
    parts: dict[str, list[str]] = {a: [] for a in archs}
    order: list[str] = []
    pending: list[str] = []
    for line in report.splitlines(keepends=True):
        entry = ENTRY.search(line)
        if entry:
            arch = entry.group(1)
            if arch not in parts:
                return None
            if not order or order[-1] != arch:
                if arch in order:                  # a second run of lines for one architecture: interleaved
                    return None
                order.append(arch)
            parts[arch] += pending
            pending = []
            parts[arch].append(line)
        elif re.search(r"bytes gmem", line) or not order:
            pending.append(line)
        else:
            parts[order[-1]].append(line)
    if not order:                     # no kernel for any architecture (a file of templates): nothing to split
        return {a: report for a in archs}
    if pending or sorted(order) != sorted(archs):
        return None
    return {a: "".join(lines) for a, lines in parts.items()}


def _store(folder: Path, build: Build, name: str) -> None:
    def fill(tmp: Path) -> None:
        if build.cubin is not None:
            shutil.copyfile(build.cubin, tmp / "kernel.cubin")
        (tmp / "build.json").write_text(json.dumps({"name": name, "arch": build.arch, "returncode": build.returncode,
                                                    "stdout": build.stdout, "stderr": build.stderr}))
    _publish(folder, fill)


def _publish(folder: Path, fill: Callable[[Path], None]) -> None:
    """Fill a new folder and rename it into place: a cache entry is whole, or not there."""
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".new-", dir=CACHE))
    try:
        fill(tmp)
        os.rename(tmp, folder)
    except OSError:                   # already there: the same build, stored by another process
        if not folder.is_dir():
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _load(folder: Path) -> Build | None:
    if folder.name in _memo:
        return _memo[folder.name]
    try:
        data = json.loads((folder / "build.json").read_text())
    except (OSError, ValueError):
        return None
    cubin = folder / "kernel.cubin"
    if data["returncode"] == 0 and not cubin.is_file():
        return None                   # incomplete: built again
    build = Build(data["arch"], data["returncode"], data["stdout"], data["stderr"], cubin if cubin.is_file() else None)
    _memo[folder.name] = build
    return build
