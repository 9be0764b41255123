"""The Pipeline Explorer page: chapter 9's ring of stages stepped through cycle by cycle, with no GPU.

Every schedule the page can show is played here by the protocol model (:func:`gemmlab.models.pipeline.play`, with a
:class:`~gemmlab.models.pipeline.Timed` clock) and handed to the page as data: the page's JavaScript
(``explorer_assets/pipeline.js``) only draws the rows of a trace, so it cannot disagree with the model that the
CPU tests play. The choices: 2 to 6 stages, one or two consumer warpgroups, the cooperative or the ping-pong
schedule, and a fault (a barrier told to expect 16 bytes too many, a wait on the wrong parity, ping-pong without
its turns). Self-contained HTML: no network request.
"""

from __future__ import annotations

from typing import Any

from ..models import pipeline
from . import explorer_html

ASSETS = explorer_html.ASSETS
STAGES = (2, 3, 4, 5, 6)
CLOCK = pipeline.Timed(copy_cycles=6, mma_cycles=4)
WORK = {"cooperative": (2, 6), "pingpong": (4, 6)}       # (tiles, K-tiles per tile) the block computes
DEFAULT = pipeline.Config(stages=4, consumers=2, schedule="cooperative", tiles=2, k_tiles=6)


def configurations() -> list[pipeline.Config]:
    """Every configuration the page offers, the default first."""
    out = [DEFAULT]
    for schedule in pipeline.SCHEDULES:
        tiles, k_tiles = WORK[schedule]
        for consumers in ((1, 2) if schedule == "cooperative" else (2,)):
            for stages in STAGES:
                faults = (None, "expect_tx", "parity") + (("no_turns",) if schedule == "pingpong" else ())
                for fault in faults:
                    c = pipeline.Config(stages, consumers, schedule, tiles, k_tiles, fault)
                    if c != DEFAULT:
                        out.append(c)
    return out


def key(config: pipeline.Config) -> str:
    """The page's name for a configuration: ``s4-c2-cooperative-none``."""
    return f"s{config.stages}-c{config.consumers}-{config.schedule}-{config.fault or 'none'}"


class _Strings:
    """Each text once: the rows refer to them by index (the traces repeat the same few hundred labels)."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        return self.index.setdefault(text, len(self.index))

    def table(self) -> list[str]:
        return list(self.index)


def _row(row: dict, s: _Strings) -> list[Any]:
    """One cycle: [agents' texts, engine events, full, empty, turn (phase, pending, tx each), stages, error]."""
    barrier = lambda b: [b["phase"], b["pending"], b["tx"]]                      # noqa: E731
    return [[s(text) for text in row["agents"].values()], [s(e) for e in row["engines"]],
            [barrier(b) for b in row["full"]], [barrier(b) for b in row["empty"]], [barrier(b) for b in row["turn"]],
            [[st["k_tile"], st["bytes"]] for st in row["stages"]], s(row["error"]) if "error" in row else None]


def data() -> dict:
    """Everything the page needs: each configuration's trace, played by the model, and the texts they use."""
    strings = _Strings()
    traces = {}
    for config in configurations():
        outcome = pipeline.play(config, CLOCK)
        traces[key(config)] = {"agents": [strings(name) for name in pipeline.Block(config).agents],
                               "rows": [_row(r, strings) for r in outcome.trace],
                               "error": outcome.error, "stored": outcome.stored}
    return {"strings": strings.table(), "traces": traces, "default": key(DEFAULT), "stages": list(STAGES),
            "stage_bytes": list(DEFAULT.stage_bytes), "work": WORK,
            "clock": {"copy_cycles": CLOCK.copy_cycles, "mma_cycles": CLOCK.mma_cycles}}


_instances = 0


class PipelineExplorer:
    """Displays as the interactive explorer (``text/html``) in Jupyter, Colab and the book."""

    def __init__(self) -> None:
        global _instances
        self.payload = data()
        _instances += 1
        self.uid = f"ppx{_instances}"        # deterministic per process: stable notebook outputs

    def __repr__(self) -> str:
        return f"<Pipeline Explorer: {len(self.payload['traces'])} schedules played by gemmlab.models.pipeline>"

    def _repr_html_(self) -> str:
        return explorer_html.render("ppx", self.uid, "Pipeline Explorer", self.payload, "pipeline",
                                    "PipelineExplorer", ASSETS)


def show() -> PipelineExplorer:
    """The explorer, at the default configuration: 4 stages, two cooperative consumers, no fault."""
    return PipelineExplorer()
