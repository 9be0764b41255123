"""The files around the course: LICENSE, CITATION.cff, CHANGELOG.md and CONTRIBUTING.md say what
is true of the repository. The version and the repository URL are kept in gemmlab and _config.yml;
these files must follow them, and every path CONTRIBUTING.md tells a maintainer to open must exist."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

import gemmlab

ROOT = Path(__file__).resolve().parent.parent
VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")


def text(name: str) -> str:
    path = ROOT / name
    assert path.is_file(), f"{name} is missing from the repository root"
    return path.read_text(encoding="utf-8")


def config() -> dict:
    return yaml.safe_load(text("_config.yml"))


def citation() -> dict:
    data = yaml.safe_load(text("CITATION.cff"))
    assert isinstance(data, dict), "CITATION.cff is not a YAML mapping"
    return data


def version_key(version: str) -> tuple[int, int, int]:
    m = VERSION.match(version)
    assert m, f"{version!r} is not a version X.Y.Z"
    return tuple(int(g) for g in m.groups())


# ------------------------------------------------------------------ LICENSE

def test_license_states_both_licences():
    licence = text("LICENSE")
    assert "MIT License" in licence
    assert "Permission is hereby granted, free of charge" in licence, "the full MIT text"
    assert 'THE SOFTWARE IS PROVIDED "AS IS"' in licence, "the full MIT text, with its disclaimer"
    assert "Creative Commons Attribution 4.0 International" in licence and "CC BY 4.0" in licence
    assert "https://creativecommons.org/licenses/by/4.0/legalcode" in licence
    assert re.search(r"Copyright \(c\) 2026 The gemmlab course authors", licence)


def test_license_says_what_each_licence_covers():
    licence = text("LICENSE")
    code, _, content = licence.partition("Creative Commons Attribution 4.0 International")
    for part in ("gemmlab/", "kernels/", "scripts/", "tests/", "book/_ext", "code cells"):
        assert part in code, f"LICENSE does not put {part} under MIT"
    for part in ("markdown cells", "book/", "figures"):
        assert part in content, f"LICENSE does not put {part} under CC BY 4.0"


# ------------------------------------------------------------------ CITATION.cff

def test_citation_is_cff_1_2_0_with_the_required_keys():
    cff = citation()
    assert str(cff.get("cff-version")) == "1.2.0"
    missing = [k for k in ("message", "title", "authors", "version", "date-released", "repository-code",
                           "license", "abstract") if not cff.get(k)]
    assert not missing, f"CITATION.cff lacks {missing}"
    assert cff["type"] == "software"
    assert all(isinstance(a, dict) and (a.get("name") or a.get("family-names")) for a in cff["authors"])
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(cff["date-released"])), "date-released is YYYY-MM-DD"


def test_citation_version_is_the_package_version():
    assert str(citation()["version"]) == gemmlab.__version__, (
        "CITATION.cff's version differs from gemmlab.__version__ (scripts/set-version.py rewrites both)")


def test_citation_points_at_the_configured_repository():
    assert citation()["repository-code"] == config()["repository"]["url"], (
        "CITATION.cff's repository-code differs from repository.url in _config.yml")


def test_citation_names_the_licences_of_license_file():
    licences = citation()["license"]
    licences = [licences] if isinstance(licences, str) else licences
    assert set(licences) == {"MIT", "CC-BY-4.0"}


# ------------------------------------------------------------------ CHANGELOG.md

def changelog_sections() -> list[tuple[str, str | None]]:
    """(version or "Unreleased", date or None) of every ``## [...]`` heading, in file order."""
    return [(m.group(1), m.group(2))
            for m in re.finditer(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?", text("CHANGELOG.md"), re.M)]


def released_sections() -> list[tuple[str, str | None]]:
    sections = changelog_sections()
    assert sections, "CHANGELOG.md has no '## [X.Y.Z] - YYYY-MM-DD' section"
    if sections[0][0] == "Unreleased":
        sections = sections[1:]
    assert all(v != "Unreleased" for v, _ in sections), "'## [Unreleased]' can only be the first section"
    return sections


def test_changelog_has_a_section_for_the_current_version():
    versions = [v for v, _ in released_sections()]
    assert gemmlab.__version__ in versions, (
        f"CHANGELOG.md has no '## [{gemmlab.__version__}] - YYYY-MM-DD' section for gemmlab.__version__")
    assert versions[0] == gemmlab.__version__, "the current version is the newest released section"


def test_changelog_sections_are_newest_first_and_dated():
    sections = released_sections()
    undated = [v for v, d in sections if d is None]
    assert not undated, f"sections without a date: {undated}"
    keys = [version_key(v) for v, _ in sections]
    assert keys == sorted(keys, reverse=True) and len(set(keys)) == len(keys), (
        f"versions not in strictly descending order: {[v for v, _ in sections]}")
    dates = [d for _, d in sections]
    assert dates == sorted(dates, reverse=True), f"dates not newest first: {dates}"


def test_changelog_links_each_version_to_its_tag():
    """Each heading ``[X.Y.Z]`` is a link (defined at the bottom) that names the tag vX.Y.Z."""
    links = dict(re.findall(r"^\[([^\]]+)\]:\s*(\S+)", text("CHANGELOG.md"), re.M))
    for version, _ in released_sections():
        assert version in links, f"no link definition '[{version}]: ...' at the bottom of CHANGELOG.md"
        assert re.search(rf"\bv{re.escape(version)}$", links[version]), f"[{version}] does not link to v{version}"


def test_citation_release_date_is_the_changelog_date():
    dates = dict(released_sections())
    released = str(citation()["date-released"])
    assert dates.get(str(citation()["version"])) == released, (
        "CITATION.cff's date-released differs from the date of its version's CHANGELOG section")


# ------------------------------------------------------------------ CONTRIBUTING.md

PATH_SUFFIXES = (".py", ".md", ".yml", ".yaml", ".sh", ".cu", ".ipynb", ".cfg", ".toml", ".json", ".txt", ".cff")


def ignored_by_git(path: str) -> bool:
    """Whether the path lies under a directory or matches a name that .gitignore leaves out (build
    outputs, the virtual environment): those are not in a fresh checkout."""
    patterns = [p.strip().rstrip("/") for p in text(".gitignore").splitlines() if p.strip() and not p.startswith("#")]
    return any(Path(part).match(p) for part in Path(path).parts for p in patterns)


def mentioned_paths(markdown: str) -> set[str]:
    """Repository paths named in code (inline spans and fenced blocks, without their comments) and in
    relative link targets.

    A token counts as a path when it contains a '/' or ends in a known suffix; URLs, absolute
    paths, paths outside the repository, git-ignored paths, bare suffixes (``.cu``) and patterns
    (``NN``, ``*``, ``X.Y.Z``, ``<...>``, ``$VAR``) are left out."""
    blocks = re.findall(r"```[^\n]*\n(.*?)```", markdown, re.S)
    code = [re.sub(r"(^|\s)#.*$", "", line) for block in blocks for line in block.splitlines()]
    inline = re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", markdown, flags=re.S))
    links = [t.split("#")[0] for t in re.findall(r"\]\(([^)\s]+)\)", markdown)]
    tokens = [tok for chunk in code + inline for tok in chunk.split()] + links
    found = set()
    for tok in tokens:
        tok = tok.split("=", 1)[-1].strip("\"'(),;:")
        if not tok or "://" in tok or tok.startswith(("/", "~", "..", "-", "$")):
            continue
        if re.search(r"NN|\*|X\.Y\.Z|[<>{}\[\]]", tok) or re.fullmatch(r"\.\w+", tok):
            continue
        if "/" in tok or tok.endswith(PATH_SUFFIXES):
            tok = tok.removeprefix("./").rstrip("/")
            if not ignored_by_git(tok):
                found.add(tok)
    return found


def exists(path: str) -> bool:
    """A path from the root; a bare file name (``00_probes.cu``) may name a file in any folder."""
    if (ROOT / path).exists():
        return True
    if "/" in path:
        return False
    folders = [d for d in ROOT.iterdir() if d.is_dir() and d.name != ".git" and not ignored_by_git(d.name)]
    return any(not ignored_by_git(str(p.relative_to(ROOT))) for d in folders for p in d.rglob(path))


def test_contributing_path_filter():
    """The filter finds paths in spans, commands, blocks and links, and skips URLs and patterns."""
    sample = ("Run `bash scripts/test.sh -m \"not slow\"`; see `gemmlab/gemm/registry.py`, [the README](README.md#layout)"
              " and `chapters/NN_slug.ipynb`, `kernels/*.cu`, the `.cu` file, `https://example.org/a/b`,"
              " `gemmlab.LAYERS`, `_build/html`, `02_tiled.cu`.\n"
              "```bash\npython3 -m gemmlab bench --json results/bench.json   # writes docs/notes.md\n```\n")
    assert mentioned_paths(sample) == {"scripts/test.sh", "gemmlab/gemm/registry.py", "README.md", "results/bench.json",
                                       "02_tiled.cu"}
    assert exists("02_tiled.cu") and not exists("99_nothing.cu") and not exists("kernels/99_nothing.cu")


def test_every_path_in_contributing_exists():
    paths = mentioned_paths(text("CONTRIBUTING.md"))
    assert len(paths) >= 10, f"found only {sorted(paths)}: the path filter reads too little"
    missing = sorted(p for p in paths if not exists(p))
    assert not missing, f"CONTRIBUTING.md names paths that do not exist: {missing}"
