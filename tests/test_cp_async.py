"""Chapter 8's cp.async ring model (gemmlab.models.cp_async) follows the kernel: its loop's order and its wait depth
are read from kernels/08_tensor_core.cu's ``pipeline`` region, and its timeline keeps what the kernel relies on (a
K-tile computed only once it has landed, a stage refilled only after every warp is done with it, at most
``stages - 1`` copies in flight)."""

import re

import pytest

from gemmlab.book import source
from gemmlab.models import cp_async
from notebook_tools import ROOT

KERNEL = ROOT / "kernels" / "08_tensor_core.cu"


def pipeline_region() -> str:
    return source.extract(KERNEL.read_text(encoding="utf-8"), "pipeline")


def plain_loop(region: str) -> str:
    """The main loop without PREFETCH: the one the model plays."""
    start = region.index("if constexpr (!PREFETCH)")
    return region[start:region.index("} else {", start)]


STEP_CODE = {"wait_group": r"copy_wait<RING - \d+>\(\)", "__syncthreads": r"__syncthreads\(\)",
             "issue": r"load_tile\(next, next % RING", "commit": r"copy_commit\(\)", "compute": r"mma_all\("}
"""How each step of cp_async.LOOP reads in the kernel."""


def test_the_loop_is_the_kernels_order():
    loop = plain_loop(pipeline_region())
    at = {step: re.search(code, loop) for step, code in STEP_CODE.items()}
    assert all(at.values()), {s: bool(m) for s, m in at.items()}
    assert tuple(sorted(at, key=lambda s: at[s].start())) == cp_async.LOOP


def test_the_wait_depth_and_the_prologue_are_the_kernels():
    region = pipeline_region()
    depth = int(re.search(r"copy_wait<RING - (\d+)>", plain_loop(region))[1])
    assert all(cp_async.wait_depth(stages) == stages - depth for stages in range(2, 9))
    prologue = re.search(r"for \(int s = 0; s < RING - (\d+); \+\+s\)", region)
    assert prologue and region.index("copy_commit()", prologue.end()) < region.index("if constexpr (!PREFETCH)")
    for stages in (2, 3, 4):                                       # the prologue issues RING - 1 K-tiles, then waits
        first = stages - int(prologue[1])
        warps = cp_async.ring(stages, 8).warps
        assert [(s.what, s.k_tile) for s in warps[:first + 1]] == [*(("issue", k) for k in range(first)),
                                                                   ("wait_group", 0)]


def test_the_order_check_can_fail():
    loop = plain_loop(pipeline_region())
    loop = loop.replace("copy_commit();", "").replace("mma_all(0);", "mma_all(0); copy_commit();")   # commit moved last
    at = {step: re.search(code, loop) for step, code in STEP_CODE.items()}
    assert tuple(sorted(at, key=lambda s: at[s].start())) != cp_async.LOOP


@pytest.mark.parametrize("stages, k_tiles", [(2, 1), (2, 5), (3, 8), (4, 3), (4, 12), (5, 9)])
@pytest.mark.parametrize("timing", [cp_async.Timing(), cp_async.Timing(issue=2, sync=1, copy=20, compute=3),
                                    cp_async.Timing(issue=1, sync=0, copy=2, compute=9)])
def test_the_ring_keeps_what_the_kernel_relies_on(stages, k_tiles, timing):
    ring = cp_async.ring(stages, k_tiles, timing)
    tiles = ring.k_tiles
    assert [t.k_tile for t in tiles] == list(range(k_tiles))
    assert all(t.stage == t.k_tile % stages for t in tiles)
    assert all(t.landed == t.issued + timing.copy <= t.computed < t.done for t in tiles)
    for a, b in zip(tiles, tiles[stages:]):                       # the same stage, one round later
        assert b.issued >= a.done + timing.sync, "a stage refilled while a warp may still read it"
    for t in tiles:                                                # copies in flight when K-tile t's compute begins
        assert sum(1 for u in tiles if u.issued <= t.computed < u.landed) <= stages - 1
    computes = [s for s in ring.warps if s.what == "compute"]
    assert [(s.start, s.end) for s in computes] == [(t.computed, t.done) for t in tiles]
    assert all(a.end <= b.start for a, b in zip(ring.warps, ring.warps[1:])), "the warps do one thing at a time"
    assert ring.cycles == tiles[-1].done


def test_copies_overlap_compute_in_the_default_ring():
    ring = cp_async.ring()
    assert any(u.issued < t.done and t.computed < u.landed for t in ring.k_tiles for u in ring.k_tiles if u is not t)


@pytest.mark.parametrize("stages, k_tiles", [(1, 4), (3, 0)])
def test_bad_rings_are_refused(stages, k_tiles):
    with pytest.raises(ValueError):
        cp_async.ring(stages, k_tiles)
