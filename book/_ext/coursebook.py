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
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from docutils import nodes

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


def setup(app):
    app.setup_extension("sphinx.ext.extlinks")
    app.connect("config-inited", _results_role)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    app.connect("config-inited", _no_top_bar)     # before the theme's builder-inited reads the options
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    app.connect("doctree-resolved", _assets_once_per_page)
    app.connect("html-page-context", _launch_only_with_setup, priority=600)   # after the theme's (501)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
