"""One version everywhere: gemmlab's version, pyproject.toml, CITATION.cff, CHANGELOG.md's newest release, the
Colab badge and setup cell of every chapter, the book's launch buttons (``_config.yml``) and the README.

A Colab learner opens a chapter at the tag ``v`` + the version and its setup cell clones that tag; a mismatch
sends them to files that are not the chapter's (or to no release at all). ``scripts/set-version.py`` writes the
version everywhere, its ``--check`` lists the places that disagree (the release workflow runs it before it
publishes), and these tests hold it to the repository."""

from __future__ import annotations

import json
import re
import shutil
import tomllib

import gemmlab
from notebook_tools import CHAPTERS, ROOT, load_script

VERSION = gemmlab.__version__
set_version = load_script("set-version")


def test_every_place_states_the_version():
    assert set_version.problems(ROOT) == []


def test_every_chapter_and_place_is_read():
    """The check reads the badge and the setup cell of every chapter, and each of the other places."""
    places = set_version.stated_versions(ROOT)
    assert len([p for p in places if p.endswith("Colab badge")]) == len(CHAPTERS)
    assert len([p for p in places if p.endswith("setup cell RELEASE")]) == len(CHAPTERS)
    assert set(places.values()) == {VERSION}


def test_the_version_is_the_packages_own():
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"] == VERSION
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION)


def test_the_changelog_links_its_newest_release():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    previous = set_version.CHANGELOG_RELEASE.findall(text)[1][0]
    assert f"[{VERSION}]: https://github.com/" in text and f"compare/v{previous}...v{VERSION}" in text
    assert f"[Unreleased]: https://github.com/" not in text or f"compare/v{VERSION}...HEAD" in text


def test_the_check_names_a_chapter_left_at_another_release(tmp_path):
    """The check can fail: a copy of the repository's versioned files with one chapter's badge at an old tag."""
    for name in ("gemmlab/__init__.py", "pyproject.toml", "CITATION.cff", "_config.yml", "README.md", "CHANGELOG.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "chapters").mkdir()
    for path in CHAPTERS:
        shutil.copy(path, tmp_path / "chapters" / path.name)
    assert set_version.problems(tmp_path) == []
    stale = tmp_path / "chapters" / CHAPTERS[-1].name
    nb = json.loads(stale.read_text(encoding="utf-8"))
    nb["cells"][0]["source"] = [line.replace(f"/blob/v{VERSION}/", "/blob/v0.0.1/") for line in nb["cells"][0]["source"]]
    stale.write_text(json.dumps(nb), encoding="utf-8")
    assert set_version.problems(tmp_path) == [f"{stale.name} Colab badge says 0.0.1, gemmlab says {VERSION}"]


def test_the_package_says_its_licence_authors_and_home():
    """``pip show gemmlab`` names the licences, the authors and where the course lives."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT AND CC-BY-4.0" and project["license-files"] == ["LICENSE"]
    assert project["authors"] and {"Homepage", "Repository", "Issues"} <= set(project["urls"])
    assert project["urls"]["Repository"] == "https://github.com/gemmlab-course/shared-memory-gemm"
