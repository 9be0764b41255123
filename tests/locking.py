"""A file lock (``fcntl.flock``), for what the processes of one test run share: pytest-xdist's workers build the book
once between them (tests/conftest.py) and each compile unit once (tests/nvcc_cache.py)."""

from __future__ import annotations

import contextlib
import fcntl
from pathlib import Path
from typing import Iterator


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created where missing) while the block runs; another process that asks
    for it waits until then."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
