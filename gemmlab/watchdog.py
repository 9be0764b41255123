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
