"""Running code that may hang or break the CUDA context in a child process, under a timeout.

A kernel that deadlocks never returns, and a kernel that faults poisons the CUDA context of the
process that launched it. :func:`run_isolated` runs such code in a fresh Python process of its own
session, waits at most ``timeout_s`` seconds, and kills the whole process group if it is still
running, so the notebook that asked always gets an answer.
"""

from __future__ import annotations

import os
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


def run_isolated(code: str, timeout_s: float = 30.0) -> Outcome:
    """Run ``python -c code`` with the course on its path; kill it (and its children) after ``timeout_s``."""
    if timeout_s <= 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s}")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(provenance.ROOT), os.environ.get("PYTHONPATH")])))
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return Outcome("timeout", time.monotonic() - start, None, out, err)
    status = "ok" if proc.returncode == 0 else "error"
    return Outcome(status, time.monotonic() - start, proc.returncode, out, err)


SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")


@dataclass(frozen=True)
class SanitizerReport:
    tool: str
    errors: int | None          # None when the tool could not run
    note: str

    def __str__(self) -> str:
        return f"{self.tool}: {self.errors} errors" if self.errors is not None else f"{self.tool}: {self.note}"


def run_sanitized(tool: str, code: str, timeout_s: float = 300.0) -> SanitizerReport:
    """Run ``python -c code`` under ``compute-sanitizer --tool TOOL`` in a child process (watchdog
    included) and return how many errors it reported."""
    import re
    import shutil

    if tool not in SANITIZER_TOOLS:
        raise ValueError(f"tool must be one of {', '.join(SANITIZER_TOOLS)}, got {tool!r}")
    exe = shutil.which("compute-sanitizer") or next(
        (p for p in ("/usr/local/cuda/bin/compute-sanitizer",) if os.path.exists(p)), None)
    if exe is None:
        return SanitizerReport(tool, None, "compute-sanitizer is not installed on this machine")
    wrapper = (f"import subprocess, sys; r = subprocess.run([{exe!r}, '--tool={tool}', sys.executable, '-c', {code!r}], "
               "capture_output=True, text=True); print(r.stdout); print(r.stderr, file=sys.stderr); sys.exit(r.returncode)")
    outcome = run_isolated(wrapper, timeout_s)
    if outcome.status == "timeout":
        return SanitizerReport(tool, None, str(outcome))
    m = re.search(r"(?:ERROR SUMMARY: (\d+) error|RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) error)", outcome.stdout)
    if m is None:
        return SanitizerReport(tool, None, f"no summary in its output ({str(outcome)})")
    return SanitizerReport(tool, int(m.group(1) or m.group(2)), "")
