# Issue #18: the last step's epilogue keeps the tensor cores idle for 2.7 us of every 44 us tile at 4096^3, and only
# 0.8 us of that is the stores themselves: with the copy engine's stores left out it still takes 1.9 us
# (results/stagger-h200.txt). Starting half the clusters late (so that fewer blocks store at once) only lost time. So
# the epilogue must overlap tensor work. Both consumers share every stage, and each holds 64 x 256 accumulators in
# 128 registers: no room for a second set. But the right half of a consumer's tile (columns 128-255, registers
# 64-127 of the m64n256 layout) need not leave before the next tile's left half starts: here a consumer stores the
# left half at the tile's end, starts the next tile's first P K-tiles on the left half alone (m64n128k16 into
# registers 0-63; the stages are already full), stores the owed right half while those run, then does the same
# P K-tiles on the right half (m64n128k16 into registers 64-127, B's rows 128-255) and goes on with both halves.
# Up to half the epilogue then overlaps wgmma, while the ring holds the P stages until the right half has read them.
# P = 1, 2, 3 (4, the whole ring, was slower in the first run). Checked at awkward sizes (one K-tile,
# edge tiles, N past the left half), timed interleaved with cuBLAS and the last step at the four sizes of the goal,
# and with --once launched for Nsight Compute.
# Run on a Hopper GPU with CuPy:   timeout 400 python3 drafts/09_split_epilogue_experiment.py [--once | --confirm 4]
import argparse, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from drafts.variants import WS_CONSUMER, WS_END, WS_STORE, last_step_experiment

ZERO_AND_LOOP = """#pragma unroll
            for (int i = 0; i < 128; ++i)
                d[i] = 0.0f;
            for (int kt = kb; kt < ke; ++kt, ++it) {
"""

# One m64n128k16 K-tile on half h of the accumulators (B's rows 128 h .. 128 h + 127).
HALF_K_TILE = """                    if (q == 0)                                      // the first sets the half, the rest add
                        wgmma_half<F16, true>({half}, descriptor_128b(a_tiles + s * A_STAGE + c * 64 * 128),
                                              descriptor_128b(b_tiles + s * B_STAGE + {row} * 128));
                    else
                        wgmma_half<F16, false>({half}, descriptor_128b(a_tiles + s * A_STAGE + c * 64 * 128),
                                               descriptor_128b(b_tiles + s * B_STAGE + {row} * 128));
#pragma unroll
                    for (int kk = 1; kk < WS_BK / 16; ++kk)
                        wgmma_half<F16, false>({half}, descriptor_128b(a_tiles + s * A_STAGE + c * 64 * 128) + 2 * kk,
                                               descriptor_128b(b_tiles + s * B_STAGE + {row} * 128) + 2 * kk);
                    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
"""


# D = A * B, the accumulators' old values ignored (scale-d 0) and declared written only ("=f"): with zeros assigned
# in C++ instead, the compiler shares one zero register among the halves' accumulators and ptxas then waits for the
# left half's wgmma before the right half's stores (C7517), which is the overlap this experiment is about.
# (nvcc 13.0.88; the first run, results/split-epilogue-h200.txt, wrote the owed half with 4-byte stores instead.)
SET = ("// [store_d]\n", """#define ACC8W(i) "=f"(d[i]), "=f"(d[i + 1]), "=f"(d[i + 2]), "=f"(d[i + 3]), "=f"(d[i + 4]), "=f"(d[i + 5]), \\
                 "=f"(d[i + 6]), "=f"(d[i + 7])
#define ACC64W ACC8W(0), ACC8W(8), ACC8W(16), ACC8W(24), ACC8W(32), ACC8W(40), ACC8W(48), ACC8W(56)
template <bool F16, bool SET>
__device__ __forceinline__ void wgmma_half(float (&d)[64], uint64_t desc_a, uint64_t desc_b)
{
    if constexpr (!SET)
        wgmma_64x128x16<F16>(d, desc_a, desc_b);
    else if constexpr (F16)
        asm volatile("{\\n wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {" REGS64 "}, %64, %65, 0, 1, 1, 0, 0;\\n}"
                     : ACC64W : "l"(desc_a), "l"(desc_b));
    else
        asm volatile("{\\n wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" REGS64 "}, %64, %65, 0, 1, 1, 0, 0;\\n}"
                     : ACC64W : "l"(desc_a), "l"(desc_b));
}
// [store_d]
""")


# With the halves, the main loop's m64n256k16 becomes two m64n128k16 (left, right): one 128-register m64n256 operand
# and 64-register halves of it make ptxas copy and serialise every wgmma (C7511, "insufficient register resources").
MAIN = """                    wgmma_64x256x16<F16>(d, descriptor_128b(a_tiles + s * A_STAGE + c * 64 * 128) + 2 * kk,
                                    descriptor_128b(b_tiles + s * B_STAGE) + 2 * kk);
                asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
                if (OVERLAP) {"""
MAIN_HALVES = """                    if (SPLIT) {
                        wgmma_half<F16, false>(lo, descriptor_128b(a_tiles + s * A_STAGE + c * 64 * 128) + 2 * kk,
                                               descriptor_128b(b_tiles + s * B_STAGE) + 2 * kk);
                        wgmma_half<F16, false>(hi, descriptor_128b(a_tiles + s * A_STAGE + c * 64 * 128) + 2 * kk,
                                               descriptor_128b(b_tiles + s * B_STAGE + 128 * 128) + 2 * kk);
                    } else
                        wgmma_64x256x16<F16>(d, descriptor_128b(a_tiles + s * A_STAGE + c * 64 * 128) + 2 * kk,
                                        descriptor_128b(b_tiles + s * B_STAGE) + 2 * kk);
                asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
                if (OVERLAP) {"""


def split(p: int, epilogue: bool = True) -> list:
    """ws_gemm's copy-engine epilogue (no stream-K) split in halves, the right half stored under the next tile's
    first ``p`` K-tiles of the left half; without ``epilogue`` only the main loop in halves (the control)."""
    hold = WS_CONSUMER + """        constexpr bool SPLIT = STORE == 0 && !STREAMK;              // experiment: split epilogue
        float (&lo)[64] = reinterpret_cast<float (&)[64]>(d[0]);
        float (&hi)[64] = reinterpret_cast<float (&)[64]>(d[64]);
"""
    owed = f"""        constexpr int SPLIT_TILES = {p};
        unsigned char* const split_buffers = b_tiles + WS_STAGES * B_STAGE + c * 2 * C_BOX_BYTES;
        bool owed = false;                                           // the tile before's right half, in hi
        int owed_m0 = 0, owed_n0 = 0;
"""
    loop = f"""            if (SPLIT && owed && ke - kb < SPLIT_TILES) {{            // too few K-tiles to hide it under
                store_d_tma(hi, c_map, split_buffers, c, owed_m0 + 64 * c, owed_n0 + 128);
                owed = false;
            }}
            if (!(SPLIT && owed)) {{
#pragma unroll
                for (int i = 0; i < 128; ++i)
                    d[i] = 0.0f;
            }}
            int kt = kb;
            if (SPLIT && owed) {{
#pragma unroll
                for (int q = 0; q < SPLIT_TILES; ++q) {{                // the left half of the first K-tiles
                    const int s = (it + q) % WS_STAGES;
                    barrier_wait(&full[s], ((it + q) / WS_STAGES) & 1);
                    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
{HALF_K_TILE.format(half="lo", row=0)}                }}
                store_d_tma(hi, c_map, split_buffers, c, owed_m0 + 64 * c, owed_n0 + 128);   // under those wgmma
#pragma unroll
                for (int q = 0; q < SPLIT_TILES; ++q, ++it, ++kt) {{    // then their right half
                    const int s = it % WS_STAGES;
                    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
{HALF_K_TILE.format(half="hi", row=128)}                    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
                    if (q > 0 && threadIdx.x % 32 == 0)
                        release<CLUSTER>(&empty[(it - 1) % WS_STAGES], rank);
                }}
                owed = false;
            }}
            for (; kt < ke; ++kt, ++it) {{
"""
    tail = """            } else if (SPLIT) {                                      // the left half now, the right one later
                store_d_tma(lo, c_map, buffers, c, m0 + 64 * c, n0);
                owed = true;
                owed_m0 = m0;
                owed_n0 = n0;
""" + WS_STORE
    end = """        if (SPLIT && owed)                                           // the last tile's right half
            store_d_tma(hi, c_map, split_buffers, c, owed_m0 + 64 * c, owed_n0 + 128);
""" + WS_END
    if not epilogue:
        return [SET, (MAIN, MAIN_HALVES), (WS_CONSUMER, hold)]
    return [SET, (MAIN, MAIN_HALVES), (WS_CONSUMER, hold + owed), (ZERO_AND_LOOP, loop), (WS_STORE, tail), (WS_END, end)]


EDITS = {"halves": split(2, epilogue=False), "split1": split(1), "split2": split(2), "split3": split(3)}
CHECK = ((1, 1, 1), (300, 520, 1234), (1000, 2000, 777), (8192, 8192, 1024), (512, 1024, 64), (700, 200, 100),
         (2048, 4096, 192))
SIZES = ((4096, 4096, 4096), (8192, 8192, 8192), (2048, 2048, 2048), (6144, 4096, 2048))


def confirm(seconds: float) -> None:
    """The last step and split2 only: more rounds interleaved with cuBLAS, then each alone for ``seconds`` at the
    clock its power leaves it (cuBLAS first and last), at 4096^3 and 8192^3."""
    import tempfile
    from gemmlab import gpu
    from drafts.variants import cuda_and_cupy, interleaved_then_alone, last_step_variants
    gpu.cuda()
    cp = cuda_and_cupy()
    with tempfile.TemporaryDirectory() as tmp:
        ks = last_step_variants(Path(tmp), {"split2": EDITS["split2"]})
        interleaved_then_alone(cp, ks, (4096, 8192), seconds, cublas_twice=True)


def main(once: bool):
    last_step_experiment(EDITS, CHECK, SIZES, once, check_timed=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--once", action="store_true", help="each kernel launched twice at 4096^3, for ncu")
    parser.add_argument("--confirm", type=float, metavar="SECONDS",
                        help="split2 against the last step only, interleaved and alone for SECONDS each")
    args = parser.parse_args()
    if args.confirm:
        confirm(args.confirm)
    else:
        main(args.once)
