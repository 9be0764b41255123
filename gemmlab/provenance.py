"""Provenance lines: what ties a stored notebook output to the kernel source that produced it.

Every compiled kernel file prints one line ``[gemmlab] kernels/NAME.cu sha256:<12 hex> sm_XY``.
The freshness test reads these lines back from the notebooks' stored outputs and compares
the hashes with the files as they are now. Pure Python: usable with no GPU.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNELS_DIR = ROOT / "kernels"
HASH_CHARS = 12

LINE_RE = re.compile(r"\[gemmlab\] (?P<path>kernels/[\w.\-]+\.cu) sha256:(?P<sha>[0-9a-f]{%d})\b" % HASH_CHARS)


def kernel_path(name: str | Path) -> Path:
    """Resolve ``"00_probes.cu"``, ``"kernels/00_probes.cu"`` or an absolute path to a file."""
    p = Path(name)
    if not p.is_absolute():
        p = KERNELS_DIR / p.name if p.parent in (Path("."), Path("kernels")) else ROOT / p
    if not p.is_file():
        raise FileNotFoundError(f"no kernel source at {p}")
    return p


def display_path(path: Path) -> str:
    """``kernels/NAME.cu`` for files in the course, the absolute path otherwise."""
    try:
        return path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def short_sha(text: str) -> str:
    """The first 12 hex digits of the sha256 of a source text (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_CHARS]


def file_sha(path: str | Path) -> str:
    return short_sha(kernel_path(path).read_text(encoding="utf-8"))


def line(path: str | Path, arch: str) -> str:
    """The provenance line for one compiled file."""
    p = kernel_path(path)
    return f"[gemmlab] {display_path(p)} sha256:{file_sha(p)} {arch}"


def find(text: str) -> list[tuple[str, str]]:
    """Every ``(path, sha)`` pair mentioned by provenance lines in ``text``."""
    return [(m["path"], m["sha"]) for m in LINE_RE.finditer(text)]


def stale(text: str, root: Path = ROOT) -> list[str]:
    """Describe every provenance line in ``text`` whose hash no longer matches the file under ``root``."""
    problems = []
    for path, sha in find(text):
        f = root / path
        if not f.is_file():
            problems.append(f"{path}: the output names a kernel file that no longer exists")
            continue
        now = short_sha(f.read_text(encoding="utf-8"))
        if now != sha:
            problems.append(f"{path}: output has sha256:{sha}, the file now has sha256:{now}")
    return problems
