# Issue #18: who issues the epilogue's copy-engine stores. In the last step one thread of each consumer warpgroup
# issues every box's store and, at the next box, fences its own writes like every thread: ptxas 13.0.88 turns each
# fence.proxy.async into MEMBAR.ALL.CTA + FENCE.VIEW.ASYNC.S (results/cublas-sass-h200.txt), and the membar of a
# thread with a bulk store still in flight may wait for more than its own shared-memory writes; the whole warpgroup
# then waits for it at the barrier. cuBLAS's epilogue has no MEMBAR and no BAR.SYNC. Variants:
#   rotate          the four warps take turns to issue (box j by lane 0 of warp j % 4; the wait for box j - 2's read
#                   by the thread that issued it), so that an issuer's last store left four boxes ago
#   storer          two warps of the producer warpgroup, idle until now, issue the stores (warp 1 for consumer 0,
#                   warp 2 for consumer 1): a consumer waits at a named barrier until its storer says the buffer is
#                   free, writes and fences, and arrives at a second barrier without waiting; its storer waits there,
#                   issues the store, then waits for the box before's read and frees that buffer. The consumers
#                   issue no bulk stores and wait for no store
#   issuer_nofence  timing only: the issuing thread skips its fence (its own writes then need not be visible to the
#                   engine: C may be wrong)
# Each also stamped (the stagger draft's stamps, third launch at 4096^3). Checked at awkward sizes, timed interleaved
# with cuBLAS at the goal's sizes.
# Run on a Hopper GPU with CuPy:   timeout 300 python3 drafts/09_storer_experiment.py [--confirm | --with-split | --alone]
# (--confirm: only the storer and the last step, 4096^3 three times, 6144x4096x2048 and 8192^3; --with-split: the
# storer with the split epilogue (P = 2), each alone and the last step, checked, the goal's sizes and 4096^3 once more;
# --alone: that pair and the last step at 4096^3 and 8192^3 interleaved, then each alone for 3 s at the power limit.)
import sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gemmlab import gpu, tma
from drafts.variants import (BOX_FENCE, BOX_HEAD, GOAL_SIZES, WS_END, WS_STORE, cuda_and_cupy, interleaved_then_alone,
                             kernel_variant, last_step_kernels, last_step_variants, load_draft, print_correct, time_against_cublas)

split, stagger = load_draft("09_split_epilogue_experiment"), load_draft("09_stagger_experiment")

ISSUE = "        if (issuer) {\n            if (ADD)"
ROTATE = [(BOX_HEAD, BOX_HEAD.replace(
              "        if (issuer)                                                  // the store that read buf last is done reading\n"
              '            asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");\n',
              "        if (threadIdx.x % 128 == 32 * ((j + 2) % 4))                 // experiment: box j - 2's issuer\n"
              '            asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");\n')),
          (ISSUE, ISSUE.replace("if (issuer)", "if (threadIdx.x % 128 == 32 * (j % 4))")),
          (WS_END, WS_END.replace("threadIdx.x % 128 == 0", "threadIdx.x % 32 == 0 "))]
NOFENCE = [(BOX_FENCE, "        if (!issuer)                                                 // experiment: timing only\n"
                       "    " + BOX_FENCE)]

# The consumer's side of the storer variant, beside store_d_tma (named barriers 3 + c: buffer free, 5 + c: written;
# 160 threads: the consumer warpgroup and its storer warp).
HANDED = r"""
template <int REGS>
__device__ __forceinline__ void store_d_handed(const float (&d)[REGS], unsigned char* buffers, int consumer)
{
    const int warp = threadIdx.x % 128 / 32, lane = threadIdx.x % 32;
#pragma unroll
    for (int j = 0; j < REGS / 16; ++j) {
        unsigned char* buf = buffers + (j % 2) * C_BOX_BYTES;
        asm volatile("bar.sync %0, 160;" ::"r"(3 + consumer) : "memory");        // the storer: buf is free
#pragma unroll
        for (int i = 16 * j; i < 16 * j + 16; i += 2) {
            const int r = 16 * warp + lane / 4 + 8 * (i % 4 / 2), col = 8 * (i / 4 - 4 * j) + 2 * (lane % 4);
            *reinterpret_cast<float2*>(buf + r * 128 + (((col / 4) ^ (r % 8)) * 16) + (col % 4) * 4) = make_float2(d[i], d[i + 1]);
        }
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("bar.arrive %0, 160;" ::"r"(5 + consumer) : "memory");      // buf is written: store it
    }
}
// [/store_d_tma]
"""
STORER_WARPS = r"""        } else if (STORE == 0 && !STREAMK && (threadIdx.x / 32 == 1 || threadIdx.x / 32 == 2)) {
            // experiment: warp 1 (2) of the producer warpgroup stores consumer 0's (1's) boxes
            const int sc = threadIdx.x / 32 - 1, lane = threadIdx.x % 32;
            unsigned char* buffers = b_tiles + WS_STAGES * B_STAGE + sc * 2 * C_BOX_BYTES;
            while (walk.next(t, kb, ke)) {
                const int2 tile = ws_tile<PERSISTENT>(t, tiles_m, tiles_n);
                const int row0 = (tile.x * CLUSTER + rank) * WS_BM + 64 * sc, col0 = tile.y * WS_BN;
                for (int j = 0; j < 8; ++j) {
                    unsigned char* buf = buffers + (j % 2) * C_BOX_BYTES;
                    if (lane == 0)                                   // box j - 2 has been read out of buf
                        asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
                    __syncwarp();
                    asm volatile("bar.arrive %0, 160;" ::"r"(3 + sc) : "memory");
                    asm volatile("bar.sync %0, 160;" ::"r"(5 + sc) : "memory");
                    if (lane == 0) {
                        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                                     ::"l"(reinterpret_cast<uint64_t>(c_map)), "r"(col0 + 32 * j), "r"(row0), "r"(tma_smem(buf))
                                     : "memory");
                        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
                    }
                }
            }
            if (lane == 0)                                           // every box has left before the block does
                asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
"""
CONSUMER_BRANCH = "        }\n    } else {                                                         // a consumer warpgroup: 64 rows of the tile\n"
STORER = [("// [/store_d_tma]\n", HANDED),
          (CONSUMER_BRANCH, STORER_WARPS + CONSUMER_BRANCH),
          (WS_STORE, "            } else if (STORE == 0 && !STREAMK)                       // experiment: the storer warp stores\n"
                     "                store_d_handed(d, buffers, c);\n" + WS_STORE.replace("} else if", "else if", 1))]
EDITS = {"rotate": ROTATE, "storer": STORER, "issuer_nofence": NOFENCE}
EDITS.update({f"{name}_stamp": stagger.STAMPS + edits for name, edits in list(EDITS.items())})
EDITS["stamp"] = stagger.STAMPS


def storer_split(p: int = 2) -> str:
    """The kernel file with the storer warps and the split epilogue of 09_split_epilogue_experiment.py (P = p): the
    consumers hand over the left half's four boxes at a tile's end and the right half's under the next tile's first
    K-tiles, the order in which the storer stores a tile's eight boxes."""
    text = kernel_variant(tma.SOURCE, *split.split(p), *STORER)
    for half, buffers, row, col in (("lo", "buffers", "m0", "n0"), ("hi", "split_buffers", "owed_m0", "owed_n0 + 128")):
        call = f"store_d_tma({half}, c_map, {buffers}, c, {row} + 64 * c, {col});"
        assert call in text, f"the split draft changed: cannot find {call}"
        text = text.replace(call, f"store_d_handed({half}, {buffers}, c);")
    return text


def main():
    gpu.cuda()
    cp = cuda_and_cupy()
    with tempfile.TemporaryDirectory() as tmp:
        if "--alone" in sys.argv:                         # the pair at the power limit, each alone for 3 s
            ks = last_step_kernels(Path(tmp), {"storer_split2": storer_split(2)}, config=tma.GEMM_TMA_STORE)
            interleaved_then_alone(cp, ks, (4096, 8192), 3.0, cublas_twice=True)
            return
        if "--with-split" in sys.argv:                    # the storer with the split epilogue, against each alone
            sources = {name: kernel_variant(tma.SOURCE, *edits)
                       for name, edits in (("storer", STORER), ("split2", split.split(2)))}
            ks = last_step_kernels(Path(tmp), {**sources, "storer_split2": storer_split(2)}, config=tma.GEMM_TMA_STORE)
            print_correct(ks, split.CHECK)
            time_against_cublas(cp, ks, GOAL_SIZES + ((4096,) * 3,))
            return
        if "--confirm" in sys.argv:                       # the storer against the last step again, 4096^3 three times
            ks = last_step_variants(Path(tmp), {"storer": STORER}, config=tma.GEMM_TMA_STORE)
            print_correct(ks, split.CHECK[:3])
            time_against_cublas(cp, ks, ((4096,) * 3,) * 3 + ((6144, 4096, 2048), (8192,) * 3))
            return
        stagger.stamped_checked_timed(cp, last_step_variants(Path(tmp), EDITS, config=tma.GEMM_TMA_STORE), split.CHECK)


if __name__ == "__main__":
    main()
