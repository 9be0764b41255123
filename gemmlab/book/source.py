"""Showing kernel source in a notebook: rendered from the ``.cu`` file itself, with its hash.

The reader sees the file that was compiled, never a copy pasted into a cell; the header line
carries the file's sha256 so the freshness test notices when the file has changed since.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable

from ..runtime import provenance


class KernelSource:
    """Displays as a highlighted CUDA listing (Markdown) in Jupyter, Colab and the book."""

    def __init__(self, path: str | Path, functions: Iterable[str] | None = None) -> None:
        self.path = provenance.kernel_path(path)
        self.text = self.path.read_text(encoding="utf-8")
        self.sha = provenance.short_sha(self.text)
        self.code = self.text if not functions else "\n\n".join(extract(self.text, f) for f in functions)

    @property
    def header(self) -> str:
        return f"[gemmlab] {provenance.display_path(self.path)} sha256:{self.sha}"

    def __repr__(self) -> str:
        return self.header

    def _repr_markdown_(self) -> str:
        return f"`{provenance.display_path(self.path)}` (sha256 `{self.sha}`)\n\n```cuda\n{self.code.rstrip()}\n```\n"


def region(lines: list[str], name: str) -> str | None:
    """The lines between ``// [name]`` and ``// [/name]`` (markers a kernel file puts around a piece of a
    longer function that a chapter shows on its own), dedented; None where there is no such region."""
    marks = [l.strip() for l in lines]
    if f"// [{name}]" not in marks:
        return None
    start = marks.index(f"// [{name}]")
    if f"// [/{name}]" not in marks[start:]:
        raise KeyError(f"region {name!r} is opened but never closed")
    body = lines[start + 1:start + marks[start:].index(f"// [/{name}]")]
    indent = min((len(l) - len(l.lstrip()) for l in body if l.strip() and not l.startswith("#")), default=0)
    return "\n".join(l if l.startswith("#") else l[indent:] for l in body).rstrip() + "\n"   # pragmas stay at column 0


def extract(text: str, name: str) -> str:
    """The definition of function or struct ``name`` with the comment block (and preprocessor lines,
    templates) just above it, or the region marked ``// [name]`` ... ``// [/name]``."""
    lines = text.splitlines()
    marked = region(lines, name)
    if marked is not None:
        return marked
    pattern = rf"\b{re.escape(name)}\s*\(|^\s*(struct|class)\s+{re.escape(name)}\b"
    start = next((i for i, l in enumerate(lines) if re.search(pattern, l)), None)
    if start is None:
        raise KeyError(f"no function, struct or region named {name!r} in the source")
    while start > 0 and lines[start - 1].startswith(("//", "#", "extern", "template", "__device__")):   # comments, preprocessor lines
        start -= 1
    depth, end, opened = 0, start, False
    for end in range(start, len(lines)):
        depth += lines[end].count("{") - lines[end].count("}")
        opened = opened or "{" in lines[end]
        if opened and depth <= 0:
            break
    return "\n".join(lines[start:end + 1])


def show(path: str | Path, functions: Iterable[str] | None = None) -> KernelSource:
    """The source of a kernel file (or of the named functions in it) for display."""
    return KernelSource(path, functions)
