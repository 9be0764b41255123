"""The Shared Memory Workbench: an interactive step-through of the naive and the tiled kernel.

:func:`plan` replays each kernel block by block, the way its threads would run it, and records
every step with the loads it makes (from global memory, from shared memory, per thread). The
page's JavaScript only plays these steps back and adds them up; every count it shows comes from
here, and the CPU tests check these counts against :mod:`gemmlab.models.traffic`. :func:`show` renders
the widget as self-contained HTML (inline CSS, JS and data; no network request) for Jupyter,
Colab and the book.

Every output carries the style and the script, so that each one works alone (Colab shows every
output in a frame of its own). Both are marked ``data-page-once``: the script defines
``window.SMWorkbench`` only once per page, and the book's build (``book/_ext/coursebook.py``)
keeps only the first copy of each on a page that shows several widgets.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from ..models import traffic

ASSETS = Path(__file__).resolve().parent / "workbench_assets"
MAX_ELEMENTS = 64 * 64          # the page draws one SVG cell per element of A, B and C


def _in_range(block: tuple[int, int], M: int, N: int, T: int) -> list[int]:
    """1 for each thread (row-major, x fastest) of block (by, bx) whose element lies inside C."""
    by, bx = block
    return [int(by * T + ty < M and bx * T + tx < N) for ty in range(T) for tx in range(T)]


def naive_steps(block: tuple[int, int], M: int, N: int, K: int, T: int) -> list[dict]:
    """One step per k: each thread inside C loads A[row, k] and B[k, col] into registers; then the store."""
    live = _in_range(block, M, N, T)
    steps = [{"kind": "k", "phase": k, "k0": k, "k1": k + 1, "global": 2 * sum(live), "shared": 0,
              "tg": [2 * v for v in live], "ts": None} for k in range(K)]
    steps.append({"kind": "write", "phase": K, "k0": K, "k1": K, "global": 0, "shared": 0, "tg": None, "ts": None})
    return steps


def tiled_steps(block: tuple[int, int], M: int, N: int, K: int, T: int) -> list[dict]:
    """Per phase: load (guarded global loads into s_A and s_B), sync, compute (2·T shared reads per
    thread, padding included), sync; then the guarded store."""
    by, bx = block
    steps = []
    for p, k0 in enumerate(range(0, K, T)):
        tg = []
        for ty, tx in itertools.product(range(T), range(T)):
            row, col = by * T + ty, bx * T + tx
            tg.append(int(row < M and k0 + tx < K) + int(k0 + ty < K and col < N))
        k1 = min(k0 + T, K)
        steps += [
            {"kind": "load", "phase": p, "k0": k0, "k1": k1, "global": sum(tg), "shared": 0, "tg": tg, "ts": None},
            {"kind": "sync", "phase": p, "k0": k0, "k1": k1, "global": 0, "shared": 0, "tg": None, "ts": None},
            {"kind": "compute", "phase": p, "k0": k0, "k1": k1, "global": 0, "shared": 2 * T * T * T,
             "tg": None, "ts": [2 * T] * (T * T)},
            {"kind": "sync", "phase": p, "k0": k0, "k1": k1, "global": 0, "shared": 0, "tg": None, "ts": None},
        ]
    steps.append({"kind": "write", "phase": len(steps) // 4, "k0": K, "k1": K, "global": 0, "shared": 0,
                  "tg": None, "ts": None})
    return steps


@dataclass(frozen=True)
class Plan:
    """Every step of one kernel on one problem, stored as a few distinct per-block templates."""

    mode: str
    M: int
    N: int
    K: int
    T: int
    templates: list
    block_template: list          # template index for block by * gx + bx

    @property
    def grid(self) -> tuple[int, int]:
        return traffic.grid_for(self.M, self.N, self.T)

    def steps(self) -> Iterator[tuple[int, dict]]:
        """Every step of every block in launch order (blocks row by row)."""
        for b, t in enumerate(self.block_template):
            for s in self.templates[t]:
                yield b, s

    def totals(self) -> dict:
        steps = list(self.steps())
        return {"steps": len(steps), "barriers": sum(s["kind"] == "sync" for _, s in steps),
                "global": sum(s["global"] for _, s in steps), "shared": sum(s["shared"] for _, s in steps)}

    def as_json(self) -> dict:
        gx, gy = self.grid
        return {"mode": self.mode, "T": self.T, "grid": [gx, gy], "blocks": gx * gy, "templates": self.templates,
                "block_template": self.block_template, "totals": self.totals()}


def plan(mode: str, M: int, N: int, K: int, T: int) -> Plan:
    """The step-by-step replay of the ``naive`` or ``tiled`` kernel with T×T blocks."""
    if mode not in ("naive", "tiled"):
        raise ValueError(f"mode must be 'naive' or 'tiled', got {mode!r}")
    check_size(M, N, K, T)
    gx, gy = traffic.grid_for(M, N, T)
    make = naive_steps if mode == "naive" else tiled_steps
    templates: list[list[dict]] = []
    index: dict[str, int] = {}
    block_template: list[int] = []
    for by, bx in itertools.product(range(gy), range(gx)):
        steps = make((by, bx), M, N, K, T)
        key = json.dumps(steps)
        if key not in index:
            index[key] = len(templates)
            templates.append(steps)
        block_template.append(index[key])
    return Plan(mode, M, N, K, T, templates, block_template)


def check_size(M: int, N: int, K: int, T: int) -> None:
    for name, v in (("M", M), ("N", N), ("K", K), ("T", T)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if max(M * K, K * N, M * N) > MAX_ELEMENTS:
        raise ValueError(f"the workbench draws every element: keep each matrix at {MAX_ELEMENTS} elements or "
                         f"fewer (M={M}, N={N}, K={K} is too large); the models in gemmlab.models.traffic take any size")
    if T * T > 1024:
        raise ValueError(f"T = {T} needs {T * T} threads per block; a block holds at most 1024 (T <= 32)")


def tile_choices(M: int, N: int, K: int) -> list[int]:
    """The tile sizes the page offers: powers of two up to the smallest of M, N, K (and 32)."""
    top = min(M, N, K, 32)
    return [t for t in (1, 2, 4, 8, 16, 32) if t <= top]


def reuse_table(M: int, N: int, K: int, T: int) -> dict:
    """The "reuse grows with the tile size" numbers for one T, all from gemmlab.models.traffic."""
    gx, gy = traffic.grid_for(M, N, T)
    naive, tiled = traffic.naive_traffic(M, N, K), traffic.tiled_traffic(M, N, K, T)
    return {"T": T, "blocks": gx * gy, "threads_per_block": T * T,
            "naive_global_loads": naive.loads, "tiled_global_loads": tiled.loads,
            "naive_loads_per_block": naive.loads / (gx * gy), "tiled_loads_per_block": tiled.loads / (gx * gy),
            "reuse": naive.loads / tiled.loads, "shared_bytes": traffic.tiled_shared_bytes(T),
            "tiled_shared_loads": traffic.tiled_shared_loads(M, N, K, T)}


def data(M: int = 16, N: int = 16, K: int = 16, T: int = 2) -> dict:
    """Everything the page needs, for every tile size it offers."""
    check_size(M, N, K, T)
    tiles = sorted(set(tile_choices(M, N, K)) | {T})
    return {"M": M, "N": N, "K": K, "T": T, "tiles": tiles,
            "plans": {mode: {str(t): plan(mode, M, N, K, t).as_json() for t in tiles} for mode in ("naive", "tiled")},
            "reuse": {str(t): reuse_table(M, N, K, t) for t in tiles},
            "shared_bytes_T32": traffic.tiled_shared_bytes(32), "max_threads_per_block": 1024}


_instances = 0


class Workbench:
    """Displays as the interactive widget (``text/html``) in Jupyter, Colab and the book."""

    def __init__(self, M: int = 16, N: int = 16, K: int = 16, T: int = 2, mode: str = "naive") -> None:
        global _instances
        if mode not in ("naive", "tiled"):
            raise ValueError(f"mode must be 'naive' or 'tiled', got {mode!r}")
        self.payload = data(M, N, K, T)
        self.payload["mode"] = mode
        _instances += 1
        self.uid = f"smwb{_instances}"        # deterministic per process: stable notebook outputs

    def __repr__(self) -> str:
        d = self.payload
        return f"<Shared Memory Workbench: {d['M']}x{d['N']}x{d['K']}, T = {d['T']}, {d['mode']} mode>"

    def _repr_html_(self) -> str:
        return page_html(self.payload, self.uid)


# The marks on the shared assets; a page needs each of them once (see the module's docstring).
STYLE_MARK = 'data-page-once="smwb-style"'
SCRIPT_MARK = 'data-page-once="smwb-script"'


def page_html(payload: dict, uid: str) -> str:
    """The self-contained widget: a container, its CSS, its data, the script and its mount call."""
    css = (ASSETS / "workbench.css").read_text(encoding="utf-8")
    js = (ASSETS / "workbench.js").read_text(encoding="utf-8")
    blob = json.dumps(payload, separators=(",", ":")).replace("</", "<\\/")
    return (f'<div class="smwb" id="{uid}" data-workbench="1"><noscript>The Shared Memory Workbench needs '
            f'JavaScript.</noscript></div>\n<style {STYLE_MARK}>{css}</style>\n'
            f'<script type="application/json" id="{uid}-data">{blob}</script>\n'
            f"<script {SCRIPT_MARK}>{js}</script>\n"
            f"<script>{_MOUNT % (json.dumps(uid), json.dumps(uid + '-data'))}</script>")


# Mount on the container just before this script: ids can repeat when a notebook keeps outputs of
# two kernel sessions side by side, so look for the siblings first and use the ids only as a fallback.
_MOUNT = """(function () {
  var c = null, d = null, e = document.currentScript && document.currentScript.previousElementSibling;
  for (; e; e = e.previousElementSibling) {
    if (!d && e.type === "application/json") d = e;
    if (e.getAttribute && e.getAttribute("data-workbench")) { c = e; break; }
  }
  if (!c || !d) { c = document.getElementById(%s); d = document.getElementById(%s); }
  if (!window.SMWorkbench) { c.textContent = "The Workbench's script did not load: run the cell again."; return; }
  window.SMWorkbench.mount(c, JSON.parse(d.textContent));
})();"""


def show(M: int = 16, N: int = 16, K: int = 16, T: int = 2, mode: str = "naive") -> Workbench:
    """The workbench for an M×K times K×N product with T×T blocks (default: the 16×16, T = 2 demo)."""
    return Workbench(M, N, K, T, mode)
