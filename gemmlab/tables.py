"""Plain-text tables for notebook outputs: stable text that nbval can compare."""

from __future__ import annotations


def table(rows, headers=None, align=None) -> str:
    """Format rows (sequences of cells) as an aligned text table; numbers right-aligned by default."""
    rows = [[str(c) for c in r] for r in rows]
    if headers:
        rows = [list(map(str, headers))] + rows
    if not rows:
        return ""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    if align is None:
        align = ["<"] + [">"] * (len(widths) - 1)
    lines = []
    for n, r in enumerate(rows):
        lines.append("  ".join(f"{c:{a}{w}}" for c, a, w in zip(r, align, widths)).rstrip())
        if headers and n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)
