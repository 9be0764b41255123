# Issue #18: each box of the last step's epilogue costs two warpgroup barriers (0.32 us of the 1.9 us a tile that the
# epilogue takes without its stores, results/epilogue-cost-h200.txt): one before the threads write a buffer (the
# issuing thread has waited until the copy engine read the box before out of it) and one after (every thread has
# written and fenced, so the box may be stored). The first can ride on the second: if the issuing thread waits for the
# *previous* box's read just before the barrier that follows this box's writes, that one barrier also tells every
# thread that the other buffer is free for the next box. One barrier per box, and one at the start of each call (the
# tile before's last box may still be leaving from buffer 0): 9 instead of 16 per consumer and tile. The engine still
# reads box j - 1 while the threads write box j. 'onebar' alone, with the split epilogue of
# 09_split_epilogue_experiment.py (P = 2), and stamped as in the stagger draft. Checked at awkward sizes, timed
# interleaved with cuBLAS at 4096^3 (twice), 6144x4096x2048, 8192^3 and 2048^3.
# Run on a Hopper GPU with CuPy:   timeout 400 python3 drafts/09_one_barrier_experiment.py
import sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gemmlab import gpu, tma
from drafts.variants import BOX_BARRIER, BOX_FENCE, BOX_HEAD, cuda_and_cupy, last_step_variants, load_draft

split, stagger = load_draft("09_split_epilogue_experiment"), load_draft("09_stagger_experiment")

ONE_HEAD = """        unsigned char* buf = buffers + (j % 2) * C_BOX_BYTES;
        if (j == 0) {                                                // experiment: the call's one extra barrier
            if (issuer)                                              // the store that read buf last is done reading
                asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
            warpgroup_barrier(1 + consumer);
        }
"""
ONE_FENCE = BOX_FENCE + """        if (issuer)                                                  // box j - 1 is read: the other buffer is free
            asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
""" + BOX_BARRIER
ONE_BARRIER = [(BOX_HEAD + BOX_BARRIER, ONE_HEAD), (BOX_FENCE + BOX_BARRIER, ONE_FENCE)]
EDITS = {"onebar": ONE_BARRIER, "onebar_split2": ONE_BARRIER + split.EDITS["split2"],
         "onebar_stamp": ONE_BARRIER + stagger.STAMPS, "stamp": stagger.STAMPS}


def main():
    gpu.cuda()
    cp = cuda_and_cupy()
    with tempfile.TemporaryDirectory() as tmp:
        stagger.stamped_checked_timed(cp, last_step_variants(Path(tmp), EDITS, config=tma.GEMM_TMA_STORE), split.CHECK)


if __name__ == "__main__":
    main()
