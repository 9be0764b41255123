"""The whole ladder at a glance: one table and one figure, from the naive FP32 kernel to
chapter 9's last step, read from the bench's JSON files (``python -m gemmlab bench
--precision all``), one per GPU.

Pure functions: :func:`load` reads a file into a :class:`Run`; :func:`rows` follows a path
of :class:`Step` (the course's, :func:`gemmlab.gemm.whole_ladder.steps`) through the runs
at one size; :func:`table` and :func:`notes` give the table's text, :func:`figure` and
:func:`alt_text` the figure. Each number is the JSON's own, or computed from it in the
same run: TFLOP/s, the share of cuBLAS in the same input format, the share of the ceiling
that run measured. Where a file lacks a number the table shows :data:`DASH` and
:func:`notes` says why; nothing is filled in. The book builds both at build time (the
``ladder-at-a-glance`` directive, ``book/_ext/coursebook.py``), so a file measured again
changes the book without executing a chapter.

"""

from __future__ import annotations

import io
import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from . import figures
from .figures import size_label

if TYPE_CHECKING:
    from matplotlib.figure import Figure

DASH = "—"
"""What a cell shows for a number its file does not hold."""

SIZE = (4096, 4096, 4096)
"""The size the table is read at by default, chapter 9's goal size, which every file of
the default bench holds."""


@dataclass(frozen=True)
class Step:
    """One row of the ladder: the kernel's name in the bench JSON, its chapter, its input
    format and what it changes (the registry's one line)."""

    name: str
    chapter: int
    precision: str
    change: str

    @property
    def label(self) -> str:
        """The name without its format's suffix (``tc_mma``, not ``tc_mma_bf16``): the
        table says the format."""
        for suffix in ("_bf16", "_f16", "_tf32"):
            if self.name.endswith(suffix):
                return self.name[: -len(suffix)]
        return self.name


@dataclass(frozen=True)
class Run:
    """One bench JSON: the GPU it ran on, the day (None where the file does not record
    it), how it timed, its measured ceilings in TFLOP/s by input format, and its rows."""

    device: str                          # "NVIDIA H200"
    gpu: str                 # the environment's: "NVIDIA H200 (sm_90, 132 SMs)"
    date: str | None
    timing: str                          # "separate" or "interleaved"
    ceilings: Mapping[str, float]
    results: Sequence[Mapping[str, Any]] = field(repr=False)

    @property
    def short(self) -> str:
        """The GPU's model for a column head (``H200`` from ``NVIDIA H200``, ``H100`` from
        ``NVIDIA H100 80GB HBM3``, ``T4`` from ``Tesla T4``)."""
        brands = ("NVIDIA", "Tesla", "GeForce")
        words = [w for w in self.device.split() if w not in brands]
        return words[0] if words else self.device

    def row(self, kernel: str, size: tuple[int, int, int],
            precision: str) -> Mapping[str, Any] | None:
        """The file's row for ``kernel`` at ``size`` in ``precision``, or None."""
        for r in self.results:
            here = (r["kernel"], (r["M"], r["N"], r["K"]), r.get("precision", "FP32"))
            if here == (kernel, size, precision):
                return r
        return None

    def sizes(self) -> list[tuple[int, int, int]]:
        """Every size the file holds, in its order."""
        return list(dict.fromkeys((r["M"], r["N"], r["K"]) for r in self.results))


def from_json(data: Mapping[str, Any]) -> Run:
    """A :class:`Run` from a bench JSON's dict. Its ceilings: ``fp32_ceiling_tflops`` (the
    FMA probe) for FP32 and ``mma_ceilings_tflops`` (the ``mma.sync`` probes) for the
    tensor-core formats, as far as the file has them."""
    ceilings = dict(data.get("mma_ceilings_tflops") or {})
    if data.get("fp32_ceiling_tflops"):
        ceilings["FP32"] = data["fp32_ceiling_tflops"]
    env = data.get("environment") or {}
    return Run(data["device"], env.get("gpu", data["device"]), data.get("date"),
               data.get("timing", "separate"), ceilings, data["results"])


def load(path: str | Path) -> Run:
    """:func:`from_json` of the file at ``path``."""
    return from_json(json.loads(Path(path).read_text(encoding="utf-8")))


@dataclass(frozen=True)
class Measured:
    """One step on one GPU: its rate, and its shares of cuBLAS (same format, same run) and
    of the run's measured ceiling for that format (None where the file has no such
    ceiling)."""

    tflops: float
    of_cublas: float | None
    of_ceiling: float | None


@dataclass(frozen=True)
class Row:
    """One step and what each run measured for it (None where the run does not hold the
    step)."""

    step: Step
    measured: tuple[Measured | None, ...]


def measure(run: Run, step: Step, size: tuple[int, int, int]) -> Measured | None:
    """What ``run`` measured for ``step`` at ``size``: None where it holds no correct
    result of it. The share of cuBLAS is the file's own (for interleaved timing, the
    median of the per-round ratios); the share of the ceiling is the rate over the run's
    ceiling for the step's format."""
    r = run.row(step.name, size, step.precision)
    if r is None or not r.get("correct", True):
        return None
    ceiling = run.ceilings.get(step.precision)
    of_ceiling = r["tflops"] / ceiling if ceiling else None
    return Measured(r["tflops"], r.get("fraction_of_cublas"), of_ceiling)


def common_sizes(runs: Sequence[Run]) -> list[tuple[int, int, int]]:
    """The sizes every run holds, in the first run's order."""
    if not runs:
        return []
    return [s for s in runs[0].sizes() if all(s in r.sizes() for r in runs[1:])]


def rows(steps: Iterable[Step], runs: Sequence[Run],
         size: tuple[int, int, int] = SIZE) -> list[Row]:
    """One :class:`Row` per step, in the path's order; ``size`` must be in every run
    (:func:`common_sizes`)."""
    missing = [r.device for r in runs if size not in r.sizes()]
    if missing:
        every = ", ".join(map(size_label, common_sizes(runs)))
        raise ValueError(f"no results at {size_label(size)} in the runs on "
                         f"{', '.join(missing)}; every run holds {every}")
    return [Row(s, tuple(measure(r, s, size) for r in runs)) for s in steps]


def cublas(run: Run, precision: str, size: tuple[int, int, int]) -> float | None:
    """cuBLAS's TFLOP/s in ``run`` for ``precision`` at ``size``, or None."""
    r = run.row("cuBLAS", size, precision)
    return r["tflops"] if r else None


def rate(tflops: float | None) -> str:
    """TFLOP/s with three figures or so: ``5.9``, ``47.4``, ``754``; :data:`DASH` for
    None."""
    if tflops is None:
        return DASH
    return f"{tflops:.0f}" if tflops >= 100 else f"{tflops:.1f}"


def percent(fraction: float | None) -> str:
    """A share in whole percent (``99``), :data:`DASH` for None."""
    return DASH if fraction is None else f"{100 * fraction:.0f}"


HEADS = ("TFLOP/s", "% of cuBLAS", "% of ceiling")
"""The three measures, each with one column per run under it."""


def cells(row: Row) -> list[str]:
    """A row's numbers as the table prints them: each measure of :data:`HEADS`, one cell
    per run."""
    m = row.measured
    return ([rate(x.tflops if x else None) for x in m]
            + [percent(x.of_cublas if x else None) for x in m]
            + [percent(x.of_ceiling if x else None) for x in m])


def groups(table_rows: Sequence[Row]) -> list[tuple[str, list[Row]]]:
    """Consecutive rows of one input format, each group with its heading: ``FP32, chapters
    1–7``."""
    named = []
    for precision, run in itertools.groupby(table_rows, key=lambda r: r.step.precision):
        members = list(run)
        first, last = members[0].step.chapter, members[-1].step.chapter
        chapters = f"chapter {first}" if first == last else f"chapters {first}–{last}"
        named.append((f"{precision}, {chapters}", members))
    return named


def table(table_rows: Sequence[Row],
          runs: Sequence[Run]) -> tuple[list[str], list[str], list[list[str]]]:
    """The table as text: ``(heads, gpus, body)`` where ``heads`` are :data:`HEADS`, each
    over one column per GPU (``gpus``, the runs' :attr:`Run.short` names), and each body
    row is the step's chapter, label, change and :func:`cells`."""
    body = [[str(r.step.chapter), r.step.label, r.step.change, *cells(r)]
            for r in table_rows]
    return list(HEADS), [r.short for r in runs], body


TIMING = {"separate": "each kernel timed on its own",
          "interleaved": "each size's kernels and cuBLAS timed in alternating blocks"}
"""How a run timed (its JSON's ``timing``), in words."""


def notes(table_rows: Sequence[Row], runs: Sequence[Run],
          size: tuple[int, int, int]) -> list[str]:
    """What the table rests on and what its dashes mean, one sentence each: the GPUs, the
    days and how the numbers were taken; what the two shares are; which runs lack a
    ceiling or a step."""
    said = [f"{r.short}: {r.gpu}, {r.date or 'day not recorded in its file'}, "
            f"{TIMING.get(r.timing, r.timing)}" for r in runs]
    command = "`python -m gemmlab bench --precision all`"
    out = [f"Measured at {size_label(size)} with {command} on each GPU. "
           + "; ".join(said) + "."]
    out.append("% of cuBLAS: of cuBLAS in the same input format, timed in the same run.")
    out.append("% of ceiling: of the rate the same run measured with the course's "
               "probes: chains of FMAs for FP32 (chapter 0), of `mma.sync` for the "
               "tensor cores (chapter 8). Chapter 9's `wgmma` is not bound by "
               "`mma.sync`'s rate, so its steps, like cuBLAS, pass 100%.")
    formats = list(dict.fromkeys(r.step.precision for r in table_rows))
    for p in formats:
        lacking = [r.short for r in runs if p not in r.ceilings]
        if lacking:
            files = f"file{'s' * (len(lacking) > 1)} hold{'s' * (len(lacking) == 1)}"
            out.append(f"{DASH} under % of ceiling in {p}: the {' and '.join(lacking)} "
                       f"{files} no measured {p} ceiling; a file the bench writes "
                       "holds one.")
    for i, run in enumerate(runs):
        absent = [r.step.label for r in table_rows if r.measured[i] is None]
        if absent:
            which = "that step" if len(absent) == 1 else "those steps"
            steps = ", ".join(f"`{a}`" for a in absent)
            out.append(f"{DASH} for {steps} on the {run.short}: "
                       f"its file holds no correct result of {which} at this size.")
    return out


# ---------------------------------------------------------------- the figure

FIGURE_WIDTH = 4.0
"""The figure's width in inches, 384 CSS pixels (an SVG counts 96 to the inch), so that on
a 390 px phone it shrinks by 11% at most and its 12 pt (16 px) labels stay above 14 px."""


def figure(table_rows: Sequence[Row], runs: Sequence[Run],
           size: tuple[int, int, int] = SIZE) -> Figure:
    """Horizontal bars on a log scale, one pair per step (a bar per GPU, in
    :data:`~gemmlab.book.figures.PALETTE`'s order), top to bottom in the path's order;
    each input format's steps under a heading of their own and against their cuBLAS (a
    dashed line per GPU, in its bars' colour); "no data" where a run lacks the step."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    plt.rcParams.update(figures.style())
    k = len(runs)
    parts = groups(table_rows)
    tall = 0.36 * (len(table_rows) + len(parts)) + 1.5
    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH, tall), layout="constrained")
    colors = [figures.PALETTE[j % len(figures.PALETTE)] for j in range(k)]
    height = 0.8 / max(k, 1)
    left = 1.0                                              # TFLOP/s where the bars start
    top_rate = max((m.tflops for r in table_rows for m in r.measured if m), default=10.0)
    ticks, labels, y = [], [], 0.0
    for name, members in parts:
        heading = y
        ticks.append(y)
        labels.append(name)
        y += 1
        first = y
        for r in members:
            ticks.append(y)
            labels.append(r.step.label)
            for j, (run, m) in enumerate(zip(runs, r.measured)):
                at = y + (j - (k - 1) / 2) * height
                if m is None:
                    ax.annotate(f"no data ({run.short})", (left, at), xytext=(3, 0),
                                textcoords="offset points", va="center",
                                color=figures.MUTED)
                else:
                    ax.barh(at, m.tflops - left, height=height, left=left,
                            color=colors[j])
            y += 1
        refs = [cublas(run, members[0].step.precision, size) for run in runs]
        for j, c in enumerate(refs):
            if c:
                ax.plot([c, c], [first - 0.5, y - 0.5], ls="--", lw=1.2, color=colors[j])
        rates = [c for c in refs if c]
        if rates:           # beside its line, on the side with more room
            right = math.log10(min(rates) / left) < 0.75 * math.log10(top_rate / left)
            ax.annotate("cuBLAS", (min(rates), heading), xytext=(4 if right else -4, 0),
                        textcoords="offset points", ha="left" if right else "right",
                        va="center", color="#1a1a1a")
        y += 0.3
    ax.set_xscale("log")
    ax.set_xlim(left, 10 ** math.ceil(math.log10(top_rate * 1.05)))
    decades = [10.0 ** e for e in range(0, math.ceil(math.log10(top_rate * 1.05)) + 1)]
    ax.set_xticks(decades, [f"{d:g}" for d in decades])
    ax.set_yticks(ticks, labels)
    ax.tick_params(axis="y", length=0)
    headings = {name for name, _ in parts}
    for text in ax.get_yticklabels():
        if text.get_text() in headings:
            text.set_fontweight("bold")
    ax.set_ylim(y - 0.3 - 0.5, -0.6)
    ax.set_xlabel(f"TFLOP/s at {size_label(size)} (log scale)")
    ax.grid(True, axis="x", which="major", alpha=0.3)
    handles = [Patch(color=c, label=run.short) for c, run in zip(colors, runs)]
    fig.legend(handles=handles, loc="outside upper center", ncol=max(k, 1), frameon=False)
    return fig


def alt_text(table_rows: Sequence[Row], runs: Sequence[Run],
             size: tuple[int, int, int] = SIZE) -> str:
    """What the figure shows, in words: the steps, the GPUs, and each run's first and last
    step and cuBLAS."""
    parts = []
    for j, run in enumerate(runs):
        have = [(r.step, m) for r in table_rows if (m := r.measured[j])]
        if not have:
            continue
        ends = " to ".join(f"{rate(m.tflops)} ({s.label}, {s.precision})"
                           for s, m in (have[0], have[-1]))
        formats = dict.fromkeys(r.step.precision for r in table_rows)
        refs = ", ".join(f"{p} {rate(c)}" for p in formats if (c := cublas(run, p, size)))
        parts.append(f"on the {run.short} from {ends}, cuBLAS {refs}")
    return (f"Horizontal bars on a log scale: TFLOP/s at {size_label(size)} of each of "
            f"the ladder's {len(table_rows)} steps, from chapter 1's naive kernel to "
            "chapter 9's last step, one bar per GPU; " + "; ".join(parts) + ".")


def svg(fig: Figure) -> str:
    """The figure as SVG text, the same bytes for the same figure (no date, fixed ids),
    and the figure closed."""
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    with plt.rc_context({"svg.hashsalt": "ladder-at-a-glance"}):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    plt.close(fig)
    return buffer.getvalue()
