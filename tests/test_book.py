"""The book builds as CI builds it (-W -n: no warnings, no unresolved references), every page of
the table of contents is there, the API reference documents gemmlab, and the chapters' Colab
launch buttons point at the repository named in _config.yml."""

from __future__ import annotations

import ast
import html as htmllib
import pkgutil
import re
from pathlib import Path
from urllib.parse import urlparse

import pytest

pytestmark = pytest.mark.slow

# Every subpackage and module of the package, so that a new one without its section on the API pages fails here
# (the package on book/api.md, a subpackage and its modules on book/api/<subpackage>.md); and names the reference
# must contain whatever else changes.
_PACKAGE = Path(__file__).resolve().parent.parent / "gemmlab"
API_SUBPACKAGES = sorted(m.name for m in pkgutil.iter_modules([str(_PACKAGE)]) if m.ispkg)
API_MODULES = {"gemmlab": ["gemmlab"]} | {
    sub: [f"gemmlab.{sub}"] + sorted(f"gemmlab.{sub}.{m.name}" for m in pkgutil.iter_modules([str(_PACKAGE / sub)])
                                     if not m.name.startswith("_"))
    for sub in API_SUBPACKAGES}
API_MUST_HAVE = ["gemmlab.gemm.checks.check_gemm_shapes", "gemmlab.runtime.device.peak_fp32_flops",
                 "gemmlab.runtime.gpu.GPUUnavailable", "gemmlab.models.verify.check", "gemmlab.kernels"]


def test_build_succeeds(built_book):
    assert built_book.returncode == 0, (
        f"{' '.join(built_book.command)} exited with {built_book.returncode}:\n{built_book.tail()}")


def test_build_has_no_warnings(built_book):
    # Sphinx's own warnings and the docutils system messages (ERROR, SEVERE) that -W also counts.
    problems = [line for line in built_book.output.splitlines()
                if re.search(r"\b(WARNING|ERROR|SEVERE|CRITICAL)\b", line)]
    assert not problems, "the book build warned:\n" + "\n".join(problems)


def test_every_toc_page_is_built(built_book, toc_pages, book_sources):
    assert toc_pages, "_toc.yml lists no pages"
    missing_src = [d for d in toc_pages if book_sources.source_of(d) is None]
    assert not missing_src, f"_toc.yml lists pages with no source file: {missing_src}"
    missing = [d for d in toc_pages if not (built_book.html / f"{d}.html").is_file()]
    assert not missing, f"no HTML under {built_book.html} for: {missing}"
    assert (built_book.html / "index.html").is_file(), "the build wrote no index.html"


def test_intro_links_every_available_chapter(built_book, toc_pages):
    intro = (built_book.html / f"{toc_pages[0]}.html").read_text(encoding="utf-8")
    chapters = [d for d in toc_pages if d.startswith("chapters/")]
    assert chapters, "_toc.yml lists no chapter"
    for d in chapters:
        assert f'href="../{d}.html"' in intro, f"the landing page does not link to {d}"


def _documented_names(root, module: str) -> list[str]:
    """Public functions and classes with a docstring, defined in the module's own source (what
    ``automodule :members:`` shows); for the package, the names in its ``__all__``."""
    path = root.joinpath(*module.split("."))
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    if module == "gemmlab":
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
                return [f"{module}.{name}" for name in ast.literal_eval(node.value)]
        return []
    return [f"{module}.{n.name}" for n in tree.body
            if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and not n.name.startswith("_")
            and ast.get_docstring(n)]


def api_page(built_book, sub: str) -> Path:
    """The API page of a subpackage (``gemmlab``: the package's own, the section's first page)."""
    return built_book.html / "book" / ("api.html" if sub == "gemmlab" else f"api/{sub}.html")


def test_the_api_section_has_a_page_per_subpackage(toc_pages):
    assert [d for d in toc_pages if d.startswith("book/api")] == ["book/api"] + [f"book/api/{s}" for s in
                                                                                ("models", "runtime", "gemm", "measure", "book")]
    assert sorted(API_SUBPACKAGES) == sorted(("models", "runtime", "gemm", "measure", "book"))


@pytest.mark.parametrize("sub", ["gemmlab", *API_SUBPACKAGES])
def test_api_pages_document_gemmlab(built_book, repo_root, sub):
    page = api_page(built_book, sub)
    assert page.is_file(), f"no API page for {sub} at {page}"
    text = page.read_text(encoding="utf-8")
    ids = set(re.findall(r'id="([^"]+)"', text))
    missing_modules = [m for m in API_MODULES[sub] if f"module-{m}" not in ids]
    assert not missing_modules, f"{page.name} has no section for {missing_modules}"
    expected = [n for m in API_MODULES[sub] for n in _documented_names(repo_root, m)]
    expected += [n for n in API_MUST_HAVE if n.startswith(f"gemmlab.{sub}.") or (sub == "gemmlab" and n.count(".") == 1)]
    missing = sorted({n for n in expected if n not in ids})
    assert not missing, f"{page.name} does not document: {missing}"
    # autodoc failures that -W might not catch (a module that imports but renders empty).
    if sub == "gemm":
        assert "check_gemm_shapes" in htmllib.unescape(re.sub(r"<[^>]+>", "", text))


def test_colab_launch_buttons_point_to_the_release(built_book, book_config, toc_pages, book_sources):
    """Chapters (which have the setup cell) open on Colab at the release tag; a notebook without the
    setup cell (the Workbench) offers no Colab button, since gemmlab could not be imported there."""
    import gemmlab

    repo = urlparse(book_config["repository"]["url"])
    assert repo.scheme == "https" and repo.netloc == "github.com", (
        f"repository.url in _config.yml must be a https://github.com/ URL, got {book_config['repository']['url']}")
    owner_repo = repo.path.strip("/").removesuffix(".git")
    branch = book_config["repository"].get("branch", "main")
    assert branch == "v" + gemmlab.__version__, "repository.branch must be the release tag (scripts/set-version.py)"
    colab = book_config["launch_buttons"]["colab_url"].rstrip("/")
    notebooks = [d for d in toc_pages if (s := book_sources.source_of(d)) is not None and s.suffix == ".ipynb"]
    with_setup = [d for d in notebooks if '"colab-setup"' in book_sources.source_of(d).read_text(encoding="utf-8")]
    assert with_setup, "_toc.yml lists no notebook chapter, so no page has a launch button"
    assert "book/workbench" in notebooks and "book/workbench" not in with_setup
    for d in notebooks:
        text = (built_book.html / f"{d}.html").read_text(encoding="utf-8")
        links = [htmllib.unescape(h) for h in re.findall(r'href="([^"]*colab\.research[^"]*)"', text)]
        if d not in with_setup:
            assert not links, f"{d}.html has no setup cell but offers Colab: {links}"
            continue
        want = f"{colab}/github/{owner_repo}/blob/{branch}/{d}.ipynb"
        assert want in links, f"{d}.html has no Colab launch link {want}; Colab links found: {links}"


def test_workbench_assets_once_per_page(built_book):
    """A page that shows several Workbenches carries the Workbench's script and style once (each
    notebook output has its own copy; book/_ext/coursebook.py keeps the first on each page)."""
    js_head = "/* The Shared Memory Workbench: plays back"
    css_head = "/* The Shared Memory Workbench. Every rule is scoped"
    widgets_on = {}
    bad = []
    for page in sorted(built_book.html.rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        n = text.count('data-workbench="1"')
        name = page.relative_to(built_book.html).as_posix()
        if n:
            widgets_on[name] = n
        for what, head in (("script", js_head), ("style", css_head)):
            if text.count(head) != (1 if n else 0):
                bad.append(f"{name}: {n} widget(s), the Workbench's {what} {text.count(head)} times")
    assert widgets_on.get("book/workbench.html", 0) >= 2, f"widgets per page: {widgets_on}"
    assert not bad, "\n".join(bad)


def test_the_introduction_shows_the_whole_ladder_from_the_bench_files(
        built_book, repo_root, book_sources):
    """``{ladder-at-a-glance}`` on the landing page: at build time, a table with a row per
    step of the course's path and a column per GPU under each measure, the GPUs named as
    the bench files name them, and the figure written into the build as SVG with alt text
    (book/_ext/coursebook.py)."""
    import json

    from gemmlab.gemm import whole_ladder

    page = built_book.html / f"{book_sources.root_doc}.html"
    text = page.read_text(encoding="utf-8")
    table = re.search(r'<table[^>]*class="[^"]*ladder-glance[^"]*".*?</table>', text,
                      re.S)
    assert table, f"{page.name} has no ladder-at-a-glance table"
    step_cell = r'<tr class="ladder-step[^"]*">\s*<td[^>]*><p><code[^>]*>(.*?)</code>'
    cells = re.findall(step_cell, table.group(0), re.S)
    labels = [re.sub(r"<[^>]+>", "", s) for s in cells]
    assert labels == [_glance_label(s[0]) for s in whole_ladder.steps()]
    thead = re.search(r"<thead>.*?</thead>", table.group(0), re.S)
    heads = re.sub(r"<[^>]+>", " ", thead.group(0)).split()
    assert heads.count("H200") == heads.count("H100") == 3
    devices = [json.loads((repo_root / f).read_text())["environment"]["gpu"] for f in
               ("results/bench.json", "results/bench-h100.json")]
    notes = htmllib.unescape(text[table.end():])
    assert all(d in notes for d in devices)
    figure = r'<figure class="ladder-glance-figure"><img src="([^"]+)" alt="([^"]+)"'
    img = re.search(figure, text)
    assert img, "no figure of the ladder"
    svg = (page.parent / img.group(1)).resolve()
    assert svg.is_file(), svg
    assert svg.read_text(encoding="utf-8").lstrip().startswith("<?xml"), svg
    assert "Horizontal bars on a log scale" in htmllib.unescape(img.group(2))


def _glance_label(name: str) -> str:
    from gemmlab.book import ladder_glance

    return ladder_glance.Step(name, 0, "", "").label
