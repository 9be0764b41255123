"""Chapter 9's stream-K tail (``StreamK`` and ``STREAMK`` in kernels/09_hopper.cu, gemmlab.models.streamk), without a GPU:
the split computes every K-tile once and never stalls for thousands of sizes and grids; the kernel's own struct,
compiled for the host, splits exactly as the model does; and the hand-off adds the parts of a cut tile into C in one
order whatever the schedule, which waiting for the tile's last part alone would not."""

import itertools
import random
import subprocess

import numpy as np
import pytest

import nvcc_cache
from gemmlab.gemm import wgmma
from gemmlab.models import streamk
from gemmlab.runtime import provenance


def cases():
    rng = random.Random(0)
    out = [(t, k, g) for t in range(1, 40) for k in (1, 2, 3, 7, 64) for g in range(1, 40)]
    out += [(rng.randint(1, 2200), rng.randint(1, 140), rng.randint(1, 132)) for _ in range(600)]
    for M, N, K in ((4096,) * 3, (8192,) * 3, (6144, 4096, 2048), (2048,) * 3, (1000, 2000, 777)):
        tiles = streamk.tiles_of(M, N)
        out += [(tiles, -(-K // 64), min(g, tiles)) for g in (66, 64, 60, 57)]
    return out


def test_every_k_tile_once_one_flag_per_unit_and_no_stall():
    for tiles, k, units in cases():
        most = streamk.check(tiles, k, units)
        walk = streamk.StreamK(tiles, k, units, 0)
        # no unit computes more than one K-tile beyond an even share of the shared ones, on top of its whole tiles
        assert most <= walk.whole // units * k + -(-walk.shared // units), (tiles, k, units, most)


def test_the_split_saves_what_the_chapter_says_at_4096():
    b = streamk.balance(4096, 4096, 4096, 66)
    assert (b.tiles, b.units, b.whole_tiles_only) == (256, 66, 4) and b.shared == 3 + 57 / 64
    assert streamk.balance(2048, 2048, 2048, 66).saving == 0            # 64 pairs on 64 clusters: nothing to share
    assert not streamk.StreamK(100, 64, 10, 3, share=False).shared       # the ladder's kernels never share


def test_a_wrong_wait_is_caught_as_a_stall():
    """The stall check can fail: parts that wait for the part before them (an earlier unit, which waits in turn at the
    end of its range) form cycles."""
    assert not streamk.runs_to_the_end([[("wait", 1), ("raise", None)], [("wait", 0), ("raise", None)]])
    assert streamk.runs_to_the_end([[("raise", None), ("wait", 1)], [("raise", None), ("wait", 0)]])


def _schedule(tiles, k, units, waits, seed, values):
    """Play the hand-off: each unit computes its portions in order; a portion that waits does so at its epilogue;
    the last part of a tile stores, the others add (float32); a part starting inside a tile raises its unit's flag
    once it is in C. A random unit moves one step at a time. Returns C per split tile."""
    portions = streamk.plan(tiles, k, units)
    walk = streamk.StreamK(tiles, k, units, 0)
    rng = random.Random(seed)
    pos, raised, C = [0] * units, set(), {}
    while any(p < len(m) for p, m in zip(pos, portions)):
        ready = [u for u in range(units) if pos[u] < len(portions[u])
                 and (w := waits(walk, *portions[u][pos[u]])) is None or (pos[u] < len(portions[u]) and w in raised)]
        assert ready, "stalled"
        u = rng.choice(ready)
        tile, kb, ke = portions[u][pos[u]]
        v = values[(tile, kb)]
        C[tile] = v if ke == k else np.float32(C.get(tile, np.float32(0)) + v)
        if kb > 0:
            raised.add(u)
        pos[u] += 1
    return {t: c for t, c in C.items() if t >= walk.whole}


def test_the_parts_of_a_cut_tile_meet_in_one_order():
    """With three parts to a tile (a unit's whole range inside it), waiting for the last part alone lets the other two
    add in either order, and float32 sums then differ in their last bits between launches; the kernel's chain (wait for
    the next part) gives one order."""
    tiles, k, units = next((t, k, g) for t, k, g in itertools.product(range(2, 30), (16, 64), range(2, 30))
                           if any(len([p for m in streamk.plan(t, k, g) for p in m if p[0] == tile]) == 3
                                  for tile in range(t)))
    # tail 2^24, middle 1, head -2^24: (2^24 + 1) - 2^24 = 0 in float32 (2^24 + 1 rounds to 2^24), (2^24 - 2^24) + 1 = 1
    values = {(t, kb): np.float32(2.0 ** 24 if ke == k else (-2.0 ** 24 if kb == 0 else 1.0))
              for m in streamk.plan(tiles, k, units) for t, kb, ke in m}
    chain = [_schedule(tiles, k, units, streamk.waits_for, s, values) for s in range(60)]
    assert all(c == chain[0] for c in chain)

    def last_part_only(walk, tile, kb, ke):
        return walk.holder(tile, k - 1) if ke < k else None

    loose = [_schedule(tiles, k, units, last_part_only, s, values) for s in range(60)]
    assert any(c != loose[0] for c in loose), "expected two orders of the adds to give different float32 sums"


HARNESS = r"""
#include "09_hopper.cu"
#include <cstdio>
int main()      // for each "tiles k units" line: every unit's portions, and whom each waits for
{
    int tiles, k, units;
    while (std::scanf("%d %d %d", &tiles, &k, &units) == 3)
        for (int u = 0; u < units; ++u) {
            StreamK w(tiles, k, units, u, true);
            int t, kb, ke;
            while (w.next(t, kb, ke))
                std::printf("%d %d %d %d %d\n", u, t, kb, ke, ke < k ? w.holder(t, ke) : -1);
        }
}
"""


@pytest.mark.usefixtures("nvcc_path")     # skips without nvcc; fails under GEMMLAB_STRICT_TOOLS=1
def test_the_kernel_splits_as_the_model_does():
    chosen = cases()[::9]
    expected = []
    for tiles, k, g in chosen:
        walk = streamk.StreamK(tiles, k, g, 0)
        for u, mine in enumerate(streamk.plan(tiles, k, g)):
            expected += [f"{u} {t} {kb} {ke} {walk.holder(t, ke) if ke < k else -1}" for t, kb, ke in mine]
    harness = nvcc_cache.executable(HARNESS, ["-std=c++17", "-gencode=arch=compute_90a,code=sm_90a"],
                                    provenance.KERNELS_DIR, "streamk_harness")
    out = subprocess.run([str(harness)], input="".join(f"{t} {k} {g}\n" for t, k, g in chosen),
                         text=True, capture_output=True, check=True, timeout=120).stdout.splitlines()
    assert out == expected


def test_the_python_configuration_is_the_last_step_with_the_switch():
    assert wgmma.GEMM_STREAMK.streamk and wgmma.GEMM_STREAMK.c_map and wgmma.GEMM_STREAMK.cluster == 2
    assert wgmma.GEMM_STREAMK.shared == wgmma.GEMM_TMA_STORE.shared and not wgmma.GEMM_TMA_STORE.streamk
