"""Every kernel file compiles with nvcc, as gemmlab compiles it (its compile unit: the file, the constants
and the generated entry points), without warnings or register spills, for every supported GPU; and the
compiler refuses exactly the fast-kernel configurations that gemmlab.gemm.fast_configs refuses. Each unit is
compiled once for all its architectures and cached (tests/nvcc_cache.py); each architecture's own part of
ptxas' report is checked by its own test."""

import re
from concurrent.futures import ThreadPoolExecutor

import pytest

import nvcc_cache
from gemmlab.gemm import fast_configs, units
from gemmlab.runtime.compiler import CompileUnit
from gemmlab.gemm.fast_configs import FastConfig

UNITS = units.all_units()

# Skips where nvcc is missing, or fails there under GEMMLAB_STRICT_TOOLS=1 (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("nvcc_path")


GLOBAL = r'__global__\s+void\s+(?:__\w+__\([^)]*\)\s+)*(\w+)\s*\('
"""A kernel's name after ``__global__ void`` and its attributes (``__launch_bounds__(...)``, ``__cluster_dims__(...)``)."""


def entry_points(text: str) -> set[str]:
    """Names of the extern "C" __global__ functions of a source text."""
    names = set(re.findall(r'extern "C"\s+' + GLOBAL, text))
    for block in re.findall(r'extern "C"\s*\{(.*?)\n\}', text, re.S):
        names |= set(re.findall(GLOBAL, block))
    return names


def sm_80(unit: CompileUnit) -> nvcc_cache.Build:
    """A unit compiled for sm_80 alone, as the reader's nvcc would compile it (cached too)."""
    return nvcc_cache.builds(unit.text, ["sm_80"], ["-std=c++17", *unit.options], unit.path.parent, unit.path.stem)["sm_80"]


# Each file for every supported GPU, or, where it uses one architecture's own instructions, for that one alone.
TARGETS = [(u, a) for u in UNITS for a in nvcc_cache.targets(u)]


@pytest.mark.parametrize("unit, arch", TARGETS, ids=[f"{u.path.name}-{a}" for u, a in TARGETS])
def test_compiles_without_spills(unit, arch):
    build = nvcc_cache.unit_build(unit, arch)          # with -Werror all-warnings -Xptxas -v,-warn-spills,-warn-lmem-usage
    report = build.report
    assert build.returncode == 0, report
    compiled = set(re.findall(r"Compiling entry function '(\w+)'", report))
    assert compiled == entry_points(unit.text), "every extern \"C\" kernel is compiled, and only those"
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", report)
    assert len(spills) == len(compiled)
    assert all(s == ("0", "0") for s in spills), f"register spills for {arch}:\n{report}"
    assert "warning" not in report.lower(), report
    # ptxas reports (as info, not a warning) when it must serialise wgmma because other instructions touch their
    # accumulators in flight: the kernel stays correct but loses the overlap chapter 9 is about.
    assert "Performance Loss" not in report, report


def test_hopper_files_compile_for_sm_90a_alone():
    assert [(u.path.name, u.arch_specific) for u in UNITS if u.arch_specific] == [("09_hopper.cu", "sm_90a")]


def test_every_configuration_is_compiled():
    unit = units.unit(fast_configs.SOURCE)
    assert entry_points(unit.text) == {c.function for c in fast_configs.CONFIGS}


def test_every_source_opens_with_what_it_computes():
    for unit in UNITS:
        head = unit.file_text.splitlines()[:3]
        assert all(line.startswith("//") for line in head[:2]), f"{unit.path.name} starts with two comment lines"


def test_probes_need_the_constant_that_python_owns():
    """00_probes.cu takes FMA_CHAINS from gemmlab; without it, it refuses to compile and says why."""
    unit = units.unit("00_probes.cu")
    assert unit.options == [f"-DFMA_CHAINS={units.FMA_CHAINS}"]
    build = sm_80(CompileUnit(unit.path))
    assert build.returncode != 0 and "-DFMA_CHAINS" in build.stderr


# A valid configuration and one per rule of FastConfig.problems: each compiled alone for sm_80.
AGREEMENT = [
    FastConfig(64, 128, 8, 32, 64, 8, 8, MIN_BLOCKS=4),                        # valid
    FastConfig(128, 128, 8, 32, 32, 8, 8),                                     # 16 thread tiles per warp
    FastConfig(128, 128, 8, 32, 64, 6, 8),                                     # TM not a multiple of 4
    FastConfig(128, 128, 8, 48, 64, 8, 8),                                     # WM does not divide BM
    FastConfig(128, 256, 8, 8, 256, 8, 8),                                     # WM/TM = 1, odd
    FastConfig(256, 256, 8, 32, 32, 4, 8),                                     # 2048 threads
    FastConfig(128, 128, 6, 32, 64, 8, 8),                                     # BK not a multiple of 4
    FastConfig(64, 128, 12, 32, 64, 8, 8),                                     # 192 float4 of A over 128 threads
    FastConfig(256, 256, 16, 64, 64, 8, 16),                                   # 65,792 bytes of static shared memory
    FastConfig(128, 128, 16, 32, 64, 8, 8, STORE=16),                          # STORE outside the tile
    FastConfig(128, 128, 16, 32, 64, 8, 8, STAGES=1, ASYNC=True),              # cp.async needs two stages
    FastConfig(128, 128, 64, 32, 64, 8, 8, STAGES=1),                          # skew needs BK <= 32
    FastConfig(128, 128, 16, 32, 64, 8, 8, GROUP=0),                           # no swizzle group
]


def test_the_compiler_refuses_exactly_what_python_refuses():
    source = units.unit(fast_configs.SOURCE).path

    def compiles(config):
        return sm_80(CompileUnit(source, fast_configs.entry_points([config]))).returncode == 0

    with ThreadPoolExecutor(max_workers=4) as pool:
        verdicts = list(pool.map(compiles, AGREEMENT))
    python = [not c.problems() for c in AGREEMENT]
    assert python.count(True) == 1 and python[0], "the list holds one valid configuration, first"
    disagree = [(c.label, p, v) for c, p, v in zip(AGREEMENT, python, verdicts) if p != v]
    assert not disagree, f"gemmlab and nvcc disagree (config, python says it compiles, nvcc compiled it): {disagree}"
