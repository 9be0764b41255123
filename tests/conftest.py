"""Shared fixtures: the repository's book configuration, its table of contents, and the book
built once per test session (for tests/test_book.py and tests/test_browser.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUILD_TIMEOUT_S = 900


# ---------------------------------------------------------------- the book's sources

def load_yaml(path: Path):
    import yaml

    return yaml.safe_load(path.read_text(encoding="utf-8"))


def toc_docnames(root: Path = ROOT) -> list[str]:
    """Every document in ``_toc.yml`` (root first), as paths relative to the book root without
    their extension: ``book/intro``, ``chapters/00_your_gpu``, ..."""
    toc = load_yaml(root / "_toc.yml")
    names: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                names.append(re.sub(r"\.(md|ipynb|rst)$", "", str(node["file"])))
            for key in ("parts", "chapters", "sections"):
                walk(node.get(key))
        elif isinstance(node, list):
            for item in node:
                walk(item)

    names.append(re.sub(r"\.(md|ipynb|rst)$", "", str(toc["root"])))
    walk(toc)
    return names


def source_of(docname: str, root: Path = ROOT) -> Path | None:
    """The source file of a document (``.md``, ``.ipynb`` or ``.rst``), or None."""
    for ext in (".md", ".ipynb", ".rst"):
        p = root / f"{docname}{ext}"
        if p.is_file():
            return p
    return None


def _plain(text: str) -> str:
    """A Markdown heading as the browser shows it: no inline-code backticks or emphasis marks."""
    return " ".join(re.sub(r"[`*]", "", text).split())


def source_title(docname: str, root: Path = ROOT) -> str | None:
    """The first level-1 heading of a document's source (for a notebook, of its Markdown cells)."""
    src = source_of(docname, root)
    if src is None:
        return None
    if src.suffix == ".ipynb":
        cells = json.loads(src.read_text(encoding="utf-8")).get("cells", [])
        lines = [line for c in cells if c.get("cell_type") == "markdown"
                 for line in "".join(c.get("source", "")).splitlines()]
    else:
        lines = src.read_text(encoding="utf-8").splitlines()
    for line in lines:
        if line.startswith("# "):
            return _plain(line[2:])
    return None


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def book_config() -> dict:
    """``_config.yml``, parsed."""
    return load_yaml(ROOT / "_config.yml")


@pytest.fixture(scope="session")
def toc_pages() -> list[str]:
    """The documents of ``_toc.yml``, root first (see :func:`toc_docnames`)."""
    return toc_docnames()


class BookSources:
    """Where the book's documents come from (a fixture, so tests need not import conftest)."""

    root = ROOT

    @property
    def root_doc(self) -> str:
        """The landing page: ``root`` in ``_toc.yml``."""
        return toc_docnames()[0]

    @staticmethod
    def source_of(docname: str) -> Path | None:
        return source_of(docname)

    @staticmethod
    def title(docname: str) -> str | None:
        return source_title(docname)


@pytest.fixture(scope="session")
def book_sources() -> BookSources:
    return BookSources()


def pytest_generate_tests(metafunc):
    """A test that takes ``toc_page`` runs once per document in ``_toc.yml``."""
    if "toc_page" in metafunc.fixturenames:
        metafunc.parametrize("toc_page", toc_docnames())


# ---------------------------------------------------------------- the built book

@dataclass(frozen=True)
class BookBuild:
    command: list[str]
    returncode: int
    output: str          # stdout and stderr of the build, interleaved
    out_dir: Path        # what was passed as --path-output
    html: Path           # <out_dir>/_build/html

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.output.splitlines()[-lines:])


@pytest.fixture(scope="session")
def built_book(tmp_path_factory) -> BookBuild:
    """The book, built once per session exactly as CI builds it (-W -n --keep-going), into a
    temporary folder so that the checkout's own _build is left alone."""
    jb = Path(sys.executable).parent / "jupyter-book"
    if not jb.exists():
        pytest.skip(f"jupyter-book is not installed next to {sys.executable}; "
                    "install the pinned requirements (pip install -r requirements.txt)")
    out = tmp_path_factory.mktemp("book")
    cmd = [str(jb), "build", str(ROOT), "--all", "-W", "-n", "--keep-going", "--path-output", str(out)]
    env = dict(os.environ)
    # autodoc imports gemmlab: make the checkout's copy importable even where it is not installed.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.setdefault("MPLBACKEND", "Agg")
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        partial = exc.output.decode(errors="replace") if isinstance(exc.output, bytes) else (exc.output or "")
        pytest.fail(f"the book build took longer than {BUILD_TIMEOUT_S} s: {' '.join(cmd)}\n"
                    + "\n".join(partial.splitlines()[-40:]))
    output = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout)   # Sphinx colours its log even into a pipe
    return BookBuild(cmd, proc.returncode, output, out, out / "_build" / "html")
