"""The pictures of chapters 8 and 9's pipelines (gemmlab.book.pipeline_figures): in the course's style (the content
column's width, text at least the body's size, readable colours, no text over other text, nothing cut off at the
figure's edge), and drawn from the models: the blocks of each lane are the trace's steps, the stream-K bars are
plan()'s portions, the accumulator's colours are wgmma_d_position's warps. Doctored models show that the checks
can fail. No GPU."""

import copy
import re
from collections import Counter

import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
from matplotlib.patches import FancyArrowPatch  # noqa: E402

from gemmlab.book import figures  # noqa: E402
from gemmlab.book import pipeline_figures as pf  # noqa: E402
from gemmlab.models import cp_async, hopper, pipeline, streamk  # noqa: E402
from test_figures import low_contrast, shown_scale, texts  # noqa: E402

COOPERATIVE = pipeline.play(pipeline.Config(schedule="cooperative", tiles=2, k_tiles=6), pipeline.Timed())
PINGPONG = pipeline.play(pipeline.Config(schedule="pingpong", tiles=4, k_tiles=6), pipeline.Timed())
FUNCTIONS = (pf.ring_timeline, pf.schedules, pf.wgmma_accumulators, pf.cluster_multicast, pf.streamk_split,
             pf.cp_async_ring)

SAMPLES = {
    "ring_timeline": lambda: pf.ring_timeline(COOPERATIVE),
    "ring_timeline_pingpong": lambda: pf.ring_timeline(PINGPONG, cycles=range(20, 60)),
    "schedules": lambda: pf.schedules(COOPERATIVE, PINGPONG),
    "wgmma_accumulators": lambda: pf.wgmma_accumulators(),
    "cluster_multicast": lambda: pf.cluster_multicast(),
    "streamk_split": lambda: pf.streamk_split(),
    "cp_async_ring": lambda: pf.cp_async_ring(),
}


def close(fig):
    import matplotlib.pyplot as plt

    plt.close(fig)


@pytest.fixture(scope="module")
def drawn_all():
    figs = {}
    for name, draw in SAMPLES.items():
        fig = draw()
        fig.canvas.draw()
        figs[name] = fig
    yield figs
    for fig in figs.values():
        close(fig)


@pytest.fixture(params=list(SAMPLES), ids=list(SAMPLES))
def drawn(request, drawn_all):
    return request.param, drawn_all[request.param]


def patches(fig, prefix):
    """The patches whose gid begins with ``prefix``, in every axes of the figure."""
    return [p for ax in fig.axes for p in ax.patches if (p.get_gid() or "").startswith(prefix)]


def spans(rects):
    return sorted((round(r.get_x()), round(r.get_x() + r.get_width())) for r in rects)


# ---------------------------------------------------------------- the course's style


def test_as_wide_as_the_content_column(drawn):
    name, fig = drawn
    assert fig.get_size_inches()[0] == pytest.approx(figures.WIDTH) and fig.dpi == figures.DPI, name


def test_text_is_at_least_the_body_size(drawn):
    name, fig = drawn
    scale = shown_scale(fig)
    small = [(t.get_text()[:30], t.get_fontsize()) for t in texts(fig)
             if t.get_fontsize() < figures.FONT_PT or t.get_fontsize() * fig.dpi / 72 * scale < figures.BODY_PX]
    assert not small, f"{name}: text below {figures.FONT_PT} pt or the body's {figures.BODY_PX} px: {small}"


def test_text_colours_have_contrast_on_their_background(drawn):
    name, fig = drawn
    low = low_contrast(fig)
    assert not low, f"{name}: text below 4.5:1 contrast: {low}"


def test_colours_are_the_palettes():
    """Every fill that tells a kind apart is a PALETTE colour, or a light fill whose text is dark."""
    for kind, look in pf.LOOKS.items():
        assert look.face in figures.PALETTE or figures.contrast_ratio(look.text, look.face) >= 4.5, kind
        assert figures.contrast_ratio(look.text, look.face) >= 4.5, kind


def on_the_page(fig):
    """The texts the figure shows: test_figures' texts(), less the tick labels matplotlib keeps, but does not draw,
    outside an axis's view."""
    hidden = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if not ax.axison:
                hidden |= {id(t) for tick in axis.get_major_ticks() for t in (tick.label1, tick.label2)}
            low, high = sorted(axis.get_view_interval())
            hidden |= {id(label) for tick in axis.get_major_ticks() if not low - 1e-9 <= tick.get_loc() <= high + 1e-9
                       for label in (tick.label1, tick.label2)}
    return [t for t in texts(fig) if id(t) not in hidden]


def text_problems(fig) -> tuple[list, list]:
    """The texts cut off at the figure's edge, and the pairs of texts drawn over each other."""
    renderer = fig.canvas.get_renderer()
    shown = on_the_page(fig)
    boxes = [t.get_window_extent(renderer) for t in shown]
    page = fig.bbox
    out = [t.get_text()[:30] for t, b in zip(shown, boxes)
           if b.x0 < page.x0 - 1 or b.x1 > page.x1 + 1 or b.y0 < page.y0 - 1 or b.y1 > page.y1 + 1]
    overlapping = [(a.get_text()[:20], b.get_text()[:20]) for i, (a, ba) in enumerate(zip(shown, boxes))
                   for b, bb in zip(shown[i + 1:], boxes[i + 1:])
                   if ba.overlaps(bb) and ba.intersection(ba, bb).width > 1 and ba.intersection(ba, bb).height > 1]
    return out, overlapping


def test_no_text_overlaps_other_text_or_leaves_the_figure(drawn):
    name, fig = drawn
    out, overlapping = text_problems(fig)
    assert not out, f"{name}: text cut off at the figure's edge: {out}"
    assert not overlapping, f"{name}: text over text: {overlapping}"


def test_the_text_checks_can_fail():
    fig = pf.ring_timeline(COOPERATIVE)
    ax = fig.axes[0]
    ax.text(0, 0, "a note over the first copies", fontsize=figures.FONT_PT)
    ax.text(39, 1, "a note past the right edge", fontsize=figures.FONT_PT, in_layout=False)
    fig.canvas.draw()
    out, overlapping = text_problems(fig)
    assert out == ["a note past the right edge"] and ("0", "a note over the firs") in overlapping
    close(fig)


def test_block_labels_sit_inside_their_blocks(drawn):
    """A label drawn in a block (a text with the block's fill behind it) lies inside a block of its axes."""
    name, fig = drawn
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        blocks = [p.get_window_extent(renderer) for p in ax.patches]
        for t in ax.texts:
            if t.get_clip_on() and t.get_bbox_patch() is not None:
                box = t.get_window_extent(renderer)
                assert any(b.x0 <= box.x0 and box.x1 <= b.x1 and b.y0 - 1 <= box.y0 and box.y1 <= b.y1 + 1
                           for b in blocks), (name, t.get_text())


@pytest.mark.parametrize("function", FUNCTIONS, ids=[f.__name__ for f in FUNCTIONS])
def test_every_figure_says_what_it_shows(function):
    doc = function.__doc__ or ""
    alt = doc.split("Alt text:", 1)[1].strip() if "Alt text:" in doc else ""
    assert alt.endswith(".") and len(alt.split()) >= 15, f"{function.__name__}: no alt text in its docstring"


def test_the_module_says_what_it_holds():
    assert pf.__doc__ and all(f.__name__ in pf.__doc__ for f in FUNCTIONS)


# ---------------------------------------------------------------- the ring, from the trace


def count_steps(trace, agent, pattern, window=range(40)):
    return sum(1 for row in trace[window.start:window.stop] if re.search(pattern, row["agents"][agent]))


def test_the_ring_has_a_lane_per_agent_and_stage_and_the_cycles_asked(drawn_all):
    fig = drawn_all["ring_timeline"]
    ax = fig.axes[0]
    agents = list(COOPERATIVE.trace[0]["agents"])
    stages = len(COOPERATIVE.trace[0]["full"])
    assert [t.get_text() for t in ax.get_yticklabels()] == agents + [f"stage {s}" for s in range(stages)]
    assert ax.get_xlim() == (0, 40)
    fig = pf.ring_timeline(COOPERATIVE, cycles=25)
    assert fig.axes[0].get_xlim() == (0, 25)
    assert max(p.get_x() + p.get_width() for p in fig.axes[0].patches if p.get_gid()) <= 25
    close(fig)


def test_the_rings_blocks_are_the_traces_steps(drawn_all):
    fig = drawn_all["ring_timeline"]
    trace = COOPERATIVE.trace
    for n in (0, 1):
        assert len(patches(fig, f"consumer {n}|wgmma")) == count_steps(trace, f"consumer {n}", r"^issue wgmma") > 0
        assert len(patches(fig, f"consumer {n}|release")) == count_steps(trace, f"consumer {n}", r"^release stage") > 0
    assert len(patches(fig, "producer|copy")) == count_steps(trace, "producer", r"copy K-tile") > 0
    # The producer's waits: one block per barrier it waits on in a row, each named.
    waits = patches(fig, "producer|wait")
    assert sum(r.get_width() for r in waits) == count_steps(trace, "producer", r"^wait")
    named = {t.get_text() for t in fig.axes[0].texts}
    assert {"empty[0]", "empty[1]", "full[0]"} <= named


def test_the_ring_drawn_from_a_doctored_trace_changes():
    """One wgmma step taken out of the trace: one green block fewer in that consumer's lane."""
    doctored = copy.deepcopy(COOPERATIVE)
    row = next(r for r in doctored.trace if r["agents"]["consumer 0"].startswith("issue wgmma"))
    row["agents"]["consumer 0"] = "waits on full[0] phase 0"
    fig, fig2 = pf.ring_timeline(COOPERATIVE), pf.ring_timeline(doctored)
    assert len(patches(fig2, "consumer 0|wgmma")) == len(patches(fig, "consumer 0|wgmma")) - 1
    assert len(patches(fig2, "consumer 1|wgmma")) == len(patches(fig, "consumer 1|wgmma"))
    close(fig)
    close(fig2)


def test_the_stage_lanes_are_the_barriers_states(drawn_all):
    fig = drawn_all["ring_timeline"]
    trace = COOPERATIVE.trace[:40]
    for s in range(len(trace[0]["full"])):
        read = [row["cycle"] for row in trace if any(s in g for g in row["groups"].values())]
        landing = [row["cycle"] for row in trace if row["full"][s]["tx"] > 0]
        assert sum(r.get_width() for r in patches(fig, f"stage {s}|read")) == len(read) > 0
        assert sum(r.get_width() for r in patches(fig, f"stage {s}|landing")) == len(landing) > 0
        # The parity printed where the full barrier completes a phase.
        changes = [(row["cycle"], row["full"][s]["phase"] & 1) for before, row in zip([None, *trace], trace)
                   if row["full"][s]["phase"] != (before["full"][s]["phase"] if before else 0)]
        printed = [(round(t.get_position()[0]), t.get_text()) for t in fig.axes[0].texts
                   if t.get_gid() == f"stage {s}|parity"]
        assert [text for _, text in printed] == [f"parity {p}" for _, p in changes] and changes


def test_every_step_the_model_writes_has_a_look():
    configs = [pipeline.Config(), pipeline.Config(schedule="pingpong", tiles=4), pipeline.Config(stages=2, consumers=1),
               *(pipeline.Config(fault=f) for f in ("expect_tx", "parity")),
               pipeline.Config(schedule="pingpong", tiles=4, fault="no_turns")]
    kinds = Counter()
    for config in configs:
        outcome = pipeline.play(config, pipeline.Timed())
        for name in outcome.trace[0]["agents"]:
            kinds.update(c.kind for c in pf.agent_cells(outcome.trace, name) if c is not None)
        fig = pf.ring_timeline(outcome, cycles=min(40, len(outcome.trace)))
        close(fig)
    assert set(kinds) == {"copy", "wgmma", "release", "handover", "store", "wait"}
    with pytest.raises(ValueError, match="do not know"):
        pf.classify("issue tcgen05.mma on stage 0")


def test_a_window_outside_the_trace_is_refused():
    with pytest.raises(ValueError, match="cycles"):
        pf.ring_timeline(COOPERATIVE, cycles=range(100, 200))


# ---------------------------------------------------------------- the two schedules


def test_each_consumers_groups_are_the_traces(drawn_all):
    fig = drawn_all["schedules"]
    for panel, outcome in zip(fig.axes[:2], (COOPERATIVE, PINGPONG)):
        groups = pf.tensor_groups(outcome.trace)
        for n in (0, 1):
            mine = [p for p in panel.patches if p.get_gid() == f"consumer {n}|wgmma"]
            issued = sum(1 for row in outcome.trace if row["agents"][f"consumer {n}"].startswith("issue wgmma"))
            assert len(mine) == issued == sum(1 for g in groups if g.consumer == n) > 0
            stores = [p for p in panel.patches if p.get_gid() == f"consumer {n}|store"]
            assert spans(stores) == sorted((a, b) for a, b, _ in pf.store_spans(outcome.trace, n))
        assert panel.get_xlim() == fig.axes[1].get_xlim()              # the same x scale
    # Equal work: as many groups in each schedule.
    assert len(pf.tensor_groups(COOPERATIVE.trace)) == len(pf.tensor_groups(PINGPONG.trace))


def test_the_tensor_cores_take_one_group_at_a_time():
    for outcome in (COOPERATIVE, PINGPONG):
        groups = pf.tensor_groups(outcome.trace)
        assert all(g.end - g.start == pipeline.Timed().mma_cycles for g in groups)
        assert all(a.end <= b.start for a, b in zip(groups, groups[1:]))
        busy = sum(g.end - g.start for g in groups)
        assert sum(b - a for a, b in pf.idle_spans(outcome.trace)) == len(outcome.trace) - busy


def cycles_of(rects):
    return {c for r in rects for c in range(round(r.get_x()), round(r.get_x() + r.get_width()))}


def test_the_picture_makes_the_point(drawn_all):
    """Cooperative: both consumers store at once while the tensor cores idle. Ping-pong: one stores while the other's
    groups run."""
    coop, pingpong = drawn_all["schedules"].axes[:2]

    def lane(ax, gid):
        return cycles_of([p for p in ax.patches if p.get_gid() == gid])

    both = lane(coop, "consumer 0|store") & lane(coop, "consumer 1|store")
    assert both and len(both & lane(coop, "tensor cores|idle")) >= 8
    for n in (0, 1):
        overlap = lane(pingpong, f"consumer {n}|store") & lane(pingpong, f"consumer {1 - n}|wgmma")
        assert len(overlap) >= 8
    both = lane(pingpong, "consumer 0|store") & lane(pingpong, "consumer 1|store")
    assert not both & lane(pingpong, "tensor cores|idle")


def test_the_schedules_drawn_from_a_doctored_trace_change():
    """The tensor cores' last completion taken out of the trace: one group fewer drawn, and more idle time; a trace
    whose completions do not follow the issue order is refused."""
    doctored = copy.deepcopy(PINGPONG)
    row = next(r for r in reversed(doctored.trace) if any(e.startswith("tensor cores") for e in r["engines"]))
    last = next(e for e in row["engines"] if e.startswith("tensor cores"))
    who = int(re.search(r"consumer (\d+)", last)[1])
    row["engines"].remove(last)
    fig, fig2 = pf.schedules(COOPERATIVE, PINGPONG), pf.schedules(COOPERATIVE, doctored)
    count = {f: len([p for p in f.axes[1].patches if p.get_gid() == f"consumer {who}|wgmma"]) for f in (fig, fig2)}
    assert count[fig2] == count[fig] - 1
    idle = {f: sum(p.get_width() for p in f.axes[1].patches if p.get_gid() == "tensor cores|idle") for f in (fig, fig2)}
    assert idle[fig2] > idle[fig]
    close(fig)
    close(fig2)
    for row in doctored.trace:          # consumer 1's groups never finish: consumer 0's finish out of issue order
        row["engines"] = [e for e in row["engines"] if not e.startswith("tensor cores: consumer 1")]
    with pytest.raises(ValueError, match="oldest"):
        pf.tensor_groups(doctored.trace)


# ---------------------------------------------------------------- wgmma's accumulators


@pytest.mark.parametrize("n", [8, 16, 64])
def test_the_accumulator_colours_are_the_models_warps(n):
    fig = pf.wgmma_accumulators(n)
    left, right = fig.axes[:2]
    warp = left.images[0].get_array()
    assert warp.shape == (64, n)
    for thread in range(hopper.WARPGROUP):
        for r in range(n // 2):
            row, col = hopper.wgmma_d_position(thread, r, n)
            assert warp[row, col] == thread // 32
    cells = [t.get_text() for t in right.texts]
    expected = {hopper.wgmma_d_position(lane, r, n): f"l{lane} r{r}" for lane in range(32) for r in range(4)}
    assert cells == [expected[(row, col)] for row in range(16) for col in range(8)]
    # Register 4j + e of lane l at row l // 4 + 8 (e // 2), column 8j + 2 (l % 4) + e % 2, as the figure's title says.
    for (row, col), text in expected.items():
        lane, r = (int(x) for x in re.fullmatch(r"l(\d+) r(\d+)", text).groups())
        assert (row, col) == (lane // 4 + 8 * (r % 4 // 2), 8 * (r // 4) + 2 * (lane % 4) + r % 2)
    close(fig)


# ---------------------------------------------------------------- the cluster


def test_the_cluster_is_drawn_from_named_constants(drawn_all):
    fig = drawn_all["cluster_multicast"]
    a_bytes, b_bytes = pipeline.Config().stage_bytes
    assert (pf.BM, pf.BN, pf.BK) == (128, 256, 64)
    assert pf.BM * pf.BK * pf.ELEMENT_BYTES == a_bytes and pf.BN * pf.BK * pf.ELEMENT_BYTES == b_bytes
    shown = " ".join(t.get_text() for t in texts(fig))
    assert f"{pf.BM} × {pf.BK}" in shown and f"{pf.BN} × {pf.BK}" in shown
    half = pf.BN // pf.CLUSTER
    assert f"0–{half - 1}" in shown and f"{half}–{pf.BN - 1}" in shown and "once per pair" in shown
    arrows = [p for p in fig.axes[0].patches if isinstance(p, FancyArrowPatch)]
    b_arrows = [a.get_gid() for a in arrows if a.get_gid().startswith("arrow|B")]
    assert len(arrows) == pf.CLUSTER + pf.CLUSTER ** 2
    assert sorted(b_arrows) == sorted(f"arrow|B half {h} to block {b}" for h in range(2) for b in range(2))
    for b in range(pf.CLUSTER):                  # every block's B holds both halves; each half as wide as an A box
        halves = [p for p in fig.axes[0].patches if (p.get_gid() or "").startswith(f"block {b}|B half")]
        a_box = next(p for p in fig.axes[0].patches if p.get_gid() == f"block {b}|A")
        assert len(halves) == 2 and all(h.get_width() == pytest.approx(a_box.get_width()) for h in halves)


# ---------------------------------------------------------------- stream-K


def drawn_portions(ax):
    out = {}
    for p in ax.patches:
        m = re.fullmatch(r"unit (\d+)\|tile (\d+)\|(\d+)-(\d+)", p.get_gid() or "")
        if m:
            out.setdefault(int(m[1]), []).append((round(p.get_x()), *(int(x) for x in m.groups()[1:]),
                                                  round(p.get_width())))
    return {u: sorted(v) for u, v in out.items()}


@pytest.mark.parametrize("tiles, k_tiles, units", [(10, 8, 4), (7, 5, 3), (9, 6, 4), (8, 8, 4)])
def test_the_bars_are_plans_portions(tiles, k_tiles, units):
    fig = pf.streamk_split(tiles, k_tiles, units)
    for ax, share in zip(fig.axes[:2], (False, True)):
        plan = streamk.plan(tiles, k_tiles, units, share=share)
        want = {}
        for u, mine in enumerate(plan):
            x = 0
            for tile, kb, ke in mine:
                want.setdefault(u, []).append((x, tile, kb, ke, ke - kb))
                x += ke - kb
        assert drawn_portions(ax) == want
        ends = [sum(ke - kb for _, kb, ke in mine) for mine in plan]
        idle = {int(p.get_gid().split()[1].split("|")[0]): round(p.get_width()) for p in ax.patches
                if (p.get_gid() or "").endswith("|idle")}
        assert idle == {u: max(ends) - e for u, e in enumerate(ends) if e < max(ends)}
    close(fig)


def test_the_default_split_shows_idle_units_and_then_none(drawn_all):
    whole, shared = drawn_all["streamk_split"].axes[:2]
    assert len([p for p in whole.patches if (p.get_gid() or "").endswith("|idle")]) == 2
    assert not [p for p in shared.patches if (p.get_gid() or "").endswith("|idle")]
    cut = [p for p in shared.patches if p.get_hatch() and "|tile" in (p.get_gid() or "")]
    assert len(cut) == 4                          # tiles 8 and 9, in halves; each tile's halves in one colour
    assert all(len({p.get_facecolor() for p in cut if f"tile {t}|" in p.get_gid()}) == 1 for t in (8, 9))


def test_the_split_drawn_from_a_doctored_plan_changes(monkeypatch):
    real = streamk.plan

    def doctored(*args, **kwargs):
        out = real(*args, **kwargs)
        return [mine[:-1] if u == 0 else mine for u, mine in enumerate(out)]

    monkeypatch.setattr(streamk, "plan", doctored)
    fig = pf.streamk_split()
    assert len(drawn_portions(fig.axes[1])[0]) == len(real(10, 8, 4)[0]) - 1
    close(fig)


# ---------------------------------------------------------------- the cp.async ring


@pytest.mark.parametrize("stages, k_tiles", [(3, 8), (2, 5), (4, 10)])
def test_the_cp_async_lanes_are_the_models(stages, k_tiles):
    fig = pf.cp_async_ring(stages, k_tiles)
    ring = cp_async.ring(stages, k_tiles)
    for s in range(stages):
        mine = [t for t in ring.k_tiles if t.stage == s]
        assert spans(patches(fig, f"stage {s}|landing")) == [(t.issued, t.landed) for t in mine]
        assert spans(patches(fig, f"stage {s}|read")) == [(t.computed, t.done) for t in mine]
    for what in cp_async.LOOP:
        want = [(w.start, w.end) for w in ring.warps if w.what == what]
        assert spans(patches(fig, f"warps|{what}")) == want
    assert fig.axes[0].get_xlim() == (0, ring.cycles)
    assert f"wait_group {stages - 2}" in fig.axes[0].get_title(loc="left")
    close(fig)


def test_copies_in_flight_overlap_compute(drawn_all):
    fig = drawn_all["cp_async_ring"]
    in_flight = cycles_of([p for p in patches(fig, "stage") if p.get_gid().endswith("|landing")])
    computing = cycles_of(patches(fig, "warps|compute"))
    assert len(in_flight & computing) >= 20
