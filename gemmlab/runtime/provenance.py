"""Provenance lines: what ties a stored notebook output to the kernel source that produced it.

Every compiled kernel file prints one line ``[gemmlab] kernels/NAME.cu sha256:<12 hex> sm_XY``,
followed by ``config:<12 hex>`` where gemmlab added constants or generated entry points to the file
(:mod:`gemmlab.gemm.units`; `` (custom)`` when they are not the course's own). The freshness
test reads these lines back from the notebooks' stored outputs and compares the hashes with the
files and configurations as they are now. Pure Python: usable with no GPU.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]          # gemmlab/runtime/provenance.py: the repository
KERNELS_DIR = ROOT / "kernels"
HASH_CHARS = 12

LINE_RE = re.compile(r"\[gemmlab\] (?P<path>kernels/[\w.\-]+\.cu) sha256:(?P<sha>[0-9a-f]{%d})\b"
                     r"(?: (?P<arch>\w+))?(?: config:(?P<config>[0-9a-f]{%d})(?P<custom> \(custom\))?)?"
                     % (HASH_CHARS, HASH_CHARS))


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


def format_line(path: Path, sha: str, arch: str, config_sha: str | None = None, custom: bool = False) -> str:
    """The provenance line for one compiled unit."""
    config = f" config:{config_sha}" + (" (custom)" if custom else "") if config_sha else ""
    return f"[gemmlab] {display_path(path)} sha256:{sha} {arch}{config}"


@dataclass(frozen=True)
class Mention:
    """One provenance line found in an output."""

    path: str
    sha: str
    arch: str | None = None         # None for a source listing's header (nothing was compiled)
    config: str | None = None
    custom: bool = False


def find(text: str) -> list[Mention]:
    """Every provenance line in ``text``."""
    return [Mention(m["path"], m["sha"], m["arch"], m["config"], bool(m["custom"])) for m in LINE_RE.finditer(text)]


def stale(text: str, config_sha_of: Callable[[str, str], str | None], root: Path = ROOT) -> list[str]:
    """Describe every provenance line in ``text`` whose hash no longer matches the file under ``root``,
    or whose configuration hash is not ``config_sha_of(path, arch)`` (the course's configuration now, for the
    architecture the line names: a file can have a unit of its own for one GPU;
    source listings and lines marked custom are checked for the file only)."""
    problems = []
    for m in find(text):
        f = root / m.path
        if not f.is_file():
            problems.append(f"{m.path}: the output names a kernel file that no longer exists")
            continue
        now = short_sha(f.read_text(encoding="utf-8"))
        if now != m.sha:
            problems.append(f"{m.path}: output has sha256:{m.sha}, the file now has sha256:{now}")
        elif m.arch and not m.custom and m.config != (want := config_sha_of(m.path, m.arch)):
            problems.append(f"{m.path}: output has config:{m.config}, gemmlab now compiles it with config:{want}")
    return problems
