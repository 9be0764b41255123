"""Every kernel file compiles with nvcc, without warnings or register spills, for every supported GPU."""

import re
import shutil
import subprocess

import pytest

from gemmlab.provenance import KERNELS_DIR

ARCHS = ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90"]
SOURCES = sorted(KERNELS_DIR.glob("*.cu"))
NVCC = shutil.which("nvcc")

pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc (the CUDA toolkit) is not installed on this machine")


def entry_points(text: str) -> set[str]:
    """Names of the extern "C" __global__ functions of a source file."""
    names = set(re.findall(r'extern "C"\s+__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\s*\(', text))
    for block in re.findall(r'extern "C"\s*\{(.*?)\n\}', text, re.S):
        names |= set(re.findall(r'__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\s*\(', block))
    return names


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("src", SOURCES, ids=[s.name for s in SOURCES])
def test_compiles_without_spills(src, arch, tmp_path):
    proc = subprocess.run([NVCC, "-std=c++17", "-cubin", f"-arch={arch}", "-Werror", "all-warnings",
                           "-Xptxas", "-v,-warn-spills,-warn-lmem-usage", "-o", str(tmp_path / "k.cubin"), str(src)],
                          capture_output=True, text=True, timeout=300)
    report = proc.stdout + proc.stderr
    assert proc.returncode == 0, report
    compiled = set(re.findall(r"Compiling entry function '(\w+)'", report))
    assert compiled == entry_points(src.read_text()), "every extern \"C\" kernel is compiled, and only those"
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", report)
    assert len(spills) == len(compiled)
    assert all(s == ("0", "0") for s in spills), f"register spills for {arch}:\n{report}"
    assert "warning" not in report.lower(), report


def test_every_source_opens_with_what_it_computes():
    for src in SOURCES:
        head = src.read_text().splitlines()[:3]
        assert all(line.startswith("//") for line in head[:2]), f"{src.name} starts with two comment lines"
