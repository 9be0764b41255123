"""Installing PyCUDA on Colab, for the chapters' setup cell: the release's wheel where it has one, else a build.

PyCUDA publishes no wheels, so pip builds it from source against the CUDA toolkit, which takes minutes on
Colab's two cores. The course's release workflow (``.github/workflows/release.yml``) builds a wheel for Colab's
Python and CUDA major and attaches it to the GitHub release; :func:`install_pycuda` installs that wheel when the
release has one for the running Python, in seconds. Otherwise it says first that it will build from source and
how long that takes, then shows pip's progress as it goes. Needs no GPU (it runs before PyCUDA exists).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Callable

PYCUDA_VERSION = "2026.1"
"""The PyCUDA release the course pins (``requirements-gpu.txt`` and the extras of ``pyproject.toml`` agree)."""

PYCUDA = f"pycuda=={PYCUDA_VERSION}"


def wheel_name(python: tuple[int, int] | None = None, version: str = PYCUDA_VERSION) -> str:
    """The file name pip gives a PyCUDA wheel built for CPython ``python`` (default: this one) on x86-64 Linux,
    as the release workflow attaches it."""
    major, minor = python or sys.version_info[:2]
    tag = f"cp{major}{minor}"
    return f"pycuda-{version}-{tag}-{tag}-linux_x86_64.whl"


def wheel_url(repo_url: str, release: str, python: tuple[int, int] | None = None) -> str:
    """Where the release ``release`` of the repository ``repo_url`` (``https://github.com/owner/name``) keeps the
    wheel for ``python``."""
    return f"{repo_url.rstrip('/')}/releases/download/{release}/{wheel_name(python)}"


def exists(url: str, timeout_s: float = 20) -> bool:
    """Whether ``url`` answers a HEAD request (after redirects) with success; False on 404 or no network."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout_s) as answer:
            return 200 <= answer.status < 300
    except (urllib.error.URLError, TimeoutError, ValueError):
        return False


def _pip(args: list[str], say: Callable[[str], object]) -> tuple[bool, str]:
    """``pip install ARGS`` with its output passed to ``say`` line by line as it comes (a notebook shows lines
    printed in Python, not the output of a child process): (success, pip's last line)."""
    proc = subprocess.Popen([sys.executable, "-m", "pip", "install", "--progress-bar", "off", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    last = "no message"
    for line in proc.stdout or ():
        line = line.rstrip()
        if line:
            say(line)
            last = line
    return proc.wait() == 0, last


def install_pycuda(repo_url: str, release: str, say: Callable[[str], object] = print,
                   has_wheel: Callable[[str], bool] = exists) -> str:
    """Install PyCUDA for this Python: ``"present"`` where it is already importable, ``"wheel"`` where release
    ``release`` has a wheel for this Python (seconds), ``"source"`` after a build from the source distribution
    (minutes: said first, then pip's progress). Stops with one sentence (``SystemExit``) where pip fails."""
    if importlib.util.find_spec("pycuda") is not None:
        return "present"
    start = time.monotonic()
    url = wheel_url(repo_url, release)
    if has_wheel(url):
        ok, why = _pip(["--quiet", url], say)
        how = "wheel"
    else:
        say(f"Release {release} has no PyCUDA wheel for Python {sys.version_info[0]}.{sys.version_info[1]}: "
            f"building {PYCUDA} from source, which takes 3 to 4 minutes on Colab (once per runtime).")
        ok, why = _pip([PYCUDA], say)
        how = "source"
    if not ok:
        raise SystemExit(f"Could not install PyCUDA {PYCUDA_VERSION} ({why}): run this cell again, "
                         "or restart the runtime first.")
    say(f"PyCUDA {PYCUDA_VERSION} installed from {'the release wheel' if how == 'wheel' else 'source'} "
        f"in {time.monotonic() - start:.0f} s.")
    return how
