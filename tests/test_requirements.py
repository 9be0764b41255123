"""Requirements a user can install: one Python floor, one PyCUDA pin, CuPy per CUDA major, a lock
that covers what the extras declare, and the runtime and book requirements resolving on the floor."""

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from gemmlab.runtime import colab
from notebook_tools import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]
EXTRAS = PROJECT["optional-dependencies"]


def floor() -> tuple[int, int]:
    m = re.fullmatch(r">=(\d+)\.(\d+)", PROJECT["requires-python"])
    assert m, "requires-python is a plain floor, >=3.X"
    return int(m[1]), int(m[2])


def pins(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-]+)==(\S+)", line)
        if m:
            out[m[1].lower().replace("_", "-")] = m[2]
    return out


def name(requirement: str) -> str:
    return re.match(r"[A-Za-z0-9_.\-]+", requirement)[0].lower().replace("_", "-")


def test_one_python_floor():
    major, minor = floor()
    readme = (ROOT / "README.md").read_text()
    assert f"Python {major}.{minor} or newer" in readme
    assert not re.search(r"Python 3\.(\d+) or newer", readme.replace(f"Python {major}.{minor} or newer", "")), \
        "the README names one floor"


def test_one_pycuda_pin():
    gpu = pins(ROOT / "requirements-gpu.txt")["pycuda"]
    for extra in ("gpu", "cuda12", "cuda13"):
        assert f"pycuda=={gpu}" in EXTRAS[extra], f"the {extra} extra pins PyCUDA {gpu}, as requirements-gpu.txt does"
    assert colab.PYCUDA == f"pycuda=={gpu}", "the Colab setup cell installs the pinned PyCUDA (gemmlab.runtime.colab)"


def test_cupy_is_named_per_cuda_major():
    assert any(name(r) == "cupy-cuda12x" for r in EXTRAS["cuda12"])
    assert any(name(r) == "cupy-cuda13x" for r in EXTRAS["cuda13"])


def test_the_lock_pins_everything_the_book_and_test_extras_declare():
    lock = pins(ROOT / "requirements.txt")
    declared = {name(r) for extra in ("book", "test") for r in EXTRAS[extra] if not r.startswith("gemmlab")}
    declared |= {name(r) for r in PROJECT["dependencies"]}
    assert not declared - set(lock), f"requirements.txt does not pin {sorted(declared - set(lock))}"


def test_the_gpu_requirements_are_the_runner_extra_pinned():
    gpu = pins(ROOT / "requirements-gpu.txt")
    assert {name(r) for r in EXTRAS["runner"]} <= set(gpu), "requirements-gpu.txt pins every tool of the runner extra"
    assert "-r requirements.txt" not in (ROOT / "requirements-gpu.txt").read_text(), \
        "the GPU runner does not need the book's lock"


def floor_python() -> str | None:
    major, minor = floor()
    if sys.version_info[:2] == (major, minor):
        return sys.executable
    found = shutil.which(f"python{major}.{minor}")
    pyenv = sorted(Path.home().glob(f".pyenv/versions/{major}.{minor}.*/bin/python3"))
    return found or (str(pyenv[-1]) if pyenv else None)


@pytest.mark.slow
def test_runtime_and_book_requirements_resolve_on_the_floor_python(tmp_path, skip_or_fail):
    """pip resolves gemmlab with its book extra (ranges) and the lock, on the oldest Python the README names."""
    python = floor_python()
    if python is None:
        skip_or_fail(f"no Python {'.'.join(map(str, floor()))} on this machine to try the install on")
    version = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True).stdout.strip()
    assert version == "%d.%d" % floor()
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1")
    for args in ([f"{ROOT}[book]"], ["-r", str(ROOT / "requirements.txt")]):
        proc = subprocess.run([python, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet", *args],
                              capture_output=True, text=True, timeout=900, env=env)
        assert proc.returncode == 0, f"pip install {' '.join(args)} fails on Python {version}:\n{proc.stderr[-3000:]}"
