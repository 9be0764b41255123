"""The pictures of chapters 8 and 9's pipelines (matplotlib), each drawn from a model, never from numbers placed
by hand: chapter 9's producer/consumer ring (:func:`ring_timeline`) and its two schedules (:func:`schedules`) from
timed plays of :mod:`gemmlab.models.pipeline`; ``wgmma``'s accumulators across a warpgroup from
:func:`gemmlab.models.hopper.wgmma_d_position` (:func:`wgmma_accumulators`); a cluster's multicast of B
(:func:`cluster_multicast`); the stream-K split from :func:`gemmlab.models.streamk.plan` (:func:`streamk_split`);
and chapter 8's ``cp.async`` ring from :func:`gemmlab.models.cp_async.ring` (:func:`cp_async_ring`).

They follow :mod:`gemmlab.book.figures`' style: as wide as the content column, text of at least
:data:`~gemmlab.book.figures.FONT_PT`, colours from :data:`~gemmlab.book.figures.PALETTE`. Where a colour says what
a block is, a hatch or a label says it too, and a block's label is drawn only where it fits inside the block (a
shorter form of it where the long one does not), so no label overlaps another. Each drawn block carries a ``gid``
(``"lane|kind"``) that the tests count against the model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..models import cp_async, hopper, pipeline, streamk
from .figures import FONT_PT, MUTED, PALETTE, new

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch, Rectangle
    from matplotlib.text import Text

INK = "#1a1a1a"
"""The colour of text on light fills, with a contrast of 15 or more on them."""

WAIT_FILL = "#ececec"
"""The fill of a wait, or of idle time, a light grey (hatched in :data:`WAIT_HATCH`)."""
WAIT_HATCH = "#8c8c8c"
"""The hatch of a wait, or of idle time, a darker grey; also the edge of an empty stage."""


@dataclass(frozen=True)
class Look:
    """How one kind of block is drawn: its fill, hatch (``""``: none) and hatch colour, and its label's colour."""

    face: str
    hatch: str = ""
    hatch_color: str = "white"
    text: str = "white"


LOOKS = {
    "copy": Look(PALETTE[0]),                                      # an agent issues a copy (TMA, cp.async)
    "wgmma": Look(PALETTE[2]),                                     # a consumer issues wgmma
    "release": Look(PALETTE[4], "x"),                             # a consumer arrives on empty[s]
    "handover": Look(PALETTE[3], "oo"),                            # ping-pong: arrive on turn[c]
    "store": Look(PALETTE[1], ".."),                               # the epilogue
    "sync": Look(PALETTE[3], "oo"),                                # __syncthreads()
    "wait": Look(WAIT_FILL, "///", WAIT_HATCH, MUTED),             # a wait on a barrier
    "idle": Look(WAIT_FILL, "///", WAIT_HATCH, MUTED),             # the tensor cores with nothing to do
    "landing": Look("#dbe7f5", "////", PALETTE[0], INK),           # a stage whose bytes are on their way
    "full": Look(PALETTE[5]),                                      # a stage full, not being read
    "read": Look(PALETTE[2]),                                      # a stage read by wgmma (or mma)
    "cut": Look(PALETTE[7], "//"),                                 # stream-K: a part of a tile cut between units
}
"""The looks of the blocks, by kind."""


# ---------------------------------------------------------------------------------------------------
# Blocks and their labels


@dataclass
class _Label:
    text: Text
    box: Rectangle
    candidates: Sequence[str]


def _block(ax: Axes, x0: float, x1: float, y: float, height: float, kind: str | Look, gid: str,
           labels: list[_Label] | None = None, candidates: Sequence[str] = ()) -> Rectangle:
    """A block of ``kind`` (a key of :data:`LOOKS`, or a :class:`Look`) from ``x0`` to ``x1``, centred on ``y``; its
    label (the first of ``candidates`` that fits) is registered in ``labels`` for :func:`_fit`."""
    from matplotlib.patches import Rectangle

    look = kind if isinstance(kind, Look) else LOOKS[kind]
    rect = Rectangle((x0, y - height / 2), x1 - x0, height, facecolor=look.face, hatch=look.hatch or None,
                     hatchcolor=look.hatch_color, edgecolor="white", linewidth=1.0, gid=gid)
    ax.add_patch(rect)
    if candidates and labels is not None:
        text = ax.text((x0 + x1) / 2, y, candidates[0], ha="center", va="center", color=look.text, clip_on=True,
                       bbox={"facecolor": look.face, "edgecolor": "none", "pad": 0.0})
        text.set_in_layout(False)
        labels.append(_Label(text, rect, candidates))
    return rect


def _fit(fig: Figure, labels: list[_Label]) -> None:
    """Give each label the first of its candidates that fits inside its block with a margin (6 px a side, less in a
    narrow block), and remove the ones none fits."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()           # type: ignore[attr-defined]
    for label in labels:
        box = label.box.get_window_extent(renderer)
        for candidate in label.candidates:
            label.text.set_text(candidate)
            extent = label.text.get_window_extent(renderer)
            if extent.width <= box.width - min(12.0, box.width / 4) and extent.height <= box.height + 1:
                break
        else:
            label.text.remove()


def _legend(fig: Figure, entries: Sequence[tuple[str, str]], ncol: int = 2) -> None:
    """A legend under the axes: one patch per ``(kind, text)``, in the kind's look."""
    from matplotlib.patches import Patch

    handles: list[Patch] = []
    for kind, text in entries:
        look = LOOKS.get(kind)
        if look is None:                            # "empty": a white block with a grey edge
            handles.append(Patch(facecolor="white", edgecolor=WAIT_HATCH, label=text))
        else:
            handles.append(Patch(facecolor=look.face, hatch=look.hatch or None, hatchcolor=look.hatch_color,
                                 edgecolor="white", label=text))
    fig.legend(handles=handles, loc="outside lower center", ncol=ncol, frameon=False, handlelength=1.6,
               handleheight=1.1, columnspacing=1.2, borderaxespad=0.2)


def _lanes(ax: Axes, names: Sequence[str], ys: Sequence[float], x0: float, x1: float) -> None:
    ax.set_yticks(list(ys), list(names))
    ax.set_xlim(x0, x1)
    ax.tick_params(axis="y", length=0)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)


# ---------------------------------------------------------------------------------------------------
# Chapter 9's ring, from pipeline.play's timed trace

_COPY = re.compile(r".*copy K-tile (\d+) into stage (\d+)$")
_WGMMA = re.compile(r"issue wgmma on stage (\d+) \(K-tile (\d+)\)$")
_TENSOR_DONE = re.compile(r"tensor cores: consumer (\d+)'s wgmma on stage (\d+) done$")


@dataclass(frozen=True)
class Cell:
    """What one agent does in one cycle of a trace, for drawing: its ``kind`` (a key of :data:`LOOKS`), a ``key``
    that runs of cycles share when they are one block (the same wait, the same store), and the labels to try."""

    kind: str
    key: str
    labels: tuple[str, ...] = ()


def classify(text: str, storing: int | None = None) -> Cell | None:
    """The :class:`Cell` of one agent's entry in a timed trace (``row["agents"][name]``); None where the agent has
    ended. ``storing`` is the tile whose epilogue the agent is in (for "waits on its stores"). Every text the
    model writes has a cell; an unknown one raises ValueError, so that a change of the model's words shows."""
    if text == "done" or text.startswith("stopped"):
        return None
    if m := _COPY.match(text):
        return Cell("copy", f"copy {m[1]}", (m[1],))
    if m := _WGMMA.match(text):
        return Cell("wgmma", f"wgmma {m[2]}", (m[2],))
    if m := re.fullmatch(r"release stage (\d+)", text):
        return Cell("release", f"release {m[1]}", (m[1],))
    if m := re.fullmatch(r"hand the tensor cores to consumer (\d+)", text):
        return Cell("handover", f"handover {m[1]}")
    if m := re.fullmatch(r"store tile (\d+)|tile (\d+) stored", text):
        tile = m[1] or m[2]
        return Cell("store", f"store {tile}", (f"store tile {tile}", f"tile {tile}", tile))
    if text == "waits on its stores":
        return Cell("store", f"store {storing}", (f"store tile {storing}", f"tile {storing}", f"{storing}"))
    barrier = None
    if m := re.fullmatch(r"waits on (\w+\[\d+\]) phase \d+", text):
        barrier = m[1]
    elif m := re.fullmatch(r"waits on wgmma\.wait_group (\d+)", text):
        barrier = f"wait_group {m[1]}"
    elif m := re.fullmatch(r"wait until stage (\d+) is (full|empty)", text):
        barrier = f"{m[2]}[{m[1]}]"
    elif text == "wait for the wgmma before":
        barrier = "wait_group 1"
    elif text == "wait for the last wgmma":
        barrier = "wait_group 0"
    elif m := re.fullmatch(r"wait for tile \d+'s main loop \(consumer (\d+)\)", text):
        barrier = f"turn[{m[1]}]"
    if barrier is None:
        raise ValueError(f"a step the figures do not know: {text!r}")
    short = barrier.replace("wait_group ", "wg ")
    return Cell("wait", f"wait {barrier}", (barrier, short) if short != barrier else (barrier,))


def agent_cells(trace: Sequence[dict], agent: str) -> list[Cell | None]:
    """One :class:`Cell` per cycle of ``trace`` for ``agent``."""
    cells: list[Cell | None] = []
    storing: int | None = None
    for row in trace:
        text = row["agents"][agent]
        if m := re.fullmatch(r"store tile (\d+)", text):
            storing = int(m[1])
        cells.append(classify(text, storing))
    return cells


def _runs(cells: Sequence[Any], start: int) -> list[tuple[int, int, Any]]:
    """Runs of equal, non-None cells: ``(first cycle, end cycle, cell)``, cycles counted from ``start``."""
    out: list[tuple[int, int, Any]] = []
    for i, cell in enumerate(cells):
        if cell is None:
            continue
        if out and out[-1][1] == start + i and out[-1][2] == cell:
            out[-1] = (out[-1][0], start + i + 1, cell)
        else:
            out.append((start + i, start + i + 1, cell))
    return out


def stage_states(trace: Sequence[dict], stage: int) -> list[tuple[str, int | None]]:
    """Per cycle of ``trace``, the state of ``stage`` after that cycle and the K-tile it concerns: ``"landing"``
    (``full[s]`` still expects bytes: the K-tile last copied into it), ``"read"`` (a consumer's wgmma on it is in
    flight), ``"full"`` (filled more times than released) or ``"empty"``."""
    out: list[tuple[str, int | None]] = []
    copied: int | None = None
    for row in trace:
        if m := _COPY.match(row["agents"].get("producer", "")):
            if int(m[2]) == stage:
                copied = int(m[1])
        full, empty, held = row["full"][stage], row["empty"][stage], row["stages"][stage]["k_tile"]
        if full["tx"] > 0:
            out.append(("landing", copied))
        elif any(stage in groups for groups in row["groups"].values()):
            out.append(("read", held))
        elif full["phase"] > empty["phase"]:
            out.append(("full", held))
        else:
            out.append(("empty", None))
    return out


def _window(trace: Sequence[dict], cycles: int | range | None, default: int = 40) -> range:
    if cycles is None:
        cycles = min(default, len(trace))
    window = range(cycles) if isinstance(cycles, int) else cycles
    if not window or window.step != 1 or window.start < 0 or window.stop > len(trace):
        raise ValueError(f"cycles must be a non-empty run of the trace's {len(trace)} cycles, got {cycles!r}")
    return window


def ring_timeline(outcome: pipeline.Outcome, cycles: int | range | None = None, title: str = "") -> Figure:
    """Chapter 9's ring over time, from a timed :func:`gemmlab.models.pipeline.play`: x is the cycle (the first 40,
    or ``cycles``: a count from 0 or a ``range``). One lane per agent (producer, consumers): each copy the producer
    issues, each wgmma a consumer issues (labelled with the K-tile), each stage it releases (labelled with the stage),
    its stores, and its waits as hatched spans named by the barrier (``full[0]``, ``empty[1]``, ``wait_group 1``,
    ``turn[1]``; ``wg 1`` where the long name does not fit). Below, one lane per stage: empty (white), bytes
    landing (hatched), full, read by wgmma, labelled with the K-tile; above each, ``parity p`` where its full barrier
    completes a phase (p, the phase's parity, is what the next wait's parity is checked against).

    Alt text: A timeline of the producer, the two consumers and the four stages of the ring, cycle by cycle: the
    producer issues four copies and then waits on empty barriers, the consumers wait on full barriers and issue
    wgmma, and each stage goes from landing to full to read by wgmma, its full barrier's parity flipping at each fill.
    """
    trace = outcome.trace
    window = _window(trace, cycles)
    rows = trace[window.start:window.stop]
    agents = list(trace[0]["agents"])
    stages = len(trace[0]["full"])
    pingpong = bool(trace[0]["turn"])
    agent_y = list(range(len(agents)))
    stage_y = [len(agents) + 0.9 + 1.45 * s for s in range(stages)]
    fig, ax = new(height=0.42 * len(agents) + 0.72 * stages + 2.6)
    labels: list[_Label] = []
    for name, lane in zip(agents, agent_y):
        for a, b, cell in _runs(agent_cells(trace, name)[window.start:window.stop], window.start):
            _block(ax, a, b, lane, 0.72, cell.kind, f"{name}|{cell.kind}", labels, cell.labels)
    for s, y in enumerate(stage_y):
        states = stage_states(trace, s)
        for a, b, (state, kt) in _runs(states[window.start:window.stop], window.start):
            if state == "empty":
                from matplotlib.patches import Rectangle

                ax.add_patch(Rectangle((a, y - 0.32), b - a, 0.64, facecolor="white", edgecolor=WAIT_HATCH,
                                       linewidth=0.8, gid=f"stage {s}|empty"))
                continue
            _block(ax, a, b, y, 0.64, state, f"stage {s}|{state}", labels,
                   (f"K-tile {kt}", f"K{kt}", f"{kt}") if kt is not None else ())
        before = trace[window.start - 1]["full"][s]["phase"] if window.start else 0
        for row in rows:
            phase = row["full"][s]["phase"]
            if phase != before:
                c = row["cycle"]
                ax.plot([c, c], [y - 0.34, y - 0.62], color=INK, lw=1.5, solid_capstyle="butt", gid=f"stage {s}|phase")
                right = c + 9 > window.stop
                ax.text(c - 0.2 if right else c + 0.2, y - 0.62, f"parity {phase & 1}", ha="right" if right else "left",
                        va="bottom", color=INK, gid=f"stage {s}|parity")
            before = phase
    _lanes(ax, [*agents, *[f"stage {s}" for s in range(stages)]], [*agent_y, *stage_y], window.start, window.stop)
    ax.set_ylim(stage_y[-1] + 0.55, -0.6)
    ax.axhline(len(agents) - 0.35, color=WAIT_HATCH, lw=0.8)
    ax.set_xticks(range(window.start - window.start % 5, window.stop + 1, 5))
    ax.set_xlabel("cycle")
    schedule = "ping-pong" if pingpong else "cooperative"
    ax.set_title(title or f"The ring, cycle by cycle ({schedule}, {stages} stages):\n"
                          f"cycles {window.start}–{window.stop - 1} of {len(trace)}", loc="left")
    kinds = {p.get_gid().split("|")[1] for p in ax.patches}
    entries = [("copy", "issue copies (K-tile)"), ("wgmma", "issue wgmma (K-tile)"),
               ("release", "release a stage (stage)"), ("handover", "hand over the tensor cores"),
               ("store", "store a tile"), ("wait", "wait (barrier; wg n: wait_group n)"),
               ("empty", "stage empty"), ("landing", "bytes landing (K-tile)"), ("full", "stage full"),
               ("read", "read by wgmma")]
    _legend(fig, [(k, t) for k, t in entries if k in kinds or k in ("empty", "landing", "full", "read")])
    _fit(fig, labels)
    return fig


# ---------------------------------------------------------------------------------------------------
# The two schedules of chapter 9


@dataclass(frozen=True)
class Group:
    """One wgmma group on the tensor cores: whose, from ``start`` to ``end`` (cycles), and for which tile (None where
    the trace ends before the consumer stores it)."""

    consumer: int
    start: int
    end: int
    tile: int | None


def tensor_groups(trace: Sequence[dict]) -> list[Group]:
    """The wgmma groups of a timed trace as the tensor cores took them: in the order they were issued, each from
    when it was issued or the group before it ended (whichever is later) to when the trace says it was done. A
    group is the tile's whose epilogue its consumer runs next."""
    issued: list[tuple[int, int]] = []              # (cycle, consumer), in issue order
    done: list[tuple[int, int]] = []
    for row in trace:
        done += [(row["cycle"], int(m[1])) for e in row["engines"] if (m := _TENSOR_DONE.match(e))]
        issued += [(row["cycle"], int(name.split()[-1])) for name, text in row["agents"].items() if _WGMMA.match(text)]
    stores = {n: [(row["cycle"], int(m[1])) for row in trace
                  if (m := re.fullmatch(r"store tile (\d+)", row["agents"][f"consumer {n}"]))]
              for n in {c for _, c in issued}}
    out, free = [], 0
    for (cycle, n), (at, who) in zip(issued, done):
        if who != n:
            raise ValueError(f"the tensor cores finished consumer {who}'s group where consumer {n}'s was oldest")
        before = sum(1 for c, _ in stores[n] if c < cycle)        # the consumer's epilogues begun before the group
        out.append(Group(n, max(cycle, free), at, stores[n][before][1] if before < len(stores[n]) else None))
        free = at
    return out


def store_spans(trace: Sequence[dict], consumer: int) -> list[tuple[int, int, int]]:
    """``(first cycle, end cycle, tile)`` of each epilogue of ``consumer``: from "store tile i" to "tile i stored"."""
    out, begun = [], {}
    for row in trace:
        text = row["agents"][f"consumer {consumer}"]
        if m := re.fullmatch(r"store tile (\d+)", text):
            begun[int(m[1])] = row["cycle"]
        elif m := re.fullmatch(r"tile (\d+) stored", text):
            out.append((begun.pop(int(m[1])), row["cycle"] + 1, int(m[1])))
    out += [(a, len(trace), tile) for tile, a in begun.items()]         # the trace ended mid-store
    return out


def idle_spans(trace: Sequence[dict]) -> list[tuple[int, int]]:
    """The spans of the trace's cycles in which the tensor cores run no group."""
    busy = np.zeros(len(trace), dtype=bool)
    for g in tensor_groups(trace):
        busy[g.start:g.end] = True
    return [(a, b) for a, b, _ in _runs([None if b else True for b in busy], 0)]


def _schedule_panel(ax: Axes, outcome: pipeline.Outcome, labels: list[_Label], name: str) -> None:
    trace = outcome.trace
    consumers = sorted(int(a.split()[-1]) for a in trace[0]["agents"] if a.startswith("consumer"))
    groups = tensor_groups(trace)
    for n in consumers:
        mine = [g for g in groups if g.consumer == n]
        for g in mine:
            _block(ax, g.start, g.end, n, 0.7, "wgmma", f"consumer {n}|wgmma")
        # One label per run of the tile's groups, over the groups (a frame with no fill of its own to fit it in).
        runs: list[tuple[int, int, int | None]] = []
        for g in mine:
            if runs and runs[-1][2] == g.tile and g.start == runs[-1][1]:
                runs[-1] = (runs[-1][0], g.end, g.tile)
            else:
                runs.append((g.start, g.end, g.tile))
        for a, b, tile in runs:
            from matplotlib.patches import Rectangle

            frame = Rectangle((a, n - 0.35), b - a, 0.7, fill=False, edgecolor="none", gid=f"consumer {n}|tile")
            ax.add_patch(frame)
            if tile is not None:
                text = ax.text((a + b) / 2, n, f"tile {tile}", ha="center", va="center", color="white", clip_on=True,
                               bbox={"facecolor": LOOKS["wgmma"].face, "edgecolor": "none", "pad": 0.0})
                text.set_in_layout(False)
                labels.append(_Label(text, frame, (f"tile {tile}",)))
        for a, b, tile in store_spans(trace, n):
            _block(ax, a, b, n, 0.7, "store", f"consumer {n}|store", labels, (f"store tile {tile}", f"store {tile}",
                                                                             f"tile {tile}", f"{tile}"))
    y_idle = len(consumers)
    idle = idle_spans(trace)
    for a, b in idle:
        _block(ax, a, b, y_idle, 0.7, "idle", "tensor cores|idle", labels, ("idle",))
    total = sum(b - a for a, b in idle)
    _lanes(ax, [*(f"consumer {n}" for n in consumers), "tensor cores"], [*consumers, y_idle], 0, len(trace))
    ax.set_ylim(y_idle + 0.55, -0.55)
    tiles = len({tile for _, tile in outcome.stored})
    ax.set_title(f"{name}: {tiles} tiles, {len(groups)} wgmma groups in {len(trace)} cycles;\n"
                 f"the tensor cores idle for {total} of them", loc="left")


def schedules(cooperative: pipeline.Outcome, pingpong: pipeline.Outcome, title: str = "") -> Figure:
    """The cooperative and the ping-pong schedules, from two timed plays of equal work (e.g. 2 tiles of 6 K-tiles
    cooperative, 4 half-size tiles ping-pong), one panel each on the same x scale (cycles): per consumer, each wgmma
    group while it occupies the tensor cores (green, its tile's number over each run) and each epilogue (red,
    dotted: "store tile i" to "tile i stored"); and a row for the tensor cores' idle cycles (hatched). In the
    cooperative schedule both consumers store at once and the tensor cores idle; in ping-pong one consumer stores
    while the other's main loop runs.

    Alt text: Two timelines on one scale: in the cooperative schedule both consumers' wgmma groups alternate on the
    tensor cores and then both store at the same time while the tensor cores sit idle; in the ping-pong schedule one
    consumer's stores overlap the other's wgmma groups, so the tensor cores idle only at the start and the end.
    """
    fig, axes = new(2, 1, height=5.6, sharex=True)
    labels: list[_Label] = []
    _schedule_panel(axes[0], cooperative, labels, "cooperative")
    _schedule_panel(axes[1], pingpong, labels, "ping-pong")
    end = max(len(cooperative.trace), len(pingpong.trace))
    for ax in axes:
        ax.set_xlim(0, end)
    axes[1].set_xlabel("cycle")
    axes[0].tick_params(axis="x", labelbottom=True)
    if title:
        fig.suptitle(title)
    _legend(fig, [("wgmma", "a wgmma group on the tensor cores"), ("store", "the consumer stores its tile"),
                  ("idle", "the tensor cores idle")], ncol=2)
    _fit(fig, labels)
    return fig


# ---------------------------------------------------------------------------------------------------
# wgmma's accumulators


def accumulator_owners(n: int = 16) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(warp, lane, register)``, each a 64 x ``n`` array: which thread of the warpgroup holds each element of
    ``wgmma.m64n<n>k16``'s accumulator, and in which of its registers (from :func:`gemmlab.models.hopper.wgmma_d_position`)."""
    warp, lane, register = (np.full((64, n), -1) for _ in range(3))
    for thread in range(hopper.WARPGROUP):
        for r in range(n // 2):
            row, col = hopper.wgmma_d_position(thread, r, n)
            warp[row, col], lane[row, col], register[row, col] = thread // 32, thread % 32, r
    return warp, lane, register


def wgmma_accumulators(n: int = 16, title: str = "") -> Figure:
    """The m64nNk16 accumulator across a warpgroup (from :func:`gemmlab.models.hopper.wgmma_d_position`): left, the
    64 x ``n`` tile with each element coloured by the warp that holds it (four bands of 16 rows); right, warp 0's
    first 16 x 8 block, each element labelled with its lane and register (``l5 r2``) and coloured by the register
    (r0 to r3), so that register 4j + e of lane l is seen at row l // 4 + 8 (e // 2), column 8j + 2 (l % 4) + e % 2.

    Alt text: The 64 by 16 accumulator of a warpgroup's wgmma in four horizontal bands of 16 rows, one per warp,
    and a zoom into warp 0's first 16 by 8 block in which each element names its lane and register: lanes 0 to 3
    share row 0, each holding two neighbouring columns in registers 0 and 1, and the same lanes hold row 8 in
    registers 2 and 3.
    """
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import ConnectionPatch, Rectangle

    warp, lane, register = accumulator_owners(n)
    tints = ["#dbe7f5", "#f6dcdc", "#dcefe0", "#e9e0f2"]          # light: black text is 15:1 on each
    fig, (left, right) = new(1, 2, height=6.4, width_ratios=[1, 3.6])
    left.imshow(warp, cmap=ListedColormap(tints), vmin=-0.5, vmax=3.5, aspect="auto", interpolation="nearest")
    for w in range(4):                                # in the outlined columns: the zoom's lines pass to their right
        left.text(min(8, n) / 2 - 0.5, 16 * w + 7.5, f"warp {w}", ha="center", va="center", color=INK)
        if w:
            left.axhline(16 * w - 0.5, color=INK, lw=1)
    left.add_patch(Rectangle((-0.5, -0.5), 8, 16, fill=False, edgecolor=INK, lw=2.5))
    left.set_xticks([0, n - 1])
    left.set_yticks([0, 16, 32, 48, 63])
    left.set_xlabel("column")
    left.set_ylabel("row of D")
    left.set_title("by warp", loc="left")
    zoom = register[:16, :8] % 4
    right.imshow(zoom, cmap=ListedColormap(tints), vmin=-0.5, vmax=3.5, aspect="auto", interpolation="nearest")
    for r in range(16):
        for c in range(8):
            right.text(c, r, f"l{lane[r, c]} r{register[r, c]}", ha="center", va="center", color=INK)
    right.set_xticks(range(8))
    right.set_yticks(range(16))
    right.tick_params(length=0)
    right.set_xlabel("column")
    right.set_title("warp 0, rows 0–15, columns 0–7: lane l, register r", loc="left")
    for y0, y1 in ((-0.5, -0.5), (15.5, 15.5)):
        fig.add_artist(ConnectionPatch((7.5, y0), (-0.5, y1), "data", "data", axesA=left, axesB=right,
                                       color=MUTED, lw=1))
    fig.suptitle(title or f"wgmma m64n{n}k16: who holds each accumulator\n"
                          "register 4j + e of lane l: row l // 4 + 8 (e // 2), column 8j + 2 (l % 4) + e % 2")
    return fig


# ---------------------------------------------------------------------------------------------------
# A cluster's multicast of B

BK = 64
"""The K-tile's depth, in elements (``BK`` of chapter 9's kernels)."""
ELEMENT_BYTES = hopper.DATA_TYPES["BF16"][1]
"""Bytes per element of A and B (BF16)."""
_A_BYTES, _B_BYTES = pipeline.Config().stage_bytes
BM = _A_BYTES // (BK * ELEMENT_BYTES)
"""The rows of A's box (128), from the A bytes of a stage of the ring (:class:`gemmlab.models.pipeline.Config`)."""
BN = _B_BYTES // (BK * ELEMENT_BYTES)
"""The rows of B's tile (256), from the B bytes of a stage of the ring."""
CLUSTER = 2
"""Blocks per cluster (``__cluster_dims__(2, 1, 1)``), each fetching one half of the B tile into both."""


def cluster_multicast(title: str = "") -> Figure:
    """A cluster of two blocks computing tiles that share B's columns (``kernels/09_6_cluster.cu``): each block's
    copy engine (TMA) fetches its own A box (:data:`BM` x :data:`BK`) into its own shared memory, and one half of the
    shared :data:`BN` x :data:`BK` B tile (``BN / 2`` rows) into both blocks' shared memory (multicast), so B leaves
    the L2 once per pair. A schematic: the boxes' lengths are to scale, their heights are not.

    Alt text: Two blocks of a cluster side by side, each with its own A tile of 128 by 64 and a B tile of 256 by 64
    in shared memory; arrows show block 0's TMA copying the first 128 rows of B and block 1's the last 128 rows,
    each half written into both blocks, and a note says that B leaves the L2 once per pair.
    """
    from matplotlib.patches import FancyArrowPatch, Rectangle

    half = BN // CLUSTER
    unit = 16 / half                                  # x units per row: a half of B (and an A box) is 16 wide
    h = 12.0                                          # every box's height (schematic)
    fig, ax = new(height=5.4)
    colors = [PALETTE[0], PALETTE[1]]
    tints = ["#dbe7f5", "#f6dcdc"]
    hatches = ["//", "\\\\"]

    def box(x: float, y: float, rows: int, face: str, hatch: str | None, edge: str, text: str, gid: str) -> Rectangle:
        rect = Rectangle((x, y), rows * unit, h, facecolor=face, hatch=hatch, hatchcolor=edge, edgecolor=edge, lw=1.5,
                         gid=gid)
        ax.add_patch(rect)
        if text:
            ax.text(x + rows * unit / 2, y + h / 2, text, ha="center", va="center", color=INK,
                    bbox={"facecolor": face, "edgecolor": "none", "pad": 1.0})
        return rect

    # Global memory, read through the L2: each block's A box at the sides, the shared B tile in the middle.
    top = 72.0
    ax.text(60, top + h + 9, "global memory, read through the L2", ha="center", va="bottom", color=INK)
    a_x = [4.0, 100.0]
    b_x = 60 - half * unit
    sources: dict[tuple[str, int], Rectangle] = {}
    for r in range(CLUSTER):
        sources[("A", r)] = box(a_x[r], top, BM, "#eeeeee", None, MUTED, f"A{r}\n{BM} × {BK}", f"global|A{r}")
        sources[("B", r)] = box(b_x + r * half * unit, top, half, tints[r], hatches[r], colors[r],
                                f"{r * half}–{(r + 1) * half - 1}", f"global|B half {r}")
    ax.text(60, top + h + 1, f"B: {BN} × {BK}, two halves of {half} rows", ha="center", va="bottom", color=INK)
    # The two blocks' shared memory: A box, then the B tile, both halves.
    low = 22.0
    frames = [1.0, 61.0]
    targets: dict[tuple[str, int] | tuple[str, int, int], Rectangle] = {}
    for r, x in enumerate(frames):
        ax.add_patch(Rectangle((x, 4), 58, 34, fill=False, edgecolor=INK, lw=1.2, gid=f"block {r}"))
        ax.text(x + 29, 6, f"block {r} (cluster rank {r}):\nshared memory", ha="center", va="bottom", color=INK)
        a_at = x + 3 if r == 0 else x + 55 - BM * unit
        b_at = x + 55 - BN * unit if r == 0 else x + 3
        targets[("A", r)] = box(a_at, low, BM, "#eeeeee", None, MUTED, f"A\n{BM} × {BK}", f"block {r}|A")
        for q in range(CLUSTER):
            targets[("B", r, q)] = box(b_at + q * half * unit, low, half, tints[q], hatches[q], colors[q], "",
                                       f"block {r}|B half {q}")
        ax.text(b_at + half * unit, low - 1.5, f"B: {BN} × {BK}", ha="center", va="top", color=INK)

    def arrow(src: Rectangle, dst: Rectangle, color: str, gid: str, rad: float = 0.0) -> None:
        x0 = src.get_x() + src.get_width() / 2
        x1 = dst.get_x() + dst.get_width() / 2
        ax.add_patch(FancyArrowPatch((x0, top), (x1, low + h), arrowstyle="-|>", mutation_scale=16, lw=2,
                                     color=color, connectionstyle=f"arc3,rad={rad}", gid=gid, shrinkA=0, shrinkB=1))

    for r in range(CLUSTER):
        arrow(sources[("A", r)], targets[("A", r)], MUTED, f"arrow|A{r}")
        for dst in range(CLUSTER):
            arrow(sources[("B", r)], targets[("B", dst, r)], colors[r], f"arrow|B half {r} to block {dst}")
    for r in range(CLUSTER):
        x = b_x + (r + 0.5) * half * unit
        ax.text(x + (-1 if r == 0 else 1) * 13, 54, f"block {r}'s TMA:\ninto both blocks",
                ha="right" if r == 0 else "left", va="center", color=colors[r])
    per_block = BN * BK * ELEMENT_BYTES // 1024
    ax.text(60, -1, f"B leaves the L2 once per pair: {per_block} KiB per K-tile for both blocks, "
                    f"not {CLUSTER} × {per_block} KiB", ha="center", va="top", color=INK)
    ax.set_xlim(0, 120)
    ax.set_ylim(-8, top + h + 16)
    ax.axis("off")
    ax.set_title(title or "A cluster of two blocks shares B: each block's TMA fetches half, into both", loc="left")
    return fig


# ---------------------------------------------------------------------------------------------------
# Stream-K


def streamk_split(tiles: int = 10, k_tiles: int = 8, units: int = 4, title: str = "") -> Figure:
    """The last round of a persistent grid, with whole tiles only and with stream-K (from
    :func:`gemmlab.models.streamk.plan`): one row per unit, x the K-tiles of work it computes in order; each tile a
    bar of its own colour with its number, the parts of a tile cut between units hatched and in the tile's colour;
    the units' idle time hatched grey up to the busiest unit's end, which the dashed line marks.

    Alt text: Two panels of four units' work in K-tiles: with whole tiles only, two units compute three tiles and
    two units sit idle for the last tile's length; with stream-K, the last two tiles are cut in halves shared by
    all four units, and every unit finishes at 20 K-tiles instead of 24.
    """
    fig, axes = new(2, 1, height=1.05 * units + 2.6, sharex=True)
    labels: list[_Label] = []
    ends = []
    panels = (("whole tiles only", streamk.plan(tiles, k_tiles, units, share=False)),
              ("stream-K", streamk.plan(tiles, k_tiles, units)))
    for ax, (name, plan) in zip(axes, panels):
        done = [sum(ke - kb for _, kb, ke in mine) for mine in plan]
        end = max(done)
        ends.append(end)
        for u, mine in enumerate(plan):
            x = 0
            for tile, kb, ke in mine:
                cut = (kb, ke) != (0, k_tiles)
                look = Look(PALETTE[tile % len(PALETTE)], "//" if cut else "")
                names = ((f"tile {tile}: K {kb}–{ke - 1}", f"tile {tile}", f"{tile}") if cut
                         else (f"tile {tile}", f"{tile}"))
                _block(ax, x, x + ke - kb, u, 0.72, look, f"unit {u}|tile {tile}|{kb}-{ke}", labels, names)
                x += ke - kb
            if x < end:
                _block(ax, x, end, u, 0.72, "idle", f"unit {u}|idle", labels, ("idle",))
        ax.axvline(end, color=INK, ls="--", lw=1.2)
        idle = sum(end - d for d in done)
        ax.set_title(f"{name}: the busiest unit computes {end} K-tiles; {idle} K-tiles of idle time", loc="left")
        _lanes(ax, [f"unit {u}" for u in range(units)], range(units), 0, end)
        ax.set_ylim(units - 0.5, -0.5)
    for ax in axes:
        ax.set_xlim(0, max(ends) * 1.02)
    axes[0].tick_params(axis="x", labelbottom=True)
    axes[1].set_xlabel("K-tiles of work, in the order each unit computes them")
    fig.suptitle(title or f"{tiles} tiles of {k_tiles} K-tiles on {units} units")
    _legend(fig, [("cut", "part of a tile cut between units"), ("idle", "idle")], ncol=2)
    _fit(fig, labels)
    return fig


# ---------------------------------------------------------------------------------------------------
# Chapter 8's cp.async ring


def cp_async_ring(stages: int = 3, k_tiles: int = 8, title: str = "") -> Figure:
    """Chapter 8's ``cp.async`` ring over time (from :func:`gemmlab.models.cp_async.ring`, which follows
    ``kernels/08_tensor_core.cu``'s ``pipeline`` region): top, what the block's warps do: issue a K-tile's copies
    (labelled with the K-tile), ``cp.async.wait_group stages - 2`` (hatched), ``__syncthreads()``, and the
    ``ldmatrix`` and ``mma`` of a K-tile; below, one lane per stage: each K-tile's copies in flight (hatched), landed,
    and read by the ``mma``, so that copies are seen in flight while the warps compute on the stage before.

    Alt text: A timeline of a three-stage cp.async ring: the warps issue the copies of K-tiles 0 and 1, wait once for
    K-tile 0 to land, and from then on each K-tile's compute overlaps the copies of the next two K-tiles, each
    K-tile landing in stage K-tile mod 3, the stage the K-tile three before it used.
    """
    timing = cp_async.Timing()
    ring = cp_async.ring(stages, k_tiles, timing)
    fig, ax = new(height=0.62 * stages + 2.9)
    labels: list[_Label] = []
    kinds = {"issue": "copy", "wait_group": "wait", "__syncthreads": "sync", "compute": "read"}
    for span in ring.warps:
        names: tuple[str, ...] = {"issue": (f"{span.k_tile}",), "compute": (f"K-tile {span.k_tile}", f"K{span.k_tile}",
                                                                            f"{span.k_tile}"),
                                  "wait_group": (f"wait_group {ring.wait_depth}", f"wg {ring.wait_depth}"),
                                  "__syncthreads": ()}[span.what]
        _block(ax, span.start, span.end, 0, 0.72, kinds[span.what], f"warps|{span.what}", labels, names)
    stage_y = [1.35 + 1.05 * s for s in range(stages)]
    for t in ring.k_tiles:
        y = stage_y[t.stage]
        _block(ax, t.issued, t.landed, y, 0.66, "landing", f"stage {t.stage}|landing", labels,
               (f"copy K-tile {t.k_tile}", f"K-tile {t.k_tile}", f"K{t.k_tile}", f"{t.k_tile}"))
        if t.computed > t.landed:
            _block(ax, t.landed, t.computed, y, 0.66, "full", f"stage {t.stage}|full", labels,
                   (f"K{t.k_tile}", f"{t.k_tile}"))
        _block(ax, t.computed, t.done, y, 0.66, "read", f"stage {t.stage}|read", labels,
               (f"K-tile {t.k_tile}", f"K{t.k_tile}", f"{t.k_tile}"))
    _lanes(ax, ["warps", *(f"stage {s}" for s in range(stages))], [0, *stage_y], 0, ring.cycles)
    ax.axhline(0.72, color=WAIT_HATCH, lw=0.8)
    ax.set_ylim(stage_y[-1] + 0.55, -0.55)
    ax.set_xlabel(f"cycle (a model's clock: issue {timing.issue}, copy {timing.copy}, barrier {timing.sync}, "
                  f"compute {timing.compute})")
    ax.set_title(title or f"The cp.async ring: {stages} stages, {stages - 1} K-tiles in flight, "
                          f"wait_group {ring.wait_depth}", loc="left")
    _legend(fig, [("copy", "issue copies (K-tile)"), ("wait", f"cp.async.wait_group {ring.wait_depth}"),
                  ("sync", "__syncthreads()"), ("landing", "copy in flight"), ("full", "landed"),
                  ("read", "ldmatrix + mma")], ncol=3)
    _fit(fig, labels)
    return fig
