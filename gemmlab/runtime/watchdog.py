"""Running code that may hang or break the CUDA context in a child process, under a timeout.

A kernel that deadlocks never returns, and a kernel that faults poisons the CUDA context of the
process that launched it. :func:`run_isolated` runs such code in a fresh Python process of its own
session, waits at most ``timeout_s`` seconds, and kills the whole process group if it is still
running, so the notebook that asked always gets an answer.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

from . import provenance


@dataclass(frozen=True)
class Outcome:
    status: str          # "ok", "error" (non-zero exit) or "timeout" (killed by the watchdog)
    seconds: float
    returncode: int | None
    stdout: str
    stderr: str

    def __str__(self) -> str:
        if self.status == "timeout":
            return f"hung: no answer after {self.seconds:.1f} s, so the watchdog killed the child process"
        if self.status == "error":
            last = next((l for l in reversed(self.stderr.splitlines()) if l.strip()), "")
            return f"failed in {self.seconds:.1f} s (exit {self.returncode}): {last.strip()[:200]}"
        return f"finished in {self.seconds:.1f} s"


def child_env() -> dict[str, str]:
    """The environment of every child process gemmlab starts: this one's, with the course first on
    ``PYTHONPATH`` (so the child imports the same gemmlab) and no empty entry (which would add the
    child's working directory)."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(provenance.ROOT), os.environ.get("PYTHONPATH")])))


def run_command(args: list[str], timeout_s: float) -> Outcome:
    """Run ``args`` in a process session of its own with :func:`child_env`; kill the whole group after ``timeout_s``."""
    if timeout_s <= 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s}")
    start = time.monotonic()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env(),
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return Outcome("timeout", time.monotonic() - start, None, out, err)
    status = "ok" if proc.returncode == 0 else "error"
    return Outcome(status, time.monotonic() - start, proc.returncode, out, err)


def run_isolated(code: str, timeout_s: float = 30.0) -> Outcome:
    """Run ``python -c code`` with the course on its path; kill it (and its children) after ``timeout_s``."""
    return run_command([sys.executable, "-c", code], timeout_s)


SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
#: What a sanitizer cell says where compute-sanitizer is missing.
NO_SANITIZER = ("compute-sanitizer (part of the CUDA toolkit) is not installed here, so nothing was checked: "
                "the stored outputs show what it reports on the H200")


@dataclass(frozen=True)
class SanitizerReport:
    tool: str
    errors: int | None          # None when the tool could not run
    note: str
    program_ok: bool = True     # the program under the tool exited with 0

    def __str__(self) -> str:
        if self.errors is None:
            return f"{self.tool}: {self.note}"
        return f"{self.tool}: {self.errors} errors" + ("" if self.program_ok else f" ({self.note})")


def find_tool(name: str, *more_places: str) -> str | None:
    """Path of the command ``name``: on PATH, else beside ``nvcc`` (the CUDA tools are often installed
    but not on PATH; they live in the toolkit's ``bin`` with the compiler), else in NVIDIA's wheels of the
    tools (``pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm``: ``nvidia/cu13/bin`` on Python's path),
    else the first of ``more_places`` that exists, else None. A machine that lacks the tool gets None, and the
    caller says so in one sentence."""
    found = shutil.which(name)
    if found:
        return found
    nvcc = shutil.which("nvcc")
    beside = [os.path.join(os.path.dirname(os.path.realpath(nvcc)), name)] if nvcc else []
    wheels = [os.path.join(d, name) for d in wheel_bins()]
    return next((p for p in [*beside, *wheels, *more_places] if os.path.isfile(p) and os.access(p, os.X_OK)), None)


def wheel_bins() -> list[str]:
    """The ``bin`` folders of NVIDIA's CUDA tool wheels on Python's path, the newest CUDA major first."""
    found = []
    for base in sys.path:
        found += sorted(glob.glob(os.path.join(base or ".", "nvidia", "cu[0-9]*", "bin")), reverse=True)
    return list(dict.fromkeys(found))


def find_sanitizer() -> str | None:
    """Path of ``compute-sanitizer`` (on PATH or in the CUDA toolkit beside nvcc), or None."""
    return find_tool("compute-sanitizer")


def run_sanitized(tool: str, code: str, timeout_s: float = 300.0) -> SanitizerReport:
    """Run ``python -c code`` under ``compute-sanitizer --tool TOOL`` in a child process (watchdog
    included) and return how many errors it reported. The one sanitizer path of the course: chapter 3
    and the GPU tests use it."""
    if tool not in SANITIZER_TOOLS:
        raise ValueError(f"tool must be one of {', '.join(SANITIZER_TOOLS)}, got {tool!r}")
    exe = find_sanitizer()
    if exe is None:
        return SanitizerReport(tool, None, NO_SANITIZER)
    outcome = run_command([exe, f"--tool={tool}", sys.executable, "-c", code], timeout_s)
    if outcome.status == "timeout":
        return SanitizerReport(tool, None, str(outcome))
    m = re.search(r"(?:ERROR SUMMARY: (\d+) error|RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) error)", outcome.stdout)
    if m is None:
        return SanitizerReport(tool, None, f"no summary in its output ({str(outcome)})")
    failed = "" if outcome.status == "ok" else f"the program itself {outcome}"
    return SanitizerReport(tool, int(m.group(1) or m.group(2)), failed, program_ok=outcome.status == "ok")
