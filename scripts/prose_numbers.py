"""Which numbers in a chapter's prose came from its outputs, and what those outputs say now.

After a chapter is re-executed, every number its markdown quotes from a table must be re-read. This lists each
decimal of the markdown (``81.1``, ``1,032.5``) that occurs in the code outputs of the notebook as it was before
(by default the last commit), with the value found at the same place (cell, line, position in the line) of the
outputs now. A number shown as changed needs the prose edited; one found nowhere in the old outputs is not listed
(it is cited from a file, or a model's, and this script cannot check it).

Usage, from the project root after executing a chapter:
    python3 scripts/prose_numbers.py chapters/08_tensor_cores.ipynb            # against HEAD
    python3 scripts/prose_numbers.py chapters/08_tensor_cores.ipynb --before OLD.ipynb
Exit status 1 when some quoted number changed, 0 when none did.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

NUMBER = re.compile(r"(?<![\w.,])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\.\d|,\d{3})(?![A-Za-wyz0-9_])")
"""A number as the outputs print it: digits, optional thousands commas, optional decimals, perhaps followed by the
``x`` of a factor (``1.10x``, which prose writes ``1.10×``); not part of a word or of a dotted name."""


def decimals(text: str) -> list[str]:
    """The numbers of ``text`` with a decimal point, in order: integers are left out, because too many of them
    (sizes, counts) are not measurements."""
    return [n for n in NUMBER.findall(text) if "." in n]


@dataclass(frozen=True)
class Quote:
    """A decimal of markdown cell ``cell`` found at ``place`` (output cell id, line, index among the line's numbers)
    of the old outputs, whose line there read ``line``; ``now`` is what that place holds now (None: gone)."""

    cell: str
    value: str
    place: tuple[str, int, int]
    line: str
    now: str | None

    @property
    def changed(self) -> bool:
        return self.now != self.value


def output_numbers(nb: dict) -> dict[str, list[tuple[str, list[str]]]]:
    """For each code cell id, its outputs' text lines, each with the numbers on it in order."""
    found = {}
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        text = ""
        for out in cell.get("outputs", []):
            if out["output_type"] == "stream":
                text += "".join(out["text"])
            elif "text/plain" in out.get("data", {}):
                text += "".join(out["data"]["text/plain"]) + "\n"
        found[cell["id"]] = [(line, NUMBER.findall(line)) for line in text.split("\n")]
    return found


def quotes(before: dict, after: dict) -> list[Quote]:
    """Every place in ``before``'s outputs that holds a decimal quoted by ``after``'s markdown, with its value in
    ``after``'s outputs (:func:`decimals`)."""
    new = output_numbers(after)
    # a number of the old outputs -> where it stood and the line there, in order
    places: dict[str, list[tuple[tuple[str, int, int], str]]] = {}
    for cid, lines in output_numbers(before).items():
        for i, (line, numbers) in enumerate(lines):
            for j, number in enumerate(numbers):
                places.setdefault(number, []).append(((cid, i, j), line.strip()))

    def now(cid: str, i: int, j: int) -> str | None:
        try:
            return new[cid][i][1][j]
        except (KeyError, IndexError):
            return None

    return [Quote(cell["id"], value, place, line, now(*place))
            for cell in after["cells"] if cell["cell_type"] == "markdown"
            for value in dict.fromkeys(decimals("".join(cell["source"])))
            for place, line in places.get(value, [])]


def read_notebook(path: Path, revision: str | None = None) -> dict:
    """The notebook at ``path``, or as it was at git ``revision``."""
    if revision is None:
        return json.loads(path.read_text())
    shown = subprocess.run(["git", "show", f"{revision}:{path.as_posix()}"], capture_output=True, text=True)
    if shown.returncode != 0:
        raise SystemExit(f"git cannot show {path} at {revision}: {shown.stderr.strip()}")
    return json.loads(shown.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebook", type=Path, help="the re-executed chapter")
    parser.add_argument("--before", type=Path, help="the notebook before (default: the notebook at --revision)")
    parser.add_argument("--revision", default="HEAD", help="git revision of the notebook before (default HEAD)")
    parser.add_argument("--all", action="store_true", help="list unchanged quotes too")
    args = parser.parse_args(argv)
    before = read_notebook(args.before) if args.before else read_notebook(args.notebook, args.revision)
    listed = quotes(before, read_notebook(args.notebook))
    changed = 0
    for q in listed:
        if q.changed or args.all:
            changed += q.changed
            mark = "CHANGED" if q.changed else "same   "
            print(f"{mark} [{q.cell}] {q.value} -> {q.now}   (output {q.place[0]}, line {q.place[1]}: {q.line[:60]!r})")
    print(f"{len(listed)} places quoted, {changed} changed", file=sys.stderr)
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
