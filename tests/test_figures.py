"""The course's figure style, checked on the figures themselves and on every stored notebook output:
figures as wide as the book's content column, text at least the body's size there, text colours a
reader can read (contrast 4.5:1), many series told apart by more than colour, and one image per
figure with no stray matplotlib reprs. No GPU: figures are drawn from sample numbers."""

import base64
import json
import re
import struct
from pathlib import Path

import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
from matplotlib.text import Text  # noqa: E402

from gemmlab.book import figures  # noqa: E402
from gemmlab.models import banks, occupancy  # noqa: E402
from gemmlab.runtime import device  # noqa: E402
from notebook_tools import CHAPTERS, ROOT, read  # noqa: E402

NOTEBOOKS = [*CHAPTERS, ROOT / "book" / "workbench.ipynb", ROOT / "book" / "occupancy.ipynb"]


def sample_figures():
    """One of each figure the chapters draw, from numbers like the H200's."""
    T, lanes = 32, range(32)
    occ = {n: occupancy.calculate(device.H200, t, r, s) for n, t, r, s in
           (("naive", 1024, 30, 0), ("tiled16", 256, 32, 2048), ("regtile2d", 256, 200, 8192))}
    ladder = json.loads((ROOT / "results" / "bench.json").read_text())
    return {
        "roofline": lambda: figures.roofline(66.9e12, 4.8e12, measured_flops=65.3e12, measured_bandwidth=4.3e12,
                                             kernels={"naive (ch. 1)": 0.25, "32x32 tiled (ch. 2)": 8.0},
                                             achieved={"naive, per requested byte": (0.25, 5.9e12),
                                                       "naive, per DRAM byte": (32.0, 5.9e12)}, title="Roofline"),
        "bandwidth_sweep": lambda: figures.bandwidth_sweep([1 << 20, 1 << 24, 1 << 28], [1e12, 5e12, 4e12], 60 << 20,
                                                           4.8e12, "Copy bandwidth"),
        "thread_map": lambda: figures.thread_map(80, 100, highlight=(45, 70)),
        "speed_sweep": lambda: figures.speed_sweep([512, 1024, 2048], {"naive": [3, 6, 6.5], "tiled32": [5, 8.7, 8.9]},
                                                   "Sizes", hline=("cuBLAS", 51.4)),
        "speed_bars": lambda: figures.speed_bars({"tiled16": 8.1, "regtile2d_t_k16": 39.2}, ("cuBLAS", 51.4), "Steps"),
        "ladder": lambda: figures.ladder(ladder),
        "bank_maps": lambda: figures.bank_maps({
            "Bs[k][tx] (plain)": (banks.array_addresses([0] * 32, lanes, T), 4),
            "Bs[tx][k..k+3] (transposed)": (banks.array_addresses(lanes, [0] * 32, T), 16),
            "Bs[tx][k] (padded [32][33])": (banks.array_addresses(lanes, [0] * 32, T + 1), 4)}, "Bank maps"),
        "occupancy_limits": lambda: figures.occupancy_limits(occ, "Blocks per SM"),
        "speed_against_occupancy": lambda: figures.speed_against_occupancy(
            {"tiled16": [(1, 8.1), (0.5, 7.9), (0.25, 6.0)], "tiled32": [(1, 8.4), (0.5, 8.3)]}, "Occupancy", "TFLOP/s"),
        "fragments": lambda: figures.fragments("m16n8k16", "f16"),
        "swizzle": lambda: figures.swizzle("128B"),
        "swizzle_64": lambda: figures.swizzle("64B", rows=4),
        "fragments_tf32": lambda: figures.fragments("m16n8k8", "tf32"),
        "warp_sectors": lambda: figures.warp_sectors({"row": {"A": [0] * 32, "B": [4 * i for i in lanes]},
                                                      "column": {"A": [4096 * i for i in lanes]}}, "Sectors"),
    }


SAMPLES = sample_figures()


@pytest.fixture(params=list(SAMPLES), ids=list(SAMPLES))
def drawn(request):
    import matplotlib.pyplot as plt

    fig = SAMPLES[request.param]()
    fig.canvas.draw()
    yield request.param, fig
    plt.close(fig)


def texts(fig):
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


def shown_scale(fig) -> float:
    """How much the book shrinks the image: it is saved with a tight bounding box, shown at most as wide
    as the content column."""
    width_px = fig.get_tightbbox(fig.canvas.get_renderer()).width * fig.dpi
    return min(1.0, figures.CONTENT_WIDTH_PX / width_px)


def test_every_figure_is_as_wide_as_the_content_column(drawn):
    name, fig = drawn
    assert fig.get_size_inches()[0] == pytest.approx(figures.WIDTH) and fig.dpi == figures.DPI, name


def test_text_is_at_least_the_body_size_where_the_book_shows_it(drawn):
    name, fig = drawn
    scale = shown_scale(fig)
    small = [(t.get_text()[:30], round(t.get_fontsize() * fig.dpi / 72 * scale, 1)) for t in texts(fig)
             if t.get_fontsize() * fig.dpi / 72 * scale < figures.BODY_PX]
    assert not small, f"{name}: text smaller than the body's {figures.BODY_PX} px in the book: {small}"


def low_contrast(fig) -> list[tuple[str, object]]:
    """The texts below 4.5:1 contrast on their own box (or on white), as (text, colour)."""
    low = []
    for t in texts(fig):
        patch = t.get_bbox_patch()
        background = patch.get_facecolor() if patch is not None else "white"
        if figures.contrast_ratio(t.get_color(), background) < 4.5:
            low.append((t.get_text()[:30], t.get_color()))
    return low


def test_text_colours_have_contrast_on_their_background(drawn):
    name, fig = drawn
    low = low_contrast(fig)
    assert not low, f"{name}: text below 4.5:1 contrast: {low}"


def test_many_series_differ_in_shape_not_only_colour():
    import matplotlib.pyplot as plt

    fig = SAMPLES["ladder"]()
    sizes = {(r["M"], r["N"], r["K"]) for r in json.loads((ROOT / "results" / "bench.json").read_text())["results"]
             if r.get("precision", "FP32") == "FP32"}
    lines = [ln for ln in fig.axes[0].get_lines() if ln.get_marker() not in ("None", None, "")]
    assert len({ln.get_marker() for ln in lines}) == len(lines) == len(sizes)
    plt.close(fig)


def test_the_fragment_figure_is_the_model():
    """Each cell of the fragment figure names the lane that gemmlab.models.mma says holds that element."""
    import matplotlib.pyplot as plt

    from gemmlab.models import mma

    fig = SAMPLES["fragments"]()
    for ax, op in zip(fig.axes, ("A", "B", "C")):
        cells = [int(t.get_text()) for t in ax.texts]
        assert cells == [lane for row in mma.owners("m16n8k16", "f16", op) for lane, _ in row]
    plt.close(fig)


def test_palette_and_contrast_check():
    assert all(figures.contrast_ratio(c) >= 4.5 for c in (*figures.PALETTE, figures.MUTED))
    assert figures.contrast_ratio("black") == pytest.approx(21.0)
    assert figures.contrast_ratio("tab:olive") < 4.5                     # what chapter 7's ladder used to draw in
    assert len(figures.MARKERS) >= len(figures.PALETTE)


# ---------------------------------------------------------------- stored outputs of every notebook

BARE_REPR = re.compile(r"^(\[?<matplotlib\.|Text\(|\[?<Axes|<Figure size|Line2D\(|\[<matplotlib|Legend\(|<BarContainer|"
                       r"\(-?\d+(\.\d+)?, -?\d+(\.\d+)?\)$)")


def figure_problems(cell) -> list[str]:
    """What is wrong with a code cell's figure outputs: a figure shown twice (returned by the cell's last
    expression and shown by the inline backend), two identical images, or a bare matplotlib repr."""
    problems, images = [], []
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        plain = data.get("text/plain", "")
        plain = plain if isinstance(plain, str) else "".join(plain)
        if "image/png" in data:
            images.append((out["output_type"], data["image/png"]))
        elif BARE_REPR.match(plain.strip()):
            problems.append(f"a bare matplotlib repr: {plain.strip()[:60]!r}")
    pngs = [png for _, png in images]
    if len(set(pngs)) < len(pngs):
        problems.append("the same image twice")
    if any(kind == "execute_result" for kind, _ in images) and len(images) > 1:
        problems.append("a figure returned by the last expression and shown by the backend: assign it (fig = ...)")
    return problems


def png_width(b64: str) -> int:
    return struct.unpack(">I", base64.b64decode(b64[:44])[16:20])[0]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_no_duplicate_images_or_stray_reprs(path):
    bad = {i: figure_problems(c) for i, c in enumerate(read(path).cells) if c.cell_type == "code" and figure_problems(c)}
    assert not bad, f"{path.name}: {bad}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_stored_figures_were_drawn_for_the_content_column(path):
    """Every stored image was drawn at the course's width: a figure from plain ``plt.subplots`` (6.4 in)
    or a wide multi-panel one would be shown smaller than its text allows."""
    widths = [png_width(o["data"]["image/png"]) for c in read(path).cells if c.cell_type == "code"
              for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    off = [w for w in widths if not figures.CONTENT_WIDTH_PX - 30 <= w <= figures.CONTENT_WIDTH_PX * 1.06]
    assert not off, f"{path.name}: images {off} px wide, not drawn for the {figures.CONTENT_WIDTH_PX} px column"


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.name for p in CHAPTERS])
def test_chapters_draw_in_the_course_style(path):
    calls = [c.source for c in read(path).cells if c.cell_type == "code" and re.search(r"plt\.(subplots|figure)\(", c.source)]
    assert not calls, f"{path.name}: start figures with figures.new(...), not plt.subplots: {calls[0][:80]!r}"


def test_the_output_checks_can_fail():
    from nbformat.v4 import new_code_cell, new_output

    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 8 + struct.pack(">II", 761, 400)).decode()
    twice = new_code_cell("figures.ladder(data)", outputs=[
        new_output("execute_result", data={"image/png": png, "text/plain": "<Figure size 750x480 with 1 Axes>"}, execution_count=1),
        new_output("display_data", data={"image/png": png, "text/plain": "<Figure size 750x480 with 1 Axes>"})])
    stray = new_code_cell("ax.set_title('x')", outputs=[
        new_output("execute_result", data={"text/plain": "Text(0.5, 1.0, 'x')"}, execution_count=1)])
    once = new_code_cell("fig = figures.ladder(data)", outputs=[new_output("display_data", data={"image/png": png})])
    assert len(figure_problems(twice)) == 2 and figure_problems(stray) and not figure_problems(once)
    assert png_width(png) == 761


def test_the_swizzle_figure_is_the_model():
    """Each slot of the swizzle figure names the chunk that gemmlab.models.hopper puts there: row r of 128-byte rows
    holds chunk s XOR r in slot s."""
    import matplotlib.pyplot as plt

    fig = SAMPLES["swizzle"]()
    cells = [int(t.get_text()) for t in fig.axes[0].texts]
    assert cells == [s ^ r for r in range(8) for s in range(8)]
    plt.close(fig)


def test_spread_keeps_order_and_gap_as_close_as_it_can():
    assert figures.spread([0.0, 5.0], 1.0) == [0.0, 5.0]                       # far apart: where they belong
    assert figures.spread([0.0, 0.0, 0.0], 1.0) == [-1.0, 0.0, 1.0]            # a run centred on its targets
    placed = figures.spread([3.0, 1.0, 1.2, 8.0], 1.0)
    assert placed[3] == 8.0 and placed[1] < placed[2] < placed[0]
    assert min(b - a for a, b in zip(sorted(placed), sorted(placed)[1:])) >= 1.0 - 1e-9


def test_line_end_names_do_not_overlap():
    """Chapter 2's sweep, where four kernels end within 3.3 TFLOP/s of each other on a 50 TFLOP/s axis."""
    import matplotlib.pyplot as plt

    series = {"naive": [1.8, 5.9, 6.5, 6.6, 5.9], "tiled8": [2.3, 4.5, 4.9, 5.1, 5.1],
              "tiled16": [2.0, 6.9, 7.8, 8.2, 8.1], "tiled32": [1.7, 7.8, 8.7, 9.0, 8.4],
              "cuBLAS": [1.6, 8.6, 38.1, 50.5, 51.4]}
    fig = figures.speed_sweep([256, 512, 1024, 2048, 4096], series, "Sizes")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    names = [t for t in fig.axes[0].texts if t.get_text() in series]
    boxes = [t.get_window_extent(renderer) for t in names]
    assert len(boxes) == len(series)
    overlapping = [(a.get_text(), b.get_text()) for i, (a, ba) in enumerate(zip(names, boxes))
                   for b, bb in zip(names[i + 1:], boxes[i + 1:]) if ba.overlaps(bb)]
    plt.close(fig)
    assert not overlapping
