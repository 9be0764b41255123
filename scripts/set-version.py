#!/usr/bin/env python3
"""Set the course's version everywhere it is written: ``python3 scripts/set-version.py 0.3.0``.

The release tag is ``v`` + the version. The Colab setup cell of every chapter clones exactly that
tag and the Colab badges and launch buttons open the chapters at it, so a release is: run this
script, add a CHANGELOG section, commit, tag ``vX.Y.Z`` and push the tag (CONTRIBUTING.md).
tests/test_release.py fails while any of these places disagree.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def substitute(path: Path, pattern: str, replacement: str, count: int = 1) -> None:
    text = path.read_text(encoding="utf-8")
    new, n = re.subn(pattern, replacement, text, flags=re.M)
    if n < count:
        sys.exit(f"set-version: {path.relative_to(ROOT)} has no match for {pattern!r}")
    path.write_text(new, encoding="utf-8")


def set_notebook(path: Path, tag: str) -> None:
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        src = re.sub(r'^RELEASE = "[^"]*"', f'RELEASE = "{tag}"', src, flags=re.M)
        src = re.sub(r"(colab\.research\.google\.com/github/[\w.-]+/[\w.-]+/blob/)[^/]+/", rf"\g<1>{tag}/", src)
        cell["source"] = src.splitlines(keepends=True)
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not re.fullmatch(r"\d+\.\d+\.\d+", argv[0]):
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    version, tag = argv[0], "v" + argv[0]
    substitute(ROOT / "pyproject.toml", r'^version = "[^"]*"', f'version = "{version}"')
    substitute(ROOT / "gemmlab" / "__init__.py", r'^__version__ = "[^"]*"', f'__version__ = "{version}"')
    substitute(ROOT / "CITATION.cff", r'^version: .*$', f'version: "{version}"')
    substitute(ROOT / "_config.yml", r'^(  branch: ).*$', rf"\g<1>{tag}")
    for nb in sorted((ROOT / "chapters").glob("*.ipynb")):
        set_notebook(nb, tag)
    print(f"version {version}, tag {tag}: now add a CHANGELOG section, commit, and tag {tag}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
