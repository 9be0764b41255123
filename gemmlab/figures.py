"""Figures for the chapters (matplotlib), drawn from :mod:`gemmlab.models` so the pictures and
the tables use the same numbers."""

from __future__ import annotations

import numpy as np

from . import banks, models


def roofline(peak_flops: float, peak_bandwidth: float, *, measured_flops: float | None = None,
             measured_bandwidth: float | None = None, kernels: dict[str, float] | None = None,
             achieved: dict[str, tuple[float, float]] | None = None, title: str = "Roofline"):
    """Log-log roofline: attainable TFLOP/s against arithmetic intensity (FLOP/byte).

    Draws the roof derived from the device's attributes, the measured one if given, a marker on
    the roof for each named intensity in ``kernels``, and a star for each ``achieved`` point
    ``name: (intensity FLOP/B, measured FLOP/s)``.
    """
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.6), layout="constrained")
    x = np.logspace(-2, 3, 400)
    ax.loglog(x, models.roofline(x, peak_flops, peak_bandwidth) / 1e12, color="0.2", lw=2,
              label=f"derived: {peak_flops / 1e12:.1f} TFLOP/s, {peak_bandwidth / 1e9:,.0f} GB/s")
    roof_f, roof_b = peak_flops, peak_bandwidth
    if measured_flops and measured_bandwidth:
        roof_f, roof_b = measured_flops, measured_bandwidth
        ax.loglog(x, models.roofline(x, roof_f, roof_b) / 1e12, color="tab:blue", lw=2, ls="--",
                  label=f"measured: {roof_f / 1e12:.1f} TFLOP/s, {roof_b / 1e9:,.0f} GB/s")
    ridge = models.ridge_point(roof_f, roof_b)
    ax.axvline(ridge, color="0.6", lw=1, ls=":")
    ax.annotate(f"ridge {ridge:.1f} FLOP/B", (ridge, roof_f / 1e12), textcoords="offset points",
                xytext=(6, -16), fontsize=9, color="0.35")
    for (name, intensity), color in zip((kernels or {}).items(), ("tab:red", "tab:green", "tab:purple", "tab:orange")):
        y = float(models.roofline(intensity, roof_f, roof_b)) / 1e12
        ax.plot([intensity], [y], "o", ms=8, color=color, zorder=3)
        ax.annotate(f"{name}\n{intensity:g} FLOP/B: ≤ {y:.2f} TFLOP/s", (intensity, y), textcoords="offset points",
                    xytext=(8, -30), fontsize=9, color=color)
    colors = ("tab:red", "tab:green", "tab:purple", "tab:orange", "tab:brown")
    for i, ((name, (intensity, flops)), color) in enumerate(zip((achieved or {}).items(), colors)):
        ax.plot([intensity], [flops / 1e12], "*", ms=14, color=color, markeredgecolor="black", zorder=4)
        # alternate above and below so neighbouring labels at one height do not overlap
        ax.annotate(f"{name}:\n{flops / 1e12:.2f} TFLOP/s", (intensity, flops / 1e12), textcoords="offset points",
                    xytext=(10, 10) if i % 2 == 0 else (10, -30), fontsize=9, color=color)
    ax.set_xlabel("arithmetic intensity (FLOP per byte; the roofs assume every byte crosses DRAM)")
    ax.set_ylabel("attainable FP32 throughput (TFLOP/s)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(loc="lower right", fontsize=9)
    return fig


def bandwidth_sweep(sizes_bytes, bandwidths, l2_bytes: int, peak_bandwidth: float, title: str):
    """Copy bandwidth against buffer size (per buffer, of the two a copy uses), with the DRAM peak and
    the size at which the pair fills the L2 (half the L2 per buffer) marked."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.2), layout="constrained")
    ax.semilogx(np.asarray(sizes_bytes) / 2**20, np.asarray(bandwidths) / 1e9, "o-", color="tab:blue",
                label="copy_f32, measured")
    ax.axhline(peak_bandwidth / 1e9, color="0.2", ls="--", lw=1, label=f"DRAM peak (derived) {peak_bandwidth / 1e9:,.0f} GB/s")
    ax.axvline(l2_bytes / 2 / 2**20, color="tab:orange", ls=":", lw=1.5,
               label=f"two buffers fill the {l2_bytes / 2**20:g} MiB L2 ({l2_bytes / 2 / 2**20:g} MiB each)")
    ax.set_xlabel("bytes per buffer (MiB; the copy reads one buffer and writes another)")
    ax.set_ylabel("bandwidth (GB/s, read + write)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=9)
    return fig


def thread_map(M: int, N: int, T: int = 32, highlight: tuple[int, int] | None = None, title: str = ""):
    """C (M×N) divided among T×T thread blocks: each block's elements in its own colour, the idle
    threads of the edge blocks hatched, and one element's block, thread, row of A and column of B."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    gx, gy = models.grid_for(M, N, T)
    fig, ax = plt.subplots(figsize=(7.5, 7.5 * gy / max(gx, gy) + 0.8), layout="constrained")
    cmap = plt.get_cmap("tab20")
    for by in range(gy):
        for bx in range(gx):
            ax.add_patch(Rectangle((bx * T, by * T), T, T, facecolor=cmap((by * gx + bx) % 20), alpha=0.45,
                                   edgecolor="black", lw=1.2))
            ax.text(bx * T + T / 2, by * T + T / 2, f"block\n({bx}, {by})", ha="center", va="center", fontsize=8)
    ax.add_patch(Rectangle((N, 0), gx * T - N, gy * T, facecolor="none", hatch="//", edgecolor="0.5", lw=0))
    ax.add_patch(Rectangle((0, M), N, gy * T - M, facecolor="none", hatch="//", edgecolor="0.5", lw=0))
    ax.add_patch(Rectangle((0, 0), N, M, facecolor="none", edgecolor="black", lw=2.5))
    if highlight:
        r, c = highlight
        (bx, by), (tx, ty) = models.thread_of(r, c, T)
        ax.add_patch(Rectangle((c, r), 1, 1, facecolor="red", edgecolor="red", zorder=3))
        ax.axhline(r + 0.5, color="red", lw=0.8, ls="--")
        ax.axvline(c + 0.5, color="red", lw=0.8, ls="--")
        ax.annotate(f"C[{r}, {c}]: block ({bx}, {by}), thread ({tx}, {ty})", (c + 1, r), xytext=(c + 4, r - 6),
                    fontsize=9, color="red", arrowprops={"arrowstyle": "->", "color": "red"})
    ax.set_xlim(0, gx * T)
    ax.set_ylim(gy * T, 0)
    ax.set_aspect("equal")
    ax.set_xlabel(f"column of C (N = {N}); x: blockIdx.x·{T} + threadIdx.x")
    ax.set_ylabel(f"row of C (M = {M}); y: blockIdx.y·{T} + threadIdx.y")
    ax.set_title(title or f"{gx}×{gy} blocks of {T}×{T} threads cover C ({M}×{N}); hatched: threads with no element")
    return fig


def speed_sweep(sizes, series: dict[str, list[float]], title: str, ylabel: str = "TFLOP/s",
                hline: tuple[str, float] | None = None):
    """One line per kernel: a measured rate (already in display units) against the matrix size."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.4), layout="constrained")
    for name, ys in series.items():
        ax.plot(sizes, ys, "o-", label=name)
    if hline:
        ax.axhline(hline[1], color="0.3", ls="--", lw=1, label=hline[0])
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [str(s) for s in sizes])
    ax.set_xlabel("M = N = K")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=9)
    return fig


def speed_bars(speeds: dict[str, float], reference: tuple[str, float] | None, title: str = ""):
    """One horizontal bar per kernel (TFLOP/s, in the order given), each labelled with its share of
    ``reference`` = (name, TFLOP/s), which is drawn as a dashed line; with no reference (no cuBLAS
    on this machine), the bars alone."""
    import matplotlib.pyplot as plt

    names = list(speeds)
    top = max([*speeds.values(), reference[1] if reference else 0.0])
    fig, ax = plt.subplots(figsize=(7.5, 0.45 * len(names) + 1.2), layout="constrained")
    bars = ax.barh(range(len(names)), [speeds[n] for n in names], color="tab:blue")
    if reference:
        ax.axvline(reference[1], color="0.3", ls="--", lw=1, label=f"{reference[0]} {reference[1]:.1f} TFLOP/s")
        ax.legend(loc="lower right", fontsize=8)
    for b, n in zip(bars, names):
        share = f" ({speeds[n] / reference[1]:.0%})" if reference else ""
        ax.annotate(f"{speeds[n]:.1f}{share}", (b.get_width(), b.get_y() + b.get_height() / 2),
                    va="center", fontsize=8, xytext=(3, 0), textcoords="offset points")
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlim(0, top * 1.2)
    ax.set_xlabel("TFLOP/s (FP32)")
    ax.set_title(title)
    return fig


def ladder(data: dict, title: str = ""):
    """The ladder (``bench.to_json``'s dict): TFLOP/s of every kernel at every size, one group of bars
    per size, cuBLAS last in each group and each bar labelled with its share of cuBLAS."""
    import matplotlib.pyplot as plt
    import numpy as np

    rows = data["results"]
    sizes = list(dict.fromkeys((r["M"], r["N"], r["K"]) for r in rows))
    kernels = list(dict.fromkeys(r["kernel"] for r in rows))
    value = {(r["kernel"], (r["M"], r["N"], r["K"])): r for r in rows}
    fig, ax = plt.subplots(figsize=(10, 4.8), layout="constrained")
    width = 0.8 / len(kernels)
    x = np.arange(len(sizes))
    for i, name in enumerate(kernels):
        ys = [value[(name, s)]["tflops"] if (name, s) in value else 0.0 for s in sizes]
        bars = ax.bar(x + (i - (len(kernels) - 1) / 2) * width, ys, width, label=name,
                      color="0.25" if name == "cuBLAS" else None)
        for b, s in zip(bars, sizes):
            frac = value.get((name, s), {}).get("fraction_of_cublas")
            if frac and name != "cuBLAS" and frac >= 0.5:
                ax.annotate(f"{frac:.0%}", (b.get_x() + b.get_width() / 2, b.get_height()), ha="center",
                            va="bottom", fontsize=7, rotation=90, xytext=(0, 2), textcoords="offset points")
    ax.set_xticks(x, ["×".join(map(str, s)) if len(set(s)) > 1 else f"{s[0]}³" for s in sizes])
    ax.set_ylabel("TFLOP/s (FP32)")
    ax.set_title(title or f"Every course kernel and cuBLAS on the {data.get('device', 'GPU')} (labels: share of cuBLAS)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8, ncol=2, loc="upper left")
    return fig


def bank_maps(accesses: dict, title: str = ""):
    """One panel per access: which bank each lane's words fall in. ``accesses`` maps a label to
    ``(byte_addresses, access_bytes)`` for the 32 lanes of one warp; a cell (lane, bank) is coloured by
    which of that bank's distinct words the lane reads (one colour per bank: conflict-free), and each
    panel's title gives the wavefronts from :func:`gemmlab.banks.bank_access`."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    fig, axes = plt.subplots(1, len(accesses), figsize=(3.3 * len(accesses), 3.9), layout="constrained", squeeze=False)
    cmap = ListedColormap(["white"] + list(plt.get_cmap("viridis")(np.linspace(0, 1, 32))))
    for ax, (label, (addrs, width)) in zip(axes[0], accesses.items()):
        grid = np.zeros((32, banks.BANKS))
        order: dict[int, dict[int, int]] = {}            # bank -> word -> its rank among the bank's words
        for lane, a in enumerate(addrs):
            for i in range(width // banks.BANK_BYTES):
                word = a // banks.BANK_BYTES + i
                ranks = order.setdefault(word % banks.BANKS, {})
                ranks.setdefault(word, len(ranks) + 1)
                grid[lane, word % banks.BANKS] = ranks[word]
        ax.imshow(grid, cmap=cmap, vmin=0, vmax=32, aspect="equal", interpolation="nearest")
        acc = banks.bank_access(addrs, width)
        ax.set_title(f"{label}\n{acc.wavefronts} wavefront{'s' * (acc.wavefronts != 1)} (ideal {acc.ideal})", fontsize=9)
        ax.set_xlabel("bank")
        ax.set_ylabel("lane")
        ax.set_xticks([0, 8, 16, 24, 31])
        ax.set_yticks([0, 8, 16, 24, 31])
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def occupancy_limits(kernels: dict, title: str = ""):
    """For each kernel (``name: occupancy.Occupancy``), the blocks per SM each resource allows, the
    binding ones highlighted, and the resulting occupancy."""
    import matplotlib.pyplot as plt

    names = list(kernels)
    limits = ["threads", "registers", "shared memory", "blocks"]
    fig, ax = plt.subplots(figsize=(8, 0.55 * len(names) * len(limits) / 2 + 1.2), layout="constrained")
    h = 0.8 / len(limits)
    colors = dict(zip(limits, ("tab:blue", "tab:orange", "tab:green", "0.6")))
    for i, name in enumerate(names):
        occ = kernels[name]
        for j, lim in enumerate(limits):
            if lim not in occ.limits:
                continue
            n = occ.limits[lim]
            y = i + (j - (len(limits) - 1) / 2) * h
            bound = lim in occ.binding
            ax.barh(y, min(n, 33), height=h * 0.9, color=colors[lim], alpha=1.0 if bound else 0.35,
                    edgecolor="black" if bound else "none", label=lim if i == 0 else None)
            ax.text(min(n, 33) + 0.3, y, f"{n}" + (" (binds)" if bound else ""), va="center", fontsize=7)
        ax.text(-0.5, i, f"{occ.blocks_per_sm} x {occ.warps_per_sm // occ.blocks_per_sm if occ.blocks_per_sm else 0} warps = "
                f"{occ.occupancy:.0%}", va="center", ha="right", fontsize=8, color="0.25")
    ax.set_yticks(range(len(names)), [f"{n}\n\n" for n in names], fontsize=9)
    ax.set_xlim(0, 40)
    ax.invert_yaxis()
    ax.set_xlabel("blocks per SM each resource allows (bars cut at 33)")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=4, fontsize=8, frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def warp_sectors(panels: dict, title: str = ""):
    """How one warp's loads fall into 32-byte sectors. ``panels`` maps a label (one mapping of threads)
    to ``{load name: 32 byte addresses}``; for each load, the 32 lanes (top row) are joined to the
    distinct sectors they touch (bottom row, in address order, each labelled with its offset from the
    first), and the load is titled with its sector count: what a coalesced and an uncoalesced warp look
    like to the memory system."""
    import matplotlib.pyplot as plt

    loads = [(label, name, addrs) for label, per in panels.items() for name, addrs in per.items()]
    fig, axes = plt.subplots(len(loads), 1, figsize=(7.5, 1.55 * len(loads) + 0.4), layout="constrained", squeeze=False)
    for ax, (label, name, addrs) in zip(axes[:, 0], loads):
        sectors = sorted({a // models.SECTOR_BYTES for a in addrs})
        slot = {s: (i + 0.5) * 32 / len(sectors) - 0.5 for i, s in enumerate(sectors)}   # spread over the lanes' width
        for lane, a in enumerate(addrs):
            ax.plot([lane, slot[a // models.SECTOR_BYTES]], [1, 0], color="0.55", lw=0.8, zorder=1)
        ax.scatter(range(32), [1] * 32, s=22, color="tab:blue", zorder=2)
        width = min(0.9 * 32 / len(sectors), 3.2)
        for s, x in slot.items():
            ax.add_patch(plt.Rectangle((x - width / 2, -0.22), width, 0.22, facecolor="#fdd9b5", edgecolor="0.25", zorder=2))
        if len(sectors) <= 8:
            for s, x in slot.items():
                ax.annotate(f"+{(s - sectors[0]) * models.SECTOR_BYTES:,} B", (x, -0.22), textcoords="offset points",
                            xytext=(0, -11), ha="center", fontsize=9, color="0.2")
        else:
            step = (sectors[1] - sectors[0]) * models.SECTOR_BYTES
            ax.annotate(f"{len(sectors)} sectors, {step:,} B apart", (15.5, -0.22), textcoords="offset points",
                        xytext=(0, -11), ha="center", fontsize=9, color="0.2")
        ax.set_title(f"{label}: {name}, {len(sectors)} sector{'s' * (len(sectors) != 1)} for 32 lanes", fontsize=10, loc="left")
        ax.set_xlim(-1, 32)
        ax.set_ylim(-0.65, 1.25)
        ax.set_yticks([0, 1], ["sectors", "lanes"], fontsize=9)
        ax.set_xticks([0, 8, 16, 24, 31])
        ax.tick_params(axis="x", labelsize=9)
        for side in ("top", "right", "left"):
            ax.spines[side].set_visible(False)
    axes[-1, 0].set_xlabel("lane", fontsize=9)
    if title:
        fig.suptitle(title, fontsize=11)
    return fig
