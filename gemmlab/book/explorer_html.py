"""The HTML of an explorer page (the Occupancy Calculator, the Bank Conflict Explorer): one self-contained
output with its style, its data as JSON, and its script, which mounts the page on its ``<div>``. Python
renders the data, so the page has the same numbers as the model; nothing is fetched from a network.
"""

from __future__ import annotations

import json
from pathlib import Path

ASSETS = Path(__file__).resolve().parent / "explorer_assets"


def render(css_class: str, uid: str, title: str, payload: dict, asset: str, script_object: str,
           assets: Path = ASSETS) -> str:
    """The output for one explorer: ``<div class=css_class id=uid>``, ``asset``.css and ``asset``.js from
    ``assets``, ``payload`` as JSON, and the call ``script_object.mount(div, payload)``."""
    css = (assets / f"{asset}.css").read_text(encoding="utf-8")
    js = (assets / f"{asset}.js").read_text(encoding="utf-8")
    blob = json.dumps(payload, separators=(",", ":")).replace("</", "<\\/")
    return (f'<div class="{css_class}" id="{uid}"><noscript>The {title} needs JavaScript.</noscript></div>\n'
            f"<style>{css}</style>\n"
            f'<script type="application/json" id="{uid}-data">{blob}</script>\n'
            f"<script>{js}\n{script_object}.mount(document.getElementById({json.dumps(uid)}), "
            f"JSON.parse(document.getElementById({json.dumps(uid + '-data')}).textContent));</script>")
