# Issue #18: can a shared clock make the blocks that share a tile of A or B ask for it together? The L2's request
# coalescer merges requests from different SMs for the same sectors that meet in it, 5.31 million of cuBLAS's request
# sectors at 4096^3 against 1.73 million of the last step's (results/ncu-h200-lrc-4096.csv); our sharers ask a median
# 128 ns apart, 65% within 250 ns (drafts/09_phase_experiment.py, 2026-12-02), and most do not meet. Here the
# producer, once a stage is free, waits for the next multiple of P ns of %globaltimer (the same clock on every SM)
# before asking for the stage's tiles: blocks whose stages free within one period then ask within nanoseconds, and a
# merged answer, arriving at both together, keeps them in step. P = 128, 256, 512 ns (a K-tile takes about 640 ns;
# the ring holds 4). Also 'bfirst': the producer asks for its half of the shared B before its A, as CUTLASS's
# cooperative mainloop orders the multicast operand first. Each is checked at awkward sizes, timed interleaved with
# cuBLAS and the last step at 4096^3 and 8192^3, and with --once launched for Nsight Compute (merged sectors, DRAM).
# Run on a Hopper GPU with CuPy:   timeout 200 python3 drafts/09_clock_align_experiment.py [--once]
import argparse, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from drafts.variants import last_step_experiment

EXPECT = "                    barrier_expect(&full[s], A_STAGE + B_STAGE);\n"


def aligned(period_ns: int) -> list:
    """The producer waits for the next multiple of ``period_ns`` of %globaltimer before each K-tile's requests."""
    wait = f"""                    if (PERSISTENT && CLUSTER == 2) {{                 // experiment: ask on the shared clock
                        unsigned long long now, next;
                        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
                        next = (now | {period_ns - 1}ull) + 1;
                        do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); while (now < next);
                    }}
"""
    return [(EXPECT, wait + EXPECT)]


A_LOAD = "                    tma_load_2d(a_tiles + s * A_STAGE, a_map, kt * WS_BK, m0, &full[s]);\n"
B_LOADS = """                    if (CLUSTER == 1) {
                        tma_load_2d(b_tiles + s * B_STAGE, bt_map, kt * WS_BK, n0, &full[s]);
                    } else {                                         // this block's half of B, into both blocks
                        const int half = WS_BN / 2;
                        tma_load_2d_both(b_tiles + s * B_STAGE + rank * half * 128, bt_map, kt * WS_BK, n0 + rank * half,
                                         &full[s]);
                    }
"""
EDITS = {"t128": aligned(128), "t256": aligned(256), "t512": aligned(512),
         "bfirst": [(A_LOAD + B_LOADS, B_LOADS + A_LOAD)]}


def main(once: bool):
    last_step_experiment(EDITS, ((1, 1, 1), (300, 520, 1234), (1000, 2000, 777), (8192, 8192, 1024)),
                         ((4096,) * 3, (8192,) * 3), once, check_timed=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--once", action="store_true", help="each kernel launched twice at 4096^3, for ncu")
    main(parser.parse_args().once)
