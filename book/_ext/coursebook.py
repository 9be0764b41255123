"""Sphinx fixes for the pinned Jupyter Book 1 stack, loaded through ``sphinx.local_extensions``.

- ``autodoc`` imports ``gemmlab`` from this checkout, installed or not (book/api.md).
- Sphinx 7.4 renders a ``<script>`` that an extension adds with a body and no file name twice
  (``app.add_js_file(None, body=...)`` during the build). sphinx-thebe 0.3.1 adds
  ``const THEBE_JS_URL = ...`` that way, so every page threw "Identifier 'THEBE_JS_URL' has
  already been declared" in the browser. Each page keeps the first copy of each script.
- A notebook output may carry a ``<style>`` or ``<script>`` marked ``data-page-once="NAME"`` that
  every output of its kind needs (the Workbench's, ``gemmlab.book.workbench``): each output keeps
  its own copy, so that it works alone in Jupyter and Colab, and each page of the book keeps only
  the first copy of each NAME.
- Launch buttons (Colab) only on notebooks with the course's setup cell (tag ``colab-setup``): a
  notebook without it (the Workbench) could not import ``gemmlab`` on Colab, so it offers no button.
- No top bar, so that the sidebar toggle and the contents button work (see ``_no_top_bar``).
- ``{results}`file``` links a measurement in ``results/`` to the repository at the release tag
  (``_config.yml``'s ``repository.url`` and ``branch``), so the lab notes cite the files as they were released.
- ``{ladder-at-a-glance}`` renders the whole ladder's table and figure
  (:mod:`gemmlab.book.ladder_glance`) from the bench JSON files when the book is built, so
  that a file measured again changes the book with no chapter executed.
"""

from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

ROOT = Path(__file__).resolve().parents[2]


def _key(script):
    filename = getattr(script, "filename", script) or ""
    attributes = getattr(script, "attributes", {}) or {}
    return str(filename), tuple(sorted((k, str(v)) for k, v in attributes.items()))


def _dedupe_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for s in scripts:
        k = _key(s)
        if k not in seen:
            seen.add(k)
            unique.append(s)
    scripts[:] = unique


_ONCE = re.compile(r'<(style|script)\b[^>]*\bdata-page-once="([^"]+)"[^>]*>.*?</\1>\n?', re.S)


def _assets_once_per_page(app, doctree, docname):
    seen: set[str] = set()

    def keep_first(m: re.Match) -> str:
        if m.group(2) in seen:
            return ""
        seen.add(m.group(2))
        return m.group(0)

    for raw in list(doctree.findall(nodes.raw)):
        if "html" not in raw.get("format", "").split() or "data-page-once" not in raw.astext():
            continue
        text = _ONCE.sub(keep_first, raw.astext())
        if text != raw.astext():
            raw.replace_self(nodes.raw(text, text, **raw.attributes))


def _has_setup_cell(path: Path) -> bool:
    cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    return any("colab-setup" in c.get("metadata", {}).get("tags", []) for c in cells)


def _launch_only_with_setup(app, pagename, templatename, context, doctree):
    path = Path(app.env.doc2path(pagename))
    buttons = context.get("header_buttons")
    if buttons and path.suffix == ".ipynb" and not _has_setup_cell(path):
        buttons[:] = [b for b in buttons if b.get("label") != "launch-buttons"]


def _no_top_bar(app, config):
    """pydata-sphinx-theme 0.17.1 puts a search field in its top bar (``navbar_persistent``) unless
    ``html_theme_options`` names that option; sphinx-book-theme 1.3.0 empties it only in its
    theme.conf, which does not count. The bar then renders with hidden copies of the sidebar toggle
    and the contents button ahead of the article header's, and both themes' scripts bind
    ``document.querySelector(".primary-toggle")`` (and ``".secondary-toggle"``), the first copy: the
    buttons a reader sees did nothing. Empty, as sphinx-book-theme means it, the bar is not rendered.
    tests/test_navigation_browser.py taps the buttons."""
    options = dict(config.html_theme_options or {})
    options.setdefault("navbar_persistent", [])
    config.html_theme_options = options


def _results_role(app, config):
    """``{results}`power-h200.txt``` links ``results/power-h200.txt`` at the release tag: one place for the tag,
    the one ``scripts/set-version.py`` writes (the repository's ``branch`` in ``_config.yml``)."""
    import yaml

    repository = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["repository"]
    links = dict(config.extlinks or {})
    links["results"] = (f"{repository['url']}/blob/{repository['branch']}/results/%s", "%s")
    config.extlinks = links


GLANCE_FILES = ("results/bench.json", "results/bench-h100.json")
"""The bench files the ladder at a glance reads by default: the H200's, the H100's."""


def _with_code(text: str) -> list[nodes.Node]:
    """A sentence whose `backticked` parts are code."""
    parts = text.split("`")
    return [nodes.literal(p, p) if i % 2 else nodes.Text(p)
            for i, p in enumerate(parts) if p]


def _entry(*children: nodes.Node, classes: tuple[str, ...] = (),
           **spans: int) -> nodes.entry:
    entry = nodes.entry(classes=list(classes), **spans)
    entry += list(children)
    return entry


def _paragraph(text: str, classes: tuple[str, ...] = ()) -> nodes.paragraph:
    return nodes.paragraph(text, "", *_with_code(text), classes=list(classes))


def _breakable(name: str) -> nodes.literal:
    """A kernel's name as code that a narrow column may break after an underscore
    (``<wbr>``), and nowhere else."""
    code = nodes.literal(name, "")
    for i, part in enumerate(re.split(r"(?<=_)", name)):
        if i:
            code += nodes.raw("", "<wbr>", format="html")
        code += nodes.Text(part)
    return code


def _glance_table(glance, table_rows, runs) -> nodes.table:
    """The ladder as a docutils table: a row per step with its name and each measure, a
    column per GPU under each; under it a row across the table with the step's chapter and
    what it changes (a phone has no room for a column of it); a heading row per format."""
    heads, gpus, body = glance.table(table_rows, runs)
    width = 1 + len(heads) * len(gpus)
    table = nodes.table(classes=["ladder-glance"])
    group = nodes.tgroup(cols=width)
    table += group
    group += [nodes.colspec(colwidth=3)]
    group += [nodes.colspec(colwidth=1) for _ in range(width - 1)]
    thead = nodes.thead()
    group += thead
    first, second = nodes.row(), nodes.row()
    first += _entry(_paragraph("step"), morerows=1)
    for head in heads:
        first += _entry(_paragraph(head), morecols=len(gpus) - 1, classes=("ladder-num",))
        second += [_entry(_paragraph(gpu), classes=("ladder-num",)) for gpu in gpus]
    thead += [first, second]
    tbody = nodes.tbody()
    group += tbody
    by_step = {r.step.name: cells for r, cells in zip(table_rows, body)}
    for name, members in glance.groups(table_rows):
        heading = nodes.row(classes=["ladder-group"])
        title = nodes.paragraph("", "", nodes.strong(name, name))
        heading += _entry(title, morecols=width - 1)
        tbody += heading
        for r in members:       # the numbers beside the name, then the change, full width
            chapter, label, change, *numbers = by_step[r.step.name]
            row = nodes.row(classes=["ladder-step"])
            row += _entry(nodes.paragraph("", "", _breakable(label)))
            row += [_entry(_paragraph(n), classes=("ladder-num",)) for n in numbers]
            what = nodes.row(classes=["ladder-change"])
            what += _entry(_paragraph(f"ch. {chapter}: {change}"), morecols=width - 1)
            tbody += [row, what]
    return table


def _size(text: str) -> tuple[int, ...]:
    parts = [int(p) for p in text.lower().replace("x", " ").split()]
    return tuple(parts * 3 if len(parts) == 1 else parts)


class LadderAtAGlance(SphinxDirective):
    """``{ladder-at-a-glance}``: the whole ladder's table and figure, read from bench JSON
    files at build time. Options: ``:files:`` (paths from the repository root, a column
    each; default :data:`GLANCE_FILES`), ``:size:`` (``4096`` or ``MxNxK``; default
    :data:`gemmlab.book.ladder_glance.SIZE`) and ``:precision:`` (chapters 8 and 9's
    format, ``BF16`` or ``FP16``; default BF16). The figure goes into the build as SVG."""

    option_spec = {"files": directives.unchanged, "size": directives.unchanged,
                   "precision": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        import hashlib
        import posixpath

        from gemmlab.book import ladder_glance as glance
        from gemmlab.gemm import whole_ladder

        files = self.options.get("files", " ".join(GLANCE_FILES)).split()
        size = _size(self.options["size"]) if "size" in self.options else glance.SIZE
        precision = self.options.get("precision", "BF16")
        try:
            for f in files:
                self.env.note_dependency(str(ROOT / f))    # a new file, a new page
            runs = [glance.load(ROOT / f) for f in files]
            steps = [glance.Step(*s) for s in whole_ladder.steps(precision)]
            table_rows = glance.rows(steps, runs, size)
        except (OSError, ValueError, KeyError) as exc:
            raise self.error(f"ladder-at-a-glance: {exc}") from exc
        out: list[nodes.Node] = [_glance_table(glance, table_rows, runs)]
        notes = nodes.bullet_list(classes=["ladder-glance-notes"])
        for note in glance.notes(table_rows, runs, size):
            item = nodes.list_item()
            item += _paragraph(note)
            notes += item
        out.append(notes)
        svg = glance.svg(glance.figure(table_rows, runs, size))
        name = f"ladder-at-a-glance-{hashlib.sha256(svg.encode()).hexdigest()[:12]}.svg"
        images = Path(self.env.app.outdir) / "_images"
        images.mkdir(parents=True, exist_ok=True)
        (images / name).write_text(svg, encoding="utf-8")
        here = posixpath.dirname(self.env.docname) or "."
        src = html.escape(posixpath.relpath(f"_images/{name}", here), quote=True)
        alt = html.escape(glance.alt_text(table_rows, runs, size), quote=True)
        gpus = " and ".join(r.short for r in runs)
        caption = html.escape(f"Every step of the ladder at {glance.size_label(size)}, "
                              f"{gpus}: TFLOP/s on a log scale.")
        figure = (f'<figure class="ladder-glance-figure"><img src="{src}" alt="{alt}">'
                  f"<figcaption>{caption}</figcaption></figure>")
        out.append(nodes.raw("", figure, format="html"))
        return out


def setup(app):
    app.setup_extension("sphinx.ext.extlinks")
    app.connect("config-inited", _results_role)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    app.connect("config-inited", _no_top_bar)     # before the theme's builder-inited reads the options
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    app.connect("doctree-resolved", _assets_once_per_page)
    app.connect("html-page-context", _launch_only_with_setup, priority=600)   # after the theme's (501)
    app.add_directive("ladder-at-a-glance", LadderAtAGlance)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
