"""Shared fixtures: the repository's book configuration, its table of contents, the book
built once per test run (for tests/test_book.py and the browser tests; once for all of
pytest-xdist's workers), a real browser with a local web server, the strict-tools switch
(:func:`skip_or_fail`) that CI sets so that a missing tool fails instead of skipping, and the
markers ``nvcc`` and ``slow``, given here to every test that needs nvcc or the built book."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest

from locking import file_lock

ROOT = Path(__file__).resolve().parent.parent
BUILD_TIMEOUT_S = 900


# ---------------------------------------------------------------- strict tools

STRICT_TOOLS_VAR = "GEMMLAB_STRICT_TOOLS"


def strict_tools() -> bool:
    """True when ``GEMMLAB_STRICT_TOOLS=1``: CI's container installs every tool, so none may be missing."""
    return os.environ.get(STRICT_TOOLS_VAR) == "1"


def skip_or_fail(reason: str) -> NoReturn:
    """Skip the current test because a tool of the CPU suite (nvcc, chromium, Playwright,
    jupyter-book) is missing, or fail it with the same reason under ``GEMMLAB_STRICT_TOOLS=1``.

    Only for missing tools: a GPU test that skips because there is no GPU does not come here."""
    if strict_tools():
        pytest.fail(f"{reason} ({STRICT_TOOLS_VAR}=1: a missing tool is a failure, not a skip)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(name="skip_or_fail", scope="session")
def skip_or_fail_fixture():
    """:func:`skip_or_fail`, as a fixture (test modules do not import conftest)."""
    return skip_or_fail


NVCC_MISSING = "nvcc (the CUDA toolkit) is not installed on this machine"


@pytest.fixture(scope="session")
def nvcc_path() -> str:
    """The path of ``nvcc``; skips (or fails, under ``GEMMLAB_STRICT_TOOLS=1``) where it is missing."""
    import shutil

    found = shutil.which("nvcc")
    if found is None:
        skip_or_fail(NVCC_MISSING)
    return found


def pytest_collection_modifyitems(config, items):
    """``nvcc`` for every test that asks for nvcc (the ``nvcc_path`` fixture), ``slow`` for every test of the built book
    or of a real browser: ``-m "not slow and not nvcc"`` is the loop of a few minutes (book/testing.md)."""
    for item in items:
        if "nvcc_path" in item.fixturenames:
            item.add_marker(pytest.mark.nvcc)
        if {"built_book", "browser"} & set(item.fixturenames):
            item.add_marker(pytest.mark.slow)


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
    timed_out: bool = False

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.output.splitlines()[-lines:])


@pytest.fixture(scope="session")
def built_book(tmp_path_factory) -> BookBuild:
    """The book, built once per test run exactly as CI builds it (-W -n --keep-going), into a
    temporary folder so that the checkout's own _build is left alone. Under pytest-xdist the
    first worker to need it builds it into the run's shared temporary folder, under a lock, and
    the others read the record it leaves there."""
    jb = Path(sys.executable).parent / "jupyter-book"
    if not jb.exists():
        skip_or_fail(f"jupyter-book is not installed next to {sys.executable}; "
                     "install the pinned requirements (pip install -r requirements.txt)")
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base   # xdist: base is popen-gwN
    record = shared / "book-build.json"
    with file_lock(shared / "book-build.lock"):
        if not record.is_file():
            record.write_text(json.dumps(dataclasses.asdict(_build_book(jb, shared / "book")), default=str))
    built = json.loads(record.read_text())
    book = BookBuild(**{**built, "out_dir": Path(built["out_dir"]), "html": Path(built["html"])})
    if book.timed_out:
        pytest.fail(book.output)
    return book


def _build_book(jb: Path, out: Path) -> BookBuild:
    out.mkdir()
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
        return BookBuild(cmd, -1, f"the book build took longer than {BUILD_TIMEOUT_S} s: {' '.join(cmd)}\n"
                         + "\n".join(partial.splitlines()[-40:]), out, out / "_build" / "html", timed_out=True)
    output = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout)   # Sphinx colours its log even into a pipe
    return BookBuild(cmd, proc.returncode, output, out, out / "_build" / "html")


# ---------------------------------------------------------------- a real browser, shared
# tests/test_workbench_browser.py uses these. tests/test_browser.py still defines its own
# ``browser``, ``artifacts`` and ``served_book`` with the same behaviour (a module's own fixture
# takes precedence over conftest's), so its copies can be deleted in favour of these.

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

# What an intercepted request for another host gets: something harmless of the right kind.
_EMPTY_SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="117" height="20" viewBox="0 0 117 20">'
              '<rect width="117" height="20" rx="3" fill="#999"/></svg>')
REQUEST_STUBS = {
    "image": ("image/svg+xml", _EMPTY_SVG),
    "script": ("application/javascript", "/* stubbed by tests/conftest.py */"),
    "stylesheet": ("text/css", "/* stubbed by tests/conftest.py */"),
}


def chromium_executable() -> str | None:
    """Debian's chromium (never a browser downloaded by ``playwright install``), or None."""
    import shutil

    found = shutil.which("chromium")
    if found:
        return found
    return "/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else None


@contextlib.contextmanager
def serve_directory(directory: Path):
    """Serve ``directory`` over http on 127.0.0.1 (a free port); yields the base URL."""
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format, *args):  # noqa: A002 - the base class's signature
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(directory)))
    thread = threading.Thread(target=server.serve_forever, name=f"http-{Path(directory).name}", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def stub_external_requests(context, record: list[str]) -> None:
    """Route every request of a Playwright browser context that leaves 127.0.0.1 to an empty
    200 answer of the right kind, and append its URL to ``record`` (the machine may be offline)."""
    from urllib.parse import urlparse

    def route(r):
        req = r.request
        if urlparse(req.url).hostname == "127.0.0.1":
            r.continue_()
            return
        record.append(req.url)
        content_type, body = REQUEST_STUBS.get(req.resource_type, ("text/plain", ""))
        r.fulfill(status=200, content_type=content_type, body=body)

    context.route("**/*", route)


@pytest.fixture(scope="module")
def directory_server():
    """``serve(path) -> base URL``: serves a folder over http on 127.0.0.1 until the module ends."""
    with contextlib.ExitStack() as stack:
        yield lambda directory: stack.enter_context(serve_directory(Path(directory)))


@pytest.fixture(scope="session")
def offline_routes():
    """``install(context, record)``: :func:`stub_external_requests`, as a fixture."""
    return stub_external_requests


@pytest.fixture(scope="module")
def served_book(built_book):
    """The built HTML over http on 127.0.0.1, for the module's tests."""
    if not (built_book.html / "index.html").is_file():
        pytest.fail(f"the book did not build (no {built_book.html / 'index.html'}):\n{built_book.tail()}")
    with serve_directory(built_book.html) as base:
        yield base


@pytest.fixture(scope="module")
def browser():
    """Headless Debian chromium through Playwright (module scope: one Playwright at a time)."""
    try:
        from playwright import sync_api
    except ImportError:
        skip_or_fail("the playwright Python package is not installed (it is in requirements.txt)")
    executable = chromium_executable()
    if executable is None:
        skip_or_fail("chromium is not installed (Debian: apt-get install chromium; scripts/test.sh does this as root)")
    pw = sync_api.sync_playwright().start()
    try:
        b = pw.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
    except Exception as exc:
        pw.stop()
        pytest.fail(f"could not start {executable} through Playwright: {exc}")
    try:
        yield b
    finally:
        b.close()
        pw.stop()


@pytest.fixture(scope="module")
def artifacts(repo_root) -> Path:
    """test-artifacts/ at the repository root (screenshots; ignored by git)."""
    out = repo_root / "test-artifacts"
    out.mkdir(exist_ok=True)
    return out
