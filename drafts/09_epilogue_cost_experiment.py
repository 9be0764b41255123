# Issue #18: what do the 1.9 us of the last step's epilogue consist of, once the copy engine's stores are left out
# (results/stagger-h200.txt: 2.72 us a tile with them, 1.89 without)? Per consumer warpgroup and tile: eight boxes of
# 64 x 32 FP32, each with the issuer's wait for the buffer, a warpgroup barrier, eight 8-byte stores per thread into
# shared memory, a proxy fence and a second barrier. Timing-only variants of 'nostore' (no stores handed to the copy
# engine: C is wrong and not timed) leave out the fence, the barriers or the shared-memory writes, each stamped as in
# the stagger draft (consumer 0 of every block, third launch at 4096^3). And one correct candidate, 'pairs': both
# buffers written before one fence and one barrier, their two boxes stored together, then a wait until both have been
# read (four rounds of two boxes instead of eight of one: half the fences and barriers, no writing while a box is
# read); checked, stamped, and timed interleaved with cuBLAS at 4096^3 and 8192^3.
# Run on a Hopper GPU with CuPy:   timeout 300 python3 drafts/09_epilogue_cost_experiment.py
import sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gemmlab import gpu, tma
from drafts.variants import (BOX_BARRIER, BOX_FENCE, BOX_HEAD, BOX_LOOP, cuda_and_cupy, last_step_variants, load_draft,
                             print_correct)

stagger = load_draft("09_stagger_experiment")

WRITE = ("            *reinterpret_cast<float2*>(buf + r * 128 + (((col / 4) ^ (r % 8)) * 16) + (col % 4) * 4) = "
         "make_float2(d[i], d[i + 1]);\n")
NO_FENCE = [(BOX_FENCE, "")]
NO_BARRIERS = [(BOX_HEAD + BOX_BARRIER, BOX_HEAD), (BOX_FENCE + BOX_BARRIER, BOX_FENCE)]
NO_WRITES = [(WRITE, '            asm volatile("" :: "f"(d[i]), "f"(d[i + 1]), "r"(r), "r"(col));   // experiment: no write\n')]

# 'pairs': the loop over boxes in steps of two (store_d_tma is also used for 64-register halves: 4 boxes, even too).
LOOP_HEAD = BOX_LOOP + BOX_HEAD + BOX_BARRIER + "#pragma unroll\n        for (int i = 16 * j; i < 16 * j + 16; i += 2) {\n"
PAIRS_HEAD = """    static_assert(REGS % 32 == 0, "boxes in pairs");
#pragma unroll
    for (int j0 = 0; j0 < REGS / 16; j0 += 2) {                       // experiment: two boxes per fence
        if (issuer)                                                  // both buffers have been read
            asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
        warpgroup_barrier(1 + consumer);
#pragma unroll
        for (int i = 16 * j0; i < 16 * j0 + 32; i += 2) {
            const int j = i / 16;
            unsigned char* buf = buffers + (j % 2) * C_BOX_BYTES;
"""
ISSUE_HEAD = "        if (issuer) {\n            if (ADD)"
PAIRS_ISSUE = "        if (issuer)\n#pragma unroll\n        for (int j = j0; j < j0 + 2; ++j) {\n            unsigned char* buf = buffers + (j % 2) * C_BOX_BYTES;\n            if (ADD)"
PAIRS = [(LOOP_HEAD, PAIRS_HEAD), (ISSUE_HEAD, PAIRS_ISSUE)]

NOSTORE = stagger.NO_STORE + stagger.STAMPS
EDITS = {"nostore_stamp": NOSTORE, "nofence_stamp": NOSTORE + NO_FENCE, "nobarriers_stamp": NOSTORE + NO_BARRIERS,
         "nowrites_stamp": NOSTORE + NO_WRITES, "pairs": PAIRS, "pairs_stamp": PAIRS + stagger.STAMPS,
         "stamp": stagger.STAMPS}


def main():
    gpu.cuda()
    cp = cuda_and_cupy()
    with tempfile.TemporaryDirectory() as tmp:
        ks = last_step_variants(Path(tmp), EDITS, config=tma.GEMM_TMA_STORE)
        print_correct({n: k for n, k in ks.items() if n in ("base", "pairs", "pairs_stamp", "stamp")},
                      ((1, 1, 1), (300, 520, 1234), (1000, 2000, 777), (700, 200, 100), (4096, 4096, 4096)))
        stagger.phases.stamped_then_timed(cp, ks)


if __name__ == "__main__":
    main()
