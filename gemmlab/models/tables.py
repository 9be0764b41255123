"""Plain-text tables for notebook outputs: stable text that nbval can compare."""

from __future__ import annotations

from typing import Iterable, Sequence


def table(rows: Iterable[Sequence[object]], headers: Sequence[object] | None = None,
          align: Sequence[str] | None = None) -> str:
    """Format rows (sequences of cells) as an aligned text table; numbers right-aligned by default."""
    cells = [[str(c) for c in r] for r in rows]
    if headers:
        cells = [list(map(str, headers))] + cells
    if not cells:
        return ""
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
    if align is None:
        align = ["<"] + [">"] * (len(widths) - 1)
    lines = []
    for n, r in enumerate(cells):
        lines.append("  ".join(f"{c:{a}{w}}" for c, a, w in zip(r, align, widths)).rstrip())
        if headers and n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)
