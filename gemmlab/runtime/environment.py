"""Where outputs came from: the GPU, driver, CUDA toolkit and Python packages of this run.

Chapter 0 prints :func:`versions` and ``python -m gemmlab bench`` stores it in its JSON, so a
stored number can always be traced to the machine and software that produced it. Whatever is
missing is reported as ``"not installed"`` rather than raising: the list is a record, not a check.
"""

from __future__ import annotations

import platform
import re
import shutil
import subprocess
from importlib import metadata

from . import compiler, device, gpu

MISSING = "not installed"


def _package(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return MISSING


def _cupy() -> str:
    """CuPy's version where it imports (its wheel's name says the CUDA major: cupy-cuda12x, ...)."""
    try:
        import cupy
    except ImportError:
        return MISSING
    return cupy.__version__


def _nvcc() -> str:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return MISSING
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
    m = re.search(r"release ([\d.]+), V([\d.]+)", out)
    return m.group(2) if m else out.strip().splitlines()[-1] if out.strip() else "unknown"


def _nvidia_driver() -> str:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return MISSING
    out = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                         text=True, timeout=60).stdout.strip().splitlines()
    return out[0].strip() if out else "unknown"


def versions() -> dict[str, str]:
    """GPU, driver, CUDA toolkit (nvcc), compile target, PyCUDA, CuPy, NumPy and Python, as strings."""
    drv = gpu.cuda()
    spec = device.current()
    v = drv.get_driver_version()                  # e.g. 13000 for CUDA 13.0: what the driver supports
    return {
        "gpu": f"{spec.name} ({spec.arch}, {spec.sms} SMs)",
        "driver": f"{_nvidia_driver()} (supports CUDA {v // 1000}.{v % 1000 // 10})",
        "CUDA toolkit (nvcc)": _nvcc(),
        "kernels compiled for": compiler.target(),
        "PyCUDA": _package("pycuda"),
        "CuPy": _cupy(),
        "NumPy": _package("numpy"),
        "Python": platform.python_version(),
    }
