# Issue #18: do the blocks that share a tile of A or B ask for it at the same moment? The L2's request coalescer
# merges requests from different SMs for the same sectors that arrive at about the same time, and it merges 5.31
# million of cuBLAS's request sectors at 4096^3 against 1.73 million of the last step's (results/ncu-h200-lrc-4096.csv).
# This draft measures when ours ask: a copy of kernels/09_hopper.cu whose producer thread writes %globaltimer into a
# __device__ array just before it asks the copy engine for each K-tile (block, iteration), read back through the
# driver after one launch at 4096^3, BF16. For every K-tile of every 128-row slab of A (asked for by the blocks of one
# rank in the clusters on that row of pair tiles) and every half of every 256-column slab of B (one block of each
# cluster on that column), it sorts the requests by time and prints how long after the one before each came: a
# request within a few hundred ns of another is one the coalescer can merge, one a round later (about 46 us) is not.
# The K-tile's own time (between a block's successive requests) is the yardstick.
# Also: the chapter's tile order walked as a serpentine (every other group of rows walks the columns backwards, so
# that the columns of B a group ends on are the ones the next group starts on, still in the L2), checked and timed
# interleaved with cuBLAS, and its DRAM reads and merged sectors with --once under Nsight Compute.
# Run on a Hopper GPU with CuPy:   timeout 200 python3 drafts/09_phase_experiment.py [--once]
import argparse, statistics, sys, tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gemmlab import gpu, tma, verify
from drafts.variants import (against_cublas, correct_at, cuda_and_cupy, device_array, last_step_variants,
                             launch_twice, launched_three_times)

STAMPS = 320                                   # requests recorded per block: 5 tiles of 64 K-tiles
GROUP = 8                                      # WS_GROUP of the chapter's kernel file (checked below)
STAMP_ARRAY = f"__device__ unsigned long long request_stamps[132 * {STAMPS}];\n\n// [gemm_ws]\n"
EXPECT = "                    barrier_expect(&full[s], A_STAGE + B_STAGE);\n"
STAMP = EXPECT + f"""                    if (PERSISTENT && CLUSTER == 2 && gridDim.x == 132 && it < {STAMPS}) {{   // experiment
                        unsigned long long now;
                        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
                        request_stamps[blockIdx.x * {STAMPS} + it] = now;
                    }}
"""
TILE = "    return make_int2(first + in_group % rows, in_group / rows);\n"
SERPENTINE = ("    const int col = in_group / rows;                            // experiment: every other group backwards\n"
              "    return make_int2(first + in_group % rows, (first / WS_GROUP) % 2 ? tiles_n - 1 - col : col);\n")
EDITS = {"stamp": [("// [gemm_ws]\n", STAMP_ARRAY), (EXPECT, STAMP)], "serp": [(TILE, SERPENTINE)]}


def read_stamps(kernel) -> np.ndarray:
    """The array the stamping kernel wrote, (132 blocks, STAMPS) nanoseconds."""
    return device_array(kernel, "request_stamps", np.uint64, 132 * STAMPS).reshape(132, STAMPS)


def tile_of(t: int, tiles_m: int, tiles_n: int) -> tuple[int, int]:
    """ws_tile<true> of kernels/09_hopper.cu (groups of GROUP rows of pair tiles, walked column by column)."""
    per_group, first = GROUP * tiles_n, t // (GROUP * tiles_n) * GROUP
    rows, in_group = min(GROUP, tiles_m - first), t % per_group
    return first + in_group % rows, in_group // rows


def requests(stamps: np.ndarray, n: int, k_tiles: int) -> dict:
    """``{("A" or "B", slab, K-tile): [ns, ...]}``: who asked for which K-tile of which slab, and when. Block b is
    rank b % 2 of cluster b // 2; the cluster's j-th tile is pair tile b // 2 + 66 j (whole tiles only: at n^3 with
    n a multiple of 256 the last step shares nothing)."""
    tiles_m = tiles_n = n // 256
    out = {}
    for b in range(132):
        unit, rank = divmod(b, 2)
        for it in range(STAMPS):
            j, kt = divmod(it, k_tiles)
            t = unit + 66 * j
            if t >= tiles_m * tiles_n or stamps[b, it] == 0:
                break
            row, col = tile_of(t, tiles_m, tiles_n)
            out.setdefault(("A", 2 * row + rank, kt), []).append(int(stamps[b, it]))
            out.setdefault(("B", 2 * col + rank, kt), []).append(int(stamps[b, it]))
    return out


def summary(stamps: np.ndarray, n: int) -> None:
    k_tiles = n // 64
    steps = [int(d) for b in range(132) for d in np.diff(stamps[b][stamps[b] > 0].astype(np.int64)) if 0 < d < 20_000]
    print(f"a K-tile between a block's requests: median {statistics.median(steps):.0f} ns "
          f"(globaltimer steps seen: {sorted(set(np.diff(np.unique(stamps[stamps > 0])).tolist()))[:3]} ns)", flush=True)
    for operand in "AB":
        gaps = []
        for (o, _, _), times in requests(stamps, n, k_tiles).items():
            if o == operand:
                times.sort()
                gaps += [b - a for a, b in zip(times, times[1:])]
        gaps = np.array(gaps)
        share = {w: float((gaps < w).mean()) for w in (250, 500, 1000, 2000, 10_000)}
        print(f"{operand}: {len(gaps)} requests after another of the same K-tile of the same slab; "
              + ", ".join(f"{100 * v:.1f}% within {w} ns" for w, v in share.items())
              + f"; median gap {np.median(gaps):.0f} ns", flush=True)


def main(once: bool, n: int):
    gpu.cuda()
    with tempfile.TemporaryDirectory() as tmp:
        ks = last_step_variants(Path(tmp), EDITS)
        assert f"#define WS_GROUP {GROUP}\n" in (ROOT / "kernels" / tma.SOURCE).read_text(), "WS_GROUP changed"
        if once:
            launch_twice({name: k for name, k in ks.items() if name != "stamp"}, *verify.random_operands(n, n, n, seed=1))
            return
        cp = cuda_and_cupy()
        for M, N, K in ((1000, 2000, 777), (n,) * 3, (8192, 8192, 1024)):
            print(f"correct at {M}x{N}x{K}:", correct_at(ks, *verify.random_operands(M, N, K, seed=1)), flush=True)
        A, B = verify.random_operands(n, n, n, seed=1)
        launched_three_times(ks["stamp"], A, B)      # the third launch's stamps: a warm L2 and warm clocks
        summary(read_stamps(ks["stamp"]), n)
        against_cublas(cp, {name: k.on_device(A, B) for name, k in ks.items() if name != "stamp"}, A, B)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--once", action="store_true", help="base and serp launched twice each, for ncu")
    parser.add_argument("--size", type=int, default=4096, help="n of n^3, a multiple of 256 (default 4096)")
    args = parser.parse_args()
    if args.size % 256 or args.size * args.size // 65536 > 66 * (STAMPS // (args.size // 64)):
        parser.error("size: a multiple of 256 whose tiles the recorded requests cover (at most 4096 with 320)")
    main(args.once, args.size)
