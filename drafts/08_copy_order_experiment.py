# Where chapter 8's last step (tc_inner) waits, by instruction (Nsight Compute's warp-state sampling, 2026-12-02,
# drafts/next_gpu.sh S, tc_inner_bf16 at 4096^3): 8.5% of all samples sit on the one instruction after the tile's
# cp.async copies and their commit, a LOP3 that reuses a register the copies read their shared-memory address from,
# stalled on the long scoreboard until the copies have read it; the HMMA themselves hold 47% of the samples (most of
# them the fixed issue interval between two mma.sync of a warp). The chapter's loop issues the next tile's copies at
# the start of each tile, before its first k-step's mma.sync. Two variants, generated from kernels/08_tensor_core.cu:
#   after  the copies issued after the first k-step's mma.sync (the tensor cores have 32 mma.sync of the warp queued
#          while the copies read their registers)
#   last   the copies issued at the last k-step, just before the wait and the barrier (two tiles ahead, as before)
# each checked at awkward sizes, then timed interleaved against tc_inner at 8192^3 and 4096^3, FP16 and BF16.
# Run on a GPU of sm_80 or later (about a minute):  timeout 200 python3 drafts/08_copy_order_experiment.py
import sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gemmlab import gpu
from drafts.variants import check_and_time, tc_inner_units, tc_inner_variants

ISSUE = ("                if (SPREAD || kk == 0) {\n"
         "                    if (next < tiles)\n"
         "                        load_tile(next, next % RING, SPREAD ? kk : 0, SPREAD ? KSTEPS : 1);\n"
         "                    if (!SPREAD || kk == KSTEPS - 1)\n"
         "                        copy_commit();\n"
         "                }\n")
MMA = "                mma_all(kk % 2);\n"
WAIT = ("                } else {\n"
        "                    copy_wait<RING - 2>();\n"
        "                    __syncthreads();\n"
        "                    if (kt + 1 < tiles)\n")
COPY = "if (next < tiles) load_tile(next, next % RING, 0, 1); copy_commit();"
VARIANTS = {
    "after": [(ISSUE, ""), (MMA, MMA + f"                if (kk == 0) {{ {COPY} }}\n")],
    "last": [(ISSUE, ""), (WAIT, WAIT.replace("                } else {\n", f"                }} else {{\n                    {COPY}\n"))],
}


def main():
    gpu.cuda()
    with tempfile.TemporaryDirectory() as tmp:
        units = tc_inner_units(Path(tmp), VARIANTS)
        for p in ("FP16", "BF16"):
            check_and_time(tc_inner_variants(units, p), p)

if __name__ == "__main__":
    main()
