"""Sphinx fixes for the pinned Jupyter Book 1 stack, loaded through ``sphinx.local_extensions``.

- ``autodoc`` imports ``gemmlab`` from this checkout, installed or not (book/api.md).
- Sphinx 7.4 renders a ``<script>`` that an extension adds with a body and no file name twice
  (``app.add_js_file(None, body=...)`` during the build). sphinx-thebe 0.3.1 adds
  ``const THEBE_JS_URL = ...`` that way, so every page threw "Identifier 'THEBE_JS_URL' has
  already been declared" in the browser. Each page keeps the first copy of each script.
"""

from __future__ import annotations

import sys
from pathlib import Path

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


def setup(app):
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
