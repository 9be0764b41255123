#!/usr/bin/env python3
"""Set the course's version everywhere it is written: ``python3 scripts/set-version.py 0.3.0``;
``python3 scripts/set-version.py --check`` lists every place that disagrees with ``gemmlab.__version__``.

The release tag is ``v`` + the version. The Colab setup cell of every chapter clones exactly that
tag and the Colab badges and launch buttons open the chapters at it, so a release is: run this
script, add a CHANGELOG section, commit, tag ``vX.Y.Z`` and push the tag (CONTRIBUTING.md); the
release workflow runs ``--check`` before it publishes. tests/test_release.py fails while any of
these places disagree.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BADGE = re.compile(r"colab\.research\.google\.com/github/[\w.-]+/[\w.-]+/blob/([^/]+)/")
RELEASE_LINE = re.compile(r'^RELEASE = "([^"]*)"', re.M)
CHANGELOG_RELEASE = re.compile(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", re.M)


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
        src = RELEASE_LINE.sub(f'RELEASE = "{tag}"', src)
        src = re.sub(r"(colab\.research\.google\.com/github/[\w.-]+/[\w.-]+/blob/)[^/]+/", rf"\g<1>{tag}/", src)
        cell["source"] = src.splitlines(keepends=True)
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def first(pattern: str, text: str) -> str | None:
    m = re.search(pattern, text, re.M)
    return m.group(1) if m else None


def stated_versions(root: Path) -> dict[str, str | None]:
    """Every place the version or the release tag is written, as ``{place: version}`` (tags without their ``v``;
    None where the place states none)."""
    def read(name: str) -> str:
        return (root / name).read_text(encoding="utf-8")

    places: dict[str, str | None] = {
        "gemmlab/__init__.py __version__": first(r'^__version__ = "([^"]*)"', read("gemmlab/__init__.py")),
        "pyproject.toml version": first(r'^version = "([^"]*)"', read("pyproject.toml")),
        "CITATION.cff version": first(r'^version: "([^"]*)"', read("CITATION.cff")),
        "_config.yml repository.branch (the launch buttons)": first(r"^  branch: v(\S+)", read("_config.yml")),
        "README.md's release line": first(r"\(now `v([^`]+)`\)", read("README.md")),
    }
    changelog = CHANGELOG_RELEASE.search(read("CHANGELOG.md"))
    places["CHANGELOG.md's newest release"] = changelog.group(1) if changelog else None
    for path in sorted((root / "chapters").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        text = "\n".join("".join(c["source"]) for c in cells)
        badges = set(BADGE.findall(text))
        places[f"{path.name} Colab badge"] = badges.pop().removeprefix("v") if len(badges) == 1 else None
        releases = RELEASE_LINE.findall(text)
        places[f"{path.name} setup cell RELEASE"] = releases[0].removeprefix("v") if len(releases) == 1 else None
    return places


def problems(root: Path = ROOT) -> list[str]:
    """The places that disagree with ``gemmlab/__init__.py``'s version, and a CITATION.cff release date that is
    not the CHANGELOG's: empty when a release can be cut."""
    places = stated_versions(root)
    version = places["gemmlab/__init__.py __version__"]
    out = [f"{place} says {found or 'nothing'}, gemmlab says {version}" for place, found in places.items()
           if found != version]
    date = first(r'^date-released: "([^"]*)"', (root / "CITATION.cff").read_text(encoding="utf-8"))
    changelog = CHANGELOG_RELEASE.search((root / "CHANGELOG.md").read_text(encoding="utf-8"))
    if changelog and date != changelog.group(2):
        out.append(f"CITATION.cff date-released is {date}, the CHANGELOG dates {changelog.group(1)} {changelog.group(2)}")
    return out


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        found = problems()
        for line in found:
            print(line, file=sys.stderr)
        return 1 if found else 0
    if len(argv) != 1 or not re.fullmatch(r"\d+\.\d+\.\d+", argv[0]):
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    version, tag = argv[0], "v" + argv[0]
    substitute(ROOT / "pyproject.toml", r'^version = "[^"]*"', f'version = "{version}"')
    substitute(ROOT / "gemmlab" / "__init__.py", r'^__version__ = "[^"]*"', f'__version__ = "{version}"')
    substitute(ROOT / "CITATION.cff", r'^version: .*$', f'version: "{version}"')
    substitute(ROOT / "_config.yml", r'^(  branch: ).*$', rf"\g<1>{tag}")
    substitute(ROOT / "README.md", r"\(now `v[^`]+`\)", f"(now `{tag}`)")
    for nb in sorted((ROOT / "chapters").glob("*.ipynb")):
        set_notebook(nb, tag)
    print(f"version {version}, tag {tag}: now add a CHANGELOG section dated as CITATION.cff's date-released, "
          f"commit, and tag {tag}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
