"""Figures for the chapters (matplotlib), drawn from :mod:`gemmlab.models` so the pictures and
the tables use the same numbers."""

from __future__ import annotations

import numpy as np

from . import models


def roofline(peak_flops: float, peak_bandwidth: float, *, measured_flops: float | None = None,
             measured_bandwidth: float | None = None, kernels: dict[str, float] | None = None,
             title: str = "Roofline"):
    """Log-log roofline: attainable TFLOP/s against arithmetic intensity (FLOP/byte).

    Draws the roof derived from the device's attributes, the measured one if given, and a
    marker on the roof for each named intensity in ``kernels``.
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
    ax.set_xlabel("arithmetic intensity (FLOP per byte of DRAM traffic)")
    ax.set_ylabel("attainable FP32 throughput (TFLOP/s)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(loc="lower right", fontsize=9)
    return fig


def bandwidth_sweep(sizes_bytes, bandwidths, l2_bytes: int, peak_bandwidth: float, title: str):
    """Copy bandwidth against buffer size, with the L2 size and the DRAM peak marked."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.2), layout="constrained")
    ax.semilogx(np.asarray(sizes_bytes) / 2**20, np.asarray(bandwidths) / 1e9, "o-", color="tab:blue",
                label="copy_f32, measured")
    ax.axhline(peak_bandwidth / 1e9, color="0.2", ls="--", lw=1, label=f"DRAM peak (derived) {peak_bandwidth / 1e9:,.0f} GB/s")
    ax.axvline(l2_bytes / 2**20, color="tab:orange", ls=":", lw=1.5, label=f"L2 size {l2_bytes / 2**20:g} MiB")
    ax.set_xlabel("bytes per buffer (MiB; the copy reads one buffer and writes another)")
    ax.set_ylabel("bandwidth (GB/s, read + write)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=9)
    return fig
