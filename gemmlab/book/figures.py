"""Figures for the chapters (matplotlib), drawn from :mod:`gemmlab.models.traffic` so the pictures and
the tables use the same numbers.

Every figure is drawn for the book's content column: :data:`WIDTH` inches at :data:`DPI` make an image
as wide as the column is on a desktop, shown there at its own size, so text of :data:`FONT_PT` points is
at least the body text's 16 px. Colours come from :data:`PALETTE`, each dark enough for text on white
(contrast 4.5:1 or more), and where a figure has many series they differ in marker shape as well as in
colour. :func:`new` starts a figure in this style; the chapters use it for the figures they draw
themselves.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

from ..models import banks, traffic

if TYPE_CHECKING:       # matplotlib is imported by the functions that draw, not when the module is
    from matplotlib.figure import Figure
    from matplotlib.typing import ColorType, RcKeyType

    from ..models.occupancy import Occupancy

CONTENT_WIDTH_PX = 750
"""The width of the book's content column on a desktop, in pixels (a cell's output is 757 px wide at 1366 px)."""

DPI = 100
"""Pixels per inch of every figure."""

WIDTH = CONTENT_WIDTH_PX / DPI
"""The width of every figure in inches, the content column's."""

BODY_PX = 16
"""The size of the book's body text, in CSS pixels."""

FONT_PT = 12.0
"""The size of the smallest text in a figure, in points (12 pt at 100 dpi is 16.7 px, the body's size when the
figure is shown at the column's width)."""

PALETTE = ("#1f5fa8", "#b2182b", "#1b7837", "#6a3d9a", "#a04a00", "#00727a", "#9c2a7a", "#4d4d4d")
"""The series colours (blue, red, green, purple, brown, teal, magenta, grey), each with a contrast of 4.5 or
more against white."""

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
"""The marker shapes, in the order of :data:`PALETTE`, so that series differ in shape, not in colour alone."""

MUTED = "#595959"
"""The colour of secondary text (reference lines, notes), with a contrast of 7 against white."""


def style() -> dict[RcKeyType, Any]:
    """The course's matplotlib settings (rcParams)."""
    from cycler import cycler

    return {"figure.dpi": DPI, "savefig.dpi": DPI, "font.size": FONT_PT, "axes.titlesize": FONT_PT + 1,
            "axes.labelsize": FONT_PT, "xtick.labelsize": FONT_PT, "ytick.labelsize": FONT_PT,
            "legend.fontsize": FONT_PT, "legend.title_fontsize": FONT_PT, "figure.titlesize": FONT_PT + 1,
            "axes.prop_cycle": cycler(color=PALETTE), "axes.titlelocation": "left",
            "text.color": "#1a1a1a", "axes.labelcolor": "#1a1a1a", "xtick.color": "#1a1a1a", "ytick.color": "#1a1a1a"}


def new(nrows: int = 1, ncols: int = 1, height: float = 4.2, **kwargs: Any) -> tuple[Figure, Any]:
    """A figure in the course style, as wide as the content column: ``(fig, axes)`` as from
    ``plt.subplots``. The style stays set, so labels added afterwards get it too."""
    import matplotlib.pyplot as plt

    plt.rcParams.update(style())
    # The axes as plt.subplots gives them: one Axes, or an array of them (several, or squeeze=False).
    return plt.subplots(nrows, ncols, figsize=(WIDTH, height), layout="constrained", **kwargs)


def contrast_ratio(foreground: ColorType, background: ColorType = "white") -> float:
    """The WCAG contrast ratio of two colours (1 to 21; text needs 4.5 or more)."""
    from matplotlib.colors import to_rgb

    def luminance(color: ColorType) -> float:
        channels = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in to_rgb(color)]
        return 0.2126 * channels[0] + 0.7152 * channels[1] + 0.0722 * channels[2]

    hi, lo = sorted((luminance(foreground), luminance(background)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def roofline(peak_flops: float, peak_bandwidth: float, *, measured_flops: float | None = None,
             measured_bandwidth: float | None = None, kernels: dict[str, float] | None = None,
             achieved: dict[str, tuple[float, float]] | None = None, title: str = "Roofline") -> Figure:
    """Log-log roofline: attainable TFLOP/s against arithmetic intensity (FLOP/byte).

    Draws the roof derived from the device's attributes, the measured one if given, a marker on
    the roof for each named intensity in ``kernels``, and a star for each ``achieved`` point
    ``name: (intensity FLOP/B, measured FLOP/s)``. Labels sit where no roof crosses them: below and to
    the right of a point under the roof, centred above one over it (a kernel the caches serve can beat
    the DRAM roof).
    """
    fig, ax = new(height=5.0)
    x = np.logspace(-2, 3, 400)
    ax.loglog(x, traffic.roofline(x, peak_flops, peak_bandwidth) / 1e12, color="#1a1a1a", lw=2,
              label=f"derived: {peak_flops / 1e12:.1f} TFLOP/s, {peak_bandwidth / 1e9:,.0f} GB/s")
    roof_f, roof_b = peak_flops, peak_bandwidth
    if measured_flops and measured_bandwidth:
        roof_f, roof_b = measured_flops, measured_bandwidth
        ax.loglog(x, traffic.roofline(x, roof_f, roof_b) / 1e12, color=PALETTE[0], lw=2, ls="--",
                  label=f"measured: {roof_f / 1e12:.1f} TFLOP/s, {roof_b / 1e9:,.0f} GB/s")
    ridge = traffic.ridge_point(roof_f, roof_b)
    ax.axvline(ridge, color="0.6", lw=1, ls=":")
    ax.annotate(f"ridge {ridge:.1f} FLOP/B", (ridge, roof_f / 1e12), textcoords="offset points",
                xytext=(6, -20), color=MUTED)
    for (name, intensity), color in zip((kernels or {}).items(), PALETTE[1:]):
        y = float(traffic.roofline(intensity, roof_f, roof_b)) / 1e12
        ax.plot([intensity], [y], "o", ms=8, color=color, zorder=3)
        ax.annotate(f"{name}\n{intensity:g} FLOP/B: ≤ {y:.2f} TFLOP/s", (intensity, y), textcoords="offset points",
                    xytext=(10, -40), color=color)
    for (name, (intensity, flops)), color in zip((achieved or {}).items(), PALETTE[1:]):
        y = flops / 1e12
        ax.plot([intensity], [y], "*", ms=15, color=color, markeredgecolor="black", zorder=4)
        above = y > float(traffic.roofline(intensity, roof_f, roof_b)) / 1e12
        ax.annotate(f"{name}:\n{y:.2f} TFLOP/s", (intensity, y), textcoords="offset points",
                    xytext=(0, 14) if above else (12, -38), ha="center" if above else "left", color=color)
    ax.set_ylim(top=roof_f / 1e12 * 3)
    ax.set_xlabel("arithmetic intensity (FLOP per byte of DRAM traffic)")
    ax.set_ylabel("attainable FP32 TFLOP/s")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(loc="lower right")
    return fig


def bandwidth_sweep(sizes_bytes: ArrayLike, bandwidths: ArrayLike, l2_bytes: int,
                    peak_bandwidth: float, title: str) -> Figure:
    """Copy bandwidth against buffer size (per buffer, of the two a copy uses), with the DRAM peak and
    the size at which the pair fills the L2 (half the L2 per buffer) marked."""
    fig, ax = new(height=4.6)
    ax.semilogx(np.asarray(sizes_bytes) / 2**20, np.asarray(bandwidths) / 1e9, "o-", color=PALETTE[0],
                label="copy_f32, measured")
    ax.axhline(peak_bandwidth / 1e9, color="#1a1a1a", ls="--", lw=1, label=f"DRAM peak (derived) {peak_bandwidth / 1e9:,.0f} GB/s")
    ax.axvline(l2_bytes / 2 / 2**20, color=PALETTE[4], ls=":", lw=2,
               label=f"two buffers fill the {l2_bytes / 2**20:g} MiB L2")
    ax.set_xlabel("MiB per buffer (the copy reads one buffer, writes another)")
    ax.set_ylabel("GB/s (read + write)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend()
    return fig


def thread_map(M: int, N: int, T: int = 32, highlight: tuple[int, int] | None = None, title: str = "") -> Figure:
    """C (M×N) divided among T×T thread blocks: each block's elements in its own colour, the idle
    threads of the edge blocks hatched, and one element's block, thread, row of A and column of B."""
    from matplotlib.patches import Rectangle

    gx, gy = traffic.grid_for(M, N, T)
    fig, ax = new(height=WIDTH * gy / max(gx, gy) + 1.0)
    pale = ("#dbe7f5", "#f6dcdc", "#dcefe0", "#e9e0f2", "#f6e6d6", "#d8eef0")    # light, so black text stays 15:1
    for by in range(gy):
        for bx in range(gx):
            ax.add_patch(Rectangle((bx * T, by * T), T, T, facecolor=pale[(by * gx + bx) % len(pale)],
                                   edgecolor="black", lw=1.2))
            if gx <= 8 and gy <= 8:
                ax.text(bx * T + T / 2, by * T + T / 2, f"block\n({bx}, {by})", ha="center", va="center")
    ax.add_patch(Rectangle((N, 0), gx * T - N, gy * T, facecolor="none", hatch="//", edgecolor="0.55", lw=0))
    ax.add_patch(Rectangle((0, M), N, gy * T - M, facecolor="none", hatch="//", edgecolor="0.55", lw=0))
    ax.add_patch(Rectangle((0, 0), N, M, facecolor="none", edgecolor="black", lw=2.5))
    if highlight:
        r, c = highlight
        (bx, by), (tx, ty) = traffic.thread_of(r, c, T)
        red = PALETTE[1]
        ax.add_patch(Rectangle((c, r), 1, 1, facecolor=red, edgecolor=red, zorder=3))
        ax.axhline(r + 0.5, color=red, lw=0.8, ls="--")
        ax.axvline(c + 0.5, color=red, lw=0.8, ls="--")
        ax.annotate(f"C[{r}, {c}]: block ({bx}, {by}), thread ({tx}, {ty})", (c + 1, r), xytext=(gx * T / 2, r - 9),
                    color=red, ha="center", arrowprops={"arrowstyle": "->", "color": red},
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.5})
    ax.set_xlim(0, gx * T)
    ax.set_ylim(gy * T, 0)
    ax.set_aspect("equal")
    ax.set_xlabel(f"column of C (N = {N}): blockIdx.x·{T} + threadIdx.x")
    ax.set_ylabel(f"row of C (M = {M}):\nblockIdx.y·{T} + threadIdx.y")
    ax.set_title(title or f"{gx}×{gy} blocks of {T}×{T} threads cover C ({M}×{N});\nhatched: threads with no element")
    return fig


def spread(targets: list[float], gap: float) -> list[float]:
    """Positions for labels that belong at ``targets``: as close to them as possible (least squares), in the
    same order, and at least ``gap`` apart. Labels that would overlap form a run, centred on its targets."""
    runs: list[tuple[list[int], float]] = []            # (indices from the lowest target up, first position)
    for i in sorted(range(len(targets)), key=lambda i: targets[i]):
        runs.append(([i], targets[i]))
        while len(runs) > 1 and runs[-2][1] + len(runs[-2][0]) * gap > runs[-1][1]:
            merged = runs[-2][0] + runs[-1][0]
            runs[-2:] = [(merged, sum(targets[j] - k * gap for k, j in enumerate(merged)) / len(merged))]
    out = [0.0] * len(targets)
    for members, first in runs:
        for k, j in enumerate(members):
            out[j] = first + k * gap
    return out


def speed_sweep(sizes: Sequence[int], series: dict[str, list[float]], title: str, ylabel: str = "TFLOP/s",
                hline: tuple[str, float] | None = None) -> Figure:
    """One line per kernel: a measured rate (already in display units) against the matrix size; each
    line has its own marker shape and its name at its right end, moved up or down where names would overlap."""
    fig, ax = new(height=4.6)
    for (name, ys), color, marker in zip(series.items(), PALETTE, MARKERS):
        ax.plot(sizes, ys, "-", marker=marker, color=color, label=name)
    if hline:
        ax.axhline(hline[1], color=MUTED, ls="--", lw=1, label=hline[0])
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [str(s) for s in sizes])
    ax.set_xlim(right=sizes[-1] * 2.2)                  # room for the names at the right end
    ax.set_xlabel("M = N = K")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best")
    # The names at the line ends, in points above the axes' bottom once the layout is final, at least a line apart.
    fig.canvas.draw()
    points = ax.transData.transform([(sizes[-1], ys[-1]) for ys in series.values()])[:, 1] * 72 / fig.dpi
    placed = spread(list(points), 1.25 * FONT_PT)
    for (name, ys), color, at, y in zip(series.items(), PALETTE, placed, points):
        ax.annotate(name, (sizes[-1], ys[-1]), textcoords="offset points", xytext=(8, at - y), va="center", color=color)
    return fig


def speed_bars(speeds: dict[str, float], reference: tuple[str, float] | None, title: str = "",
               xlabel: str = "TFLOP/s (FP32)") -> Figure:
    """One horizontal bar per kernel (TFLOP/s, in the order given), each labelled with its share of
    ``reference`` = (name, TFLOP/s), which is drawn as a dashed line; with no reference (no cuBLAS
    on this machine), the bars alone."""
    names = list(speeds)
    top = max([*speeds.values(), reference[1] if reference else 0.0])
    fig, ax = new(height=0.5 * len(names) + 1.6)
    bars = ax.barh(range(len(names)), [speeds[n] for n in names], color=PALETTE[0])
    if reference:
        ax.axvline(reference[1], color="#1a1a1a", ls="--", lw=1, label=f"{reference[0]} {reference[1]:.1f} TFLOP/s")
        # Above the plot, under the title: inside, it would hide the labels of the longest bars.
        ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), borderaxespad=0.2, frameon=False)
    for b, n in zip(bars, names):
        share = f" ({speeds[n] / reference[1]:.1%})" if reference else ""      # 99.8% is not 100%
        ax.annotate(f"{speeds[n]:.1f}{share}", (b.get_width(), b.get_y() + b.get_height() / 2),
                    va="center", xytext=(4, 0), textcoords="offset points")
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlim(0, top * 1.3)
    ax.set_xlabel(xlabel)
    ax.set_title(title, pad=22 if reference else 6)
    return fig


def size_label(size: Sequence[int]) -> str:
    """``4096³`` for a cube, ``3000×5000×1234`` otherwise."""
    return "×".join(map(str, size)) if len(set(size)) > 1 else f"{size[0]}³"


def ladder(data: Mapping[str, Any], title: str = "", precision: str = "FP32") -> Figure:
    """The ladder (``bench.to_json``'s dict) in one input format: one row per kernel, one marker per size, at
    the kernel's share of cuBLAS (same format) measured in the same run (its TFLOP/s where there is no
    cuBLAS). Sizes differ in marker shape and colour; the legend gives cuBLAS's own rate at each size."""
    rows = [r for r in data["results"] if r.get("precision", "FP32") == precision]
    sizes = list(dict.fromkeys((r["M"], r["N"], r["K"]) for r in rows))
    kernels = [k for k in dict.fromkeys(r["kernel"] for r in rows) if k != "cuBLAS"]
    value = {(r["kernel"], (r["M"], r["N"], r["K"])): r for r in rows}
    share = all(value[(k, s)].get("fraction_of_cublas") for k in kernels for s in sizes if (k, s) in value)
    fig, ax = new(height=0.42 * len(kernels) + 2.6)
    for j, (s, color, marker) in enumerate(zip(sizes, PALETTE, MARKERS)):
        ks = [k for k in kernels if (k, s) in value]
        xs = [100 * value[(k, s)]["fraction_of_cublas"] if share else value[(k, s)]["tflops"] for k in ks]
        ys = [kernels.index(k) + (j - (len(sizes) - 1) / 2) * 0.13 for k in ks]
        ref = value.get(("cuBLAS", s))
        ax.plot(xs, ys, marker, color=color, ms=7, ls="none", markeredgecolor="white", markeredgewidth=0.5,
                label=size_label(s) + (f" (cuBLAS {ref['tflops']:.1f} TFLOP/s)" if ref else ""))
    if share:
        ax.axvline(100, color="#1a1a1a", ls="--", lw=1)
        ax.annotate("cuBLAS", (100, -0.6), ha="center", va="bottom", color="#1a1a1a")
    ax.set_yticks(range(len(kernels)), kernels)
    ax.set_ylim(len(kernels) - 0.5, -1.0)
    ax.set_xlim(0, None)
    ax.set_xlabel("share of cuBLAS in the same run (%)" if share else f"TFLOP/s ({precision} inputs)")
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title(title or f"Every course kernel against cuBLAS ({precision}), {data.get('device', 'GPU')}")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12 - 0.6 / (len(kernels) + 4)), ncol=2, frameon=False)
    return fig


def bank_maps(accesses: Mapping[str, tuple[Sequence[int], int]], title: str = "") -> Figure:
    """One panel per access, two across: which bank each lane's words fall in. ``accesses`` maps a label
    to ``(byte_addresses, access_bytes)`` for the 32 lanes of one warp; a cell (lane, bank) is coloured
    by which of that bank's distinct words the lane reads (the colour bar: the first, second, ... word;
    a bank whose lanes all read its first word costs no extra pass), and each panel's title gives the
    wavefronts from :func:`gemmlab.models.banks.bank_access`."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import BoundaryNorm, ListedColormap

    cols = min(2, len(accesses))
    rows = math.ceil(len(accesses) / cols)
    fig, axes = new(rows, cols, height=3.7 * rows + (0.5 if title else 0) + 0.3, squeeze=False)
    cmap = ListedColormap(plt.get_cmap("viridis")(np.linspace(0, 0.92, 32))).with_extremes(bad="white")
    norm = BoundaryNorm(np.arange(0.5, 33.5), 32)
    image = None
    for ax, (label, (addrs, width)) in zip(axes.flat, accesses.items()):
        grid = np.full((32, banks.BANKS), np.nan)
        order: dict[int, dict[int, int]] = {}            # bank -> word -> its rank among the bank's words
        for lane, a in enumerate(addrs):
            for i in range(width // banks.BANK_BYTES):
                word = a // banks.BANK_BYTES + i
                ranks = order.setdefault(word % banks.BANKS, {})
                ranks.setdefault(word, len(ranks) + 1)
                grid[lane, word % banks.BANKS] = ranks[word]
        image = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, norm=norm, aspect="equal", interpolation="nearest")
        acc = banks.bank_access(addrs, width)
        ax.set_title(f"{label}\n{acc.wavefronts} wavefront{'s' * (acc.wavefronts != 1)} (ideal {acc.ideal})")
        ax.set_xlabel("bank")
        ax.set_ylabel("lane")
        ax.set_xticks([0, 8, 16, 24, 31])
        ax.set_yticks([0, 8, 16, 24, 31])
    for ax in list(axes.flat)[len(accesses):]:
        ax.set_visible(False)
    assert image is not None            # the loop drew one per access, and there is one (cols = 0 fails above)
    bar = fig.colorbar(image, ax=axes, ticks=[1, 8, 16, 24, 32], shrink=0.85, aspect=30)
    bar.set_label("which distinct word of its bank\n(1 = the first; more = extra passes)")
    if title:
        fig.suptitle(title)
    return fig


def occupancy_limits(kernels: Mapping[str, Occupancy], title: str = "") -> Figure:
    """For each kernel (``name: occupancy.Occupancy``), the blocks per SM each resource allows, the
    binding ones drawn solid with a black edge, and the resulting occupancy under the kernel's name."""
    names = list(kernels)
    limits = ["threads", "registers", "shared memory", "blocks"]
    fig, ax = new(height=0.62 * len(names) * len(limits) / 2 + 1.8)
    h = 0.8 / len(limits)
    colors = dict(zip(limits, (PALETTE[0], PALETTE[4], PALETTE[2], "0.45")))
    for i, name in enumerate(names):
        occ = kernels[name]
        for j, lim in enumerate(limits):
            if lim not in occ.limits:
                continue
            n = occ.limits[lim]
            y = i + (j - (len(limits) - 1) / 2) * h
            bound = lim in occ.binding
            ax.barh(y, min(n, 33), height=h * 0.9, color=colors[lim], alpha=1.0 if bound else 0.3,
                    edgecolor="black" if bound else "none", label=lim if i == 0 else None)
            ax.text(min(n, 33) + 0.4, y, f"{n}" + (" (binds)" if bound else ""), va="center")
    ax.set_yticks(range(len(names)), [f"{n}\n{kernels[n].occupancy:.0%}" for n in names])
    ax.set_xlim(0, 42)
    ax.invert_yaxis()
    ax.set_xlabel("blocks per SM each resource allows (bars cut at 33)")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=4, frameon=False, handlelength=1.2, columnspacing=1.0)
    if title:
        fig.suptitle(title)
    return fig


def speed_against_occupancy(points: dict[str, list[tuple[float, float]]], title: str, ylabel: str) -> Figure:
    """One line per kernel: TFLOP/s against theoretical occupancy (``name: [(occupancy 0..1, TFLOP/s)]``)."""
    fig, ax = new(height=4.4)
    for (name, pts), color, marker in zip(points.items(), PALETTE, MARKERS):
        pts = sorted(pts)
        ax.plot([100 * o for o, _ in pts], [t for _, t in pts], "-", marker=marker, color=color, label=name)
    ax.set_xlabel("theoretical occupancy (%)")
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend()
    ax.set_title(title)
    return fig


def warp_sectors(panels: Mapping[str, Mapping[str, Sequence[int]]], title: str = "") -> Figure:
    """How one warp's loads fall into 32-byte sectors. ``panels`` maps a label (one mapping of threads)
    to ``{load name: 32 byte addresses}``; for each load, the 32 lanes (top row) are joined to the
    distinct sectors they touch (bottom row, in address order, each labelled with its offset from the
    first), and the load is titled with its sector count: what a coalesced and an uncoalesced warp look
    like to the memory system."""
    import matplotlib.pyplot as plt

    loads = [(label, name, addrs) for label, per in panels.items() for name, addrs in per.items()]
    fig, axes = new(len(loads), 1, height=1.9 * len(loads) + 0.6, squeeze=False)
    for ax, (label, name, addrs) in zip(axes[:, 0], loads):
        sectors = sorted({a // traffic.SECTOR_BYTES for a in addrs})
        slot = {s: (i + 0.5) * 32 / len(sectors) - 0.5 for i, s in enumerate(sectors)}   # spread over the lanes' width
        for lane, a in enumerate(addrs):
            ax.plot([lane, slot[a // traffic.SECTOR_BYTES]], [1, 0], color="0.55", lw=0.8, zorder=1)
        ax.scatter(range(32), [1] * 32, s=22, color=PALETTE[0], zorder=2)
        width = min(0.9 * 32 / len(sectors), 3.2)
        for s, x in slot.items():
            ax.add_patch(plt.Rectangle((x - width / 2, -0.22), width, 0.22, facecolor="#fdd9b5", edgecolor="0.25", zorder=2))
        if len(sectors) <= 4:
            for s, x in slot.items():
                ax.annotate(f"+{(s - sectors[0]) * traffic.SECTOR_BYTES:,} B", (x, -0.22), textcoords="offset points",
                            xytext=(0, -14), ha="center", color="#1a1a1a")
        else:
            step = (sectors[1] - sectors[0]) * traffic.SECTOR_BYTES
            ax.annotate(f"{len(sectors)} sectors, {step:,} B apart", (15.5, -0.22), textcoords="offset points",
                        xytext=(0, -14), ha="center", color="#1a1a1a")
        ax.set_title(f"{label}: {name}\n{len(sectors)} sector{'s' * (len(sectors) != 1)} for 32 lanes", loc="left")
        ax.set_xlim(-1, 32)
        ax.set_ylim(-0.8, 1.25)
        ax.set_yticks([0, 1], ["sectors", "lanes"])
        ax.set_xticks([0, 8, 16, 24, 31])
        for side in ("top", "right", "left"):
            ax.spines[side].set_visible(False)
    axes[-1, 0].set_xlabel("lane")
    if title:
        fig.suptitle(title)
    return fig


def fragments(shape: str = "m16n8k16", dtype: str = "f16", title: str = "") -> Figure:
    """Which lane of a warp holds which element of a warp-level ``mma.sync``'s A, B and C (from
    :func:`gemmlab.models.mma.owners`): each element shows its lane, and its colour says in which of the lane's
    32-bit registers it sits (two 16-bit elements share one). A on top, B and C side by side below."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    from ..models import mma

    ins = mma.instruction(shape, dtype)
    dims = {op: ins.dims(op) for op in ("A", "B", "C")}
    plt.rcParams.update(style())
    fig = plt.figure(figsize=(WIDTH, 0.3 * (dims["A"][0] + dims["B"][0]) + 2.2), layout="constrained")
    top, bottom = fig.subfigures(2, 1, squeeze=False, height_ratios=[dims["A"][0] + 3, dims["B"][0] + 3])[:, 0]
    axes = {"A": top.subplots(1, 1), **dict(zip(("B", "C"), bottom.subplots(1, 2)))}
    light = ListedColormap(["#dbe7f5", "#f6dcdc", "#dcefe0", "#e9e0f2"])     # registers 0-3; black text 15:1 on each
    for op, ax in axes.items():
        rows, cols = dims[op]
        grid = mma.owners(shape, dtype, op)
        register = np.array([[ins.register_of(op, i)[0] for _, i in row] for row in grid])
        ax.imshow(register, cmap=light, vmin=-0.5, vmax=3.5, aspect="auto", interpolation="nearest")
        for r in range(rows):
            for c in range(cols):
                ax.text(c, r, str(grid[r][c][0]), ha="center", va="center", color="#1a1a1a")
        label = {"A": f"A ({rows} x {cols}, M x K)", "B": f"B ({rows} x {cols}, K x N)", "C": f"C and D ({rows} x {cols})"}[op]
        n = ins.registers(op)
        ax.set_title(f"{label}: {n} register{'s' * (n != 1)} per lane", loc="left")
        ax.set_xticks(range(0, cols, 4))
        ax.set_yticks(range(0, rows, 4))
        ax.tick_params(length=0)
    fig.suptitle(title or f"mma.sync {shape} .{dtype}: the lane that holds each element\n(colour: which of the lane's registers)")
    return fig


def swizzle(swizzle: str = "128B", rows: int = 8, title: str = "") -> Figure:
    """Where the copy engine puts each 16-byte chunk of a tile's rows under ``swizzle`` (from
    :func:`gemmlab.models.hopper.swizzled_offset`): one row of the figure per row of the tile, one column per 16-byte
    slot of shared memory; each slot shows, and is coloured by, the chunk of the row that lands there."""
    from matplotlib.colors import ListedColormap, to_rgb

    from ..models import hopper

    chunks = hopper.SWIZZLES[swizzle] // 16 if hopper.SWIZZLES[swizzle] else 8
    row_bytes = 16 * chunks
    grid = np.zeros((rows, chunks), dtype=int)
    for r in range(rows):
        for c in range(chunks):
            slot = hopper.swizzled_offset(row_bytes * r + 16 * c, swizzle) % row_bytes // 16
            grid[r, slot] = c
    tints = ListedColormap([tuple(0.3 * x + 0.7 for x in to_rgb(PALETTE[i % len(PALETTE)])) for i in range(chunks)])
    fig, ax = new(height=0.45 * rows + 1.6)
    ax.imshow(grid, cmap=tints, vmin=-0.5, vmax=chunks - 0.5, aspect="auto", interpolation="nearest")
    for r in range(rows):
        for s in range(chunks):
            ax.text(s, r, str(grid[r, s]), ha="center", va="center", color="#1a1a1a")
    ax.set_xticks(range(chunks), [f"{16 * s}" for s in range(chunks)])
    ax.set_yticks(range(rows))
    ax.set_xlabel("byte of the row in shared memory (16-byte slots)")
    ax.set_ylabel("row of the tile")
    ax.tick_params(length=0)
    ax.set_title(title or f"The {swizzle} swizzle: which 16-byte chunk of each row sits in each slot")
    return fig
