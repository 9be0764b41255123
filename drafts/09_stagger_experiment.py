# Issue #18: the last step's epilogue takes 3.0 us a tile at 4096^3 (median; 2.2-4.4), 7% of a tile whose main loop
# takes 41 us (640 ns a K-tile: the tensor cores' peak at 1.6 GHz; the clock was not recorded), and no wgmma is issued
# through it (drafts/09_streamk_phases_experiment.py, 2026-12-02, results/streamk-phases-h200.txt). All 132 blocks
# start together and run K-loops of one length, so they may all store their 128 KiB of C at the same moment: 17 MB in
# about 3 us would be some 5.8 TB/s into the L2. Is the epilogue slow because everyone stores at once? Here the
# clusters of odd units start 1.5 or 3 us late (%globaltimer), so that half the blocks store while the other half
# compute, and the stamps of the stream-K draft, made unconditional, time each epilogue again; 'nostore_stamp' writes
# the boxes into shared memory but never hands them to the copy engine (C wrong: its check fails, and it is not
# timed), to see what the epilogue costs without the stores. Checked, timed interleaved with cuBLAS and the last step
# at 4096^3 and 8192^3.
# Run on a Hopper GPU with CuPy:   timeout 300 python3 drafts/09_stagger_experiment.py
import sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gemmlab import gpu, tma
from drafts.variants import (GOAL_SIZES, cuda_and_cupy, last_step_variants, load_draft, print_correct,
                             time_against_cublas)

phases = load_draft("09_streamk_phases_experiment")

# The stream-K draft's stamps, taken in the last step (no STREAMK) too.
STAMPS = [(old, new.replace("if (STREAMK && c == 0", "if (PERSISTENT && CLUSTER == 2 && c == 0")) for old, new in phases.STAMPS]
SYNC = "        cluster_sync();              // both blocks' barriers exist before either block's copies name them\n    else\n        __syncthreads();\n"


def staggered(delay_ns: int) -> list:
    """Both blocks of every odd unit's cluster wait ``delay_ns`` of %globaltimer before they start."""
    wait = f"""    if (PERSISTENT && CLUSTER == 2 && unit % 2 == 1) {{              // experiment: odd units start late
        unsigned long long start, now;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
        do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); while (now - start < {delay_ns}ull);
    }}
"""
    return [(SYNC, SYNC + wait)]


STORE = """            else
                asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                             ::"l"(reinterpret_cast<uint64_t>(c_map)), "r"(col0 + 32 * j), "r"(row0), "r"(tma_smem(buf))
                             : "memory");
"""
NO_STORE = [(STORE, "            else                                                     // experiment: no store\n"
                    "                asm volatile(\"\" ::: \"memory\");\n")]
EDITS = {"stamp": STAMPS, "stag1500": staggered(1500), "stag3000": staggered(3000),
         "stag3000_stamp": staggered(3000) + STAMPS, "nostore_stamp": NO_STORE + STAMPS}


def stamped_checked_timed(cp, ks: dict, check_sizes) -> None:
    """For the drafts that build on these stamps: the stamped kernels of ``ks`` first (no larger launch has left
    stamps behind), then all checked at ``check_sizes``, then those without stamps timed interleaved with cuBLAS at
    the goal's sizes."""
    phases.stamped(ks)
    print_correct(ks, check_sizes)
    time_against_cublas(cp, {n: k for n, k in ks.items() if "stamp" not in n}, GOAL_SIZES)


def main():
    gpu.cuda()
    cp = cuda_and_cupy()
    with tempfile.TemporaryDirectory() as tmp:
        ks = last_step_variants(Path(tmp), EDITS, config=tma.GEMM_TMA_STORE)
        print_correct(ks, ((1, 1, 1), (1000, 2000, 777), (4096, 4096, 4096)))
        phases.stamped_then_timed(cp, ks)


if __name__ == "__main__":
    main()
