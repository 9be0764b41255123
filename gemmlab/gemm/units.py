"""What gemmlab hands the compiler for each ``kernels/*.cu`` file: a compile unit.

Most files compile as they are, for the GPU at hand; :data:`ARCH_SPECIFIC` names those that use one
architecture's own instructions and compile for it alone. Four take something that Python owns: ``00_probes.cu`` and
``08_mma_probe.cu`` the number of independent chains of their ceiling probes (``-DFMA_CHAINS``,
``-DMMA_CHAINS``, also used by the host to count FLOPs), and ``07_fast.cu`` and
``08_tensor_core.cu`` their entry points, one per configuration in :data:`gemmlab.gemm.fast_configs.CONFIGS`
and :data:`gemmlab.gemm.tc_configs.CONFIGS`. A :class:`~gemmlab.runtime.compiler.CompileUnit` is the
file plus those, and its provenance line names both: the file's hash and, where Python added
something, the hash of what it added. The CPU compile tests, :func:`load` (a course file by name, compiled
by :func:`gemmlab.runtime.compiler.load`) and the freshness test all build their units here, so they compile exactly
the same text. No GPU needed but to load.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Iterable

from ..runtime import compiler, provenance, tensor_maps
from ..runtime.compiler import CompileUnit
from . import fast_configs, tc_configs

FMA_CHAINS = 8
"""Independent FMA chains per thread in chapter 0's ``fma_f32`` probe."""

MMA_CHAINS = 8
"""Independent ``mma.sync`` accumulators per warp in chapter 8's ``mma_ceiling_*`` probes."""

# Constants that the kernels and the host share, by file (passed as -DNAME=VALUE).
DEFINES: dict[str, dict[str, int]] = {
    "00_probes.cu": {"FMA_CHAINS": FMA_CHAINS},
    "08_mma_probe.cu": {"MMA_CHAINS": MMA_CHAINS},
}

ARCH_SPECIFIC: dict[str, str] = {
    tensor_maps.SOURCE: tensor_maps.ARCH,           # 09_hopper.cu: sm_90a
}
"""The files that use one architecture's own instructions (Hopper's ``wgmma`` needs sm_90a), with that
architecture: they compile for it alone, and only on such a GPU."""

# Entry points generated from named configurations, by file.
GENERATED = {
    fast_configs.SOURCE: lambda: fast_configs.entry_points(fast_configs.CONFIGS),
    tc_configs.SOURCE: lambda: tc_configs.entry_points(tc_configs.CONFIGS),
}


def unit(path: str | Path, configs: Iterable[fast_configs.FastConfig] | None = None) -> CompileUnit:
    """The compile unit of a kernel file; for ``07_fast.cu``, ``configs`` compiles only those
    configurations (by default every one in :data:`gemmlab.gemm.fast_configs.CONFIGS`)."""
    file = provenance.kernel_path(path)
    if configs is None:
        return _course_unit(file)
    if file.name != fast_configs.SOURCE:
        raise ValueError(f"only {fast_configs.SOURCE} takes configurations, not {file.name}")
    checked = tuple(c.validate() for c in configs)
    return CompileUnit(file, fast_configs.entry_points(checked), _defines(file.name), custom=checked != fast_configs.CONFIGS)


def _defines(name: str) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(DEFINES.get(name, {}).items()))


@functools.lru_cache(maxsize=None)
def _course_unit(file: Path) -> CompileUnit:
    """The course's unit of a file, made once per process (it is looked up on every launch); the file's
    own text is read afresh each time it is used."""
    generated = GENERATED[file.name]() if file.name in GENERATED else ""
    return CompileUnit(file, generated, _defines(file.name), arch_specific=ARCH_SPECIFIC.get(file.name))


def _includes_line(name: str) -> str:
    """A comment naming the hash of a kernel file that a unit ``#include``s, so that the unit's configuration hash,
    and with it the provenance line, changes when that file does."""
    return f"// includes {name} sha256:{provenance.file_sha(name)}\n"


ARCH_UNITS = {
    (tc_configs.SOURCE, tc_configs.TMA_WS.ARCH):
        lambda: (_includes_line("09_hopper.cu") + tc_configs.TMA_WS.entry_points(), ((tc_configs.TMA_WS.DEFINE, 1),)),
}
"""The second units of kernel files, keyed by the file's name and an architecture, each giving the generated text and
the constants of a region compiled for that architecture alone (chapter 8's Hopper step, ``TC_TMA_WS``), beside the
file's unit for every GPU."""


@functools.lru_cache(maxsize=None)
def arch_unit(name: str, arch: str) -> CompileUnit:
    """The second unit of the kernel file ``name`` for ``arch`` (:data:`ARCH_UNITS`), e.g. ``08_tensor_core.cu`` for
    sm_90a: the same file, its region for that GPU opened by a constant, its own entry points."""
    file = provenance.kernel_path(name)
    if (file.name, arch) not in ARCH_UNITS:
        raise KeyError(f"{file.name} has no unit of its own for {arch}; those that do: {sorted(ARCH_UNITS)}")
    generated, defines = ARCH_UNITS[(file.name, arch)]()
    return CompileUnit(file, generated, defines, arch_specific=arch)


def config_sha(name: str, arch: str | None = None) -> str | None:
    """The configuration hash gemmlab compiles the file ``name`` with for ``arch`` now: its second unit's for an
    architecture that has one (:func:`arch_unit`), its course unit's otherwise."""
    file = provenance.kernel_path(name)
    return (arch_unit(file.name, arch) if (file.name, arch) in ARCH_UNITS else unit(file)).config_sha


def all_units() -> list[CompileUnit]:
    """Every kernel file of the course, as compiled."""
    return [unit(p) for p in sorted(provenance.KERNELS_DIR.glob("*.cu"))]


def stale(text: str, root: Path = provenance.ROOT) -> list[str]:
    """Every provenance line in ``text`` that no longer describes what gemmlab compiles now: the file
    changed, or the constants and configurations Python adds to it did (see :func:`gemmlab.runtime.provenance.stale`)."""
    return provenance.stale(text, lambda path, arch: config_sha(Path(path).name, arch), root)


@functools.lru_cache(maxsize=None)
def _unit_of(what: str | Path | CompileUnit) -> CompileUnit:
    """The unit of a file name, found once: resolving the path costs tens of microseconds, as much as a
    small GEMM, and :func:`load` runs on every launch. (The unit reads the file's text afresh when used.)"""
    return what if isinstance(what, CompileUnit) else unit(what)


def load(what: str | Path | CompileUnit, quiet: bool = False) -> compiler.CompiledFile:
    """Compile a kernel file of the course (by name or path: its course compile unit) or a :class:`~gemmlab.runtime.compiler.CompileUnit`
    for this GPU, once per process and version of the file, and print its provenance line
    (:func:`gemmlab.runtime.compiler.load`)."""
    return compiler.load(_unit_of(what), quiet)
