"""Math typeset without a network: MathJax served from the built book instead of a CDN.

Sphinx's ``mathjax`` extension points every page at MathJax on jsDelivr, so a downloaded copy of the
book, or a reader offline, sees raw TeX. This extension takes MathJax 3 from the ``sphinx-mathjax-offline``
package on PyPI (a pinned build dependency), copies the files a page can load (the ``tex-chtml``
component, its fonts, the TeX extensions it loads on demand, the menu and the accessibility tools with
their speech-rule engine) into ``_static/mathjax/`` and points ``mathjax_path`` there.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from sphinx.util.fileutil import copy_asset

PACKAGE = "sphinx-mathjax-offline"      # its import name is the distribution's, hyphens included
COMPONENT = "tex-chtml.js"
SUPPORT = ("output/chtml", "input/tex/extensions", "ui", "a11y", "sre")


def mathjax_source() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"{PACKAGE} is not installed: the book build needs it for offline math "
                           "(pip install -r requirements.txt)")
    return Path(list(spec.submodule_search_locations)[0]) / "static" / "mathjax"


def _point_to_local(app, config):
    config.mathjax_path = f"mathjax/{COMPONENT}"


def _copy(app, exc):
    if exc is not None or app.builder.format != "html":
        return
    src, dest = mathjax_source(), Path(app.outdir) / "_static" / "mathjax"
    copy_asset(str(src / COMPONENT), str(dest))
    for part in SUPPORT:
        copy_asset(str(src / part), str(dest / part))


def setup(app):
    mathjax_source()                      # fail at the start of the build, not at its end
    app.connect("config-inited", _point_to_local)
    app.connect("build-finished", _copy)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
