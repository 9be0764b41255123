// Chapter 9 candidate, compiled for sm_90a but not yet run on a GPU: ping-pong consumers for the persistent
// warp-specialised kernel with the copy-engine epilogue (wgmma_gemm_tmastore_* of 09_hopper.cu).
//
// In wgmma_gemm_tmastore_* both consumer warpgroups work on one 128 x 256 tile and finish it together, so the
// tensor cores idle while both write their results out. Here each consumer warpgroup owns whole 128 x 128 tiles and
// the two take turns: consumer 0 takes this block's tiles 0, 2, 4, ... and consumer 1 tiles 1, 3, 5, ...; while
// one runs the main loop of its tile, the other stores the tile it has just finished and then waits for its turn.
// The producer fills the ring in the order the consumers take the tiles, so the ring is the same single queue as in
// ws_gemm; only who empties each stage changes.
//
//   wgmma_gemm_pingpong_bf16 / _f16 (a_map, bt_map, c_map, C, M, N, K) - no cluster. a_map and bt_map in boxes of
//       128 rows x 64 columns, c_map as wgmma_gemm_tmastore_*'s (64 x 32 FP32, 128-byte swizzle); grid:
//       min(SMs, tiles of 128 x 128) blocks in one row; WS_THREADS threads, PINGPONG_SHARED bytes of dynamic shared
//       memory.
//   wgmma_gemm_pingpong2_bf16 / _f16 (same) - clusters of two blocks on rows of tiles 2i and 2i + 1 of one column,
//       each block's copy engine fetching half of the shared 128 x 64 B tile into both (bt_map in boxes of 64 x 64);
//       grid: an even number of blocks, at most twice the clusters that fit at once.

#include "../kernels/09_hopper.cu"

// [pingpong_shapes]
// A consumer's tile is 128 x 128: per 16-deep step two wgmma m64n128k16 (rows 0-63 and 64-127 of the tile), 2 x 64
// FP32 accumulators per thread, as many as one m64n256k16 in ws_gemm. A stage is 128 x 64 of A and 128 x 64 of Bt,
// 32 KiB, so 6 stages (192 KiB) fit beside the two consumers' store buffers (2 x 2 x 8 KiB): 1 KiB for alignment +
// 192 KiB + 32 KiB = 230,400 bytes, what wgmma_gemm_tmastore_* asks for; with the 1 KiB of static shared memory
// ptxas reports, 231,424 of the 232,448 bytes a block may have.
#define PP_BM 128
#define PP_BN 128
#define PP_STAGES 6
#define PP_A_STAGE (PP_BM * WS_BK * 2)
#define PP_B_STAGE (PP_BN * WS_BK * 2)
#define PINGPONG_SHARED (1024 + PP_STAGES * (PP_A_STAGE + PP_B_STAGE) + WS_CONSUMERS * 2 * C_BOX_BYTES)
static_assert(PINGPONG_SHARED + 1024 <= 232448, "ring, store buffers and static shared memory within 227 KiB");
static_assert(WS_CONSUMERS == 2, "two consumers take turns");

// D (128 x 128, two m64n128 halves) += A (128 x 16) * B (16 x 128). The lower half's rows of A start 64 rows (8 KiB,
// a whole number of the swizzle's 1024-byte periods) further into the stage, so the same descriptor layout holds.
template <bool F16>
__device__ __forceinline__ void wgmma_128x128x16(float (&d)[2][64], const unsigned char* a, const unsigned char* b, int kk)
{
    wgmma_64x128x16<F16>(d[0], descriptor_128b(a) + 2 * kk, descriptor_128b(b) + 2 * kk);
    wgmma_64x128x16<F16>(d[1], descriptor_128b(a + 64 * 128) + 2 * kk, descriptor_128b(b) + 2 * kk);
}
// [/pingpong_shapes]

// A wait that can give up: -DPINGPONG_WATCHDOG=1 (the experiment's --probe) traps after a second, so that a mistake
// in the turn-taking ends the launch with an error instead of hanging it. Off by default: no cost when timed.
#ifndef PINGPONG_WATCHDOG
#define PINGPONG_WATCHDOG 0
#endif
__device__ __forceinline__ void pp_wait(uint64_t* bar, unsigned parity)
{
    if (!PINGPONG_WATCHDOG) {
        barrier_wait(bar, parity);
        return;
    }
    unsigned long long since, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(since));
    for (unsigned done = 0; !done;) {
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                     : "=r"(done) : "r"(tma_smem(bar)), "r"(parity) : "memory");
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        if (!done && now - since > 1000000000ull)
            __trap();
    }
}

// [gemm_pingpong]
// The ring: the producer counts K-tiles over all of the block's tiles (it), as in ws_gemm; tile i of the block
// holds it = i k .. i k + k - 1 (k K-tiles per tile), stage it % PP_STAGES, fill it / PP_STAGES of that stage. Only
// the consumer of tile i (i % 2) waits for and releases those fills, so a stage's empty barrier counts the 4 warps of
// one consumer (of each block, in a cluster), not of both.
//
// The turns: turn[c] completes its phase j when consumer c has issued the whole main loop of its j-th tile (block
// tile 2j + c; the 4 warps arrive). Before its tile i > 0 a consumer waits for the phase of tile i - 1's main loop:
// turn[1 - c], phase (i - 1) / 2. So the main loops run in the block's tile order, one at a time, and each consumer
// stores its tile (wait_group 0, the last release, store_d_tma) while the other computes.
//
// Why it cannot deadlock, for any number of tiles per block (0, 1, odd, even):
//   - A consumer waits for the turn only on the main loop of the tile just before its own, never on an epilogue or
//     a later tile; the main loop of tile 0 waits for no turn. Between its last full-barrier wait and its arrival
//     on turn[c], a consumer only issues wgmma and waits for its own earlier ones (the tensor cores, not another
//     thread), so the arrival follows once its fills land.
//   - The fills land in it order, and fill it needs only the release of fill it - PP_STAGES: a tile no later than
//     the one being computed, whose consumer releases every stage of it without waiting for anyone (the last one
//     after the turn's arrival, before its epilogue). By induction on it, every fill lands and every main loop ends.
//   - With no tile, nothing waits; with one, consumer 1 has none and consumer 0 arrives on turn[0] with no one
//     waiting (an mbarrier phase may complete unobserved); with an odd count the last arrival is likewise unread.
// Why the phases stay consistent: a parity wait cannot tell phase n from n - 2 or n + 2, so each wait must happen
// while the barrier has completed exactly n or n + 1 phases (not n - 1 or fewer: it would pass early; not n + 2:
// it would wait for a phase that already went by).
//   - full[s], a consumer waiting for fill n (it = s + n PP_STAGES): fill n + 1 cannot land before this consumer
//     releases fill n; fill n - 1 (it - PP_STAGES) belongs to this tile or an earlier one, and every earlier main
//     loop ended (the turn: each of its 4 warps arrives after its own last wait) after waiting for its fills, so
//     fill n - 1 has landed. Without the turn this breaks: at k = 64 consumer 1's first K-tile is it = 64, stage 4,
//     fill 10, parity 0, and the wait passes as soon as fill 0 of stage 4 (consumer 0's) lands. The turn is needed
//     for correctness, not only for speed.
//   - empty[s], the producer before fill n: release n - 1 comes before fill n is issued, release n after it.
//   - turn[1 - c], consumer c waiting for phase j: the other consumer cannot end the main loop of its tile j + 1
//     (block tile i + 1) before c ends the main loop of tile i; and its tile j - 1 (i - 3) ended before c's tile
//     i - 2, which c has done.
// In a cluster, both blocks walk the same tiles, so fill n of stage s belongs to the same consumer c in both; a
// block's copy engine writes half of each stage's B into the other block too, so a stage is empty once consumer c
// of both blocks released it (4 x 2 arrivals), as in ws_gemm, and the turns stay within a block.
// drafts/09_pingpong_experiment.py --model runs this protocol (mbarriers with phases, copies and tensor cores that
// finish late) for many tile counts, K-tiles per tile, stage counts and both cluster sizes and asserts the above.
template <bool F16, int CLUSTER>
__device__ __forceinline__ void pingpong_gemm(const CUtensorMap* a_map, const CUtensorMap* bt_map,
                                              const CUtensorMap* c_map, int M, int N, int K)
{
    extern __shared__ unsigned char ring_raw[];
    unsigned char* base = ring_raw + ((1024 - tma_smem(ring_raw) % 1024) % 1024);
    unsigned char* a_tiles = base;                                   // PP_STAGES tiles of 128 rows x 128 bytes
    unsigned char* b_tiles = base + PP_STAGES * PP_A_STAGE;          // PP_STAGES tiles of 128 rows x 128 bytes
    unsigned char* boxes = b_tiles + PP_STAGES * PP_B_STAGE;         // two 8 KiB store buffers per consumer
    __shared__ __align__(8) uint64_t full[PP_STAGES], empty[PP_STAGES], turn[WS_CONSUMERS];
    static_assert(CLUSTER == 1 || CLUSTER == 2, "no cluster, or clusters of two");
    const int group = threadIdx.x / 128, k_tiles = (K + WS_BK - 1) / WS_BK;
    const unsigned rank = CLUSTER > 1 ? cluster_rank() : 0;
    const int tiles_m = (M + PP_BM * CLUSTER - 1) / (PP_BM * CLUSTER), tiles_n = (N + PP_BN - 1) / PP_BN;
    const int tiles = tiles_m * tiles_n;
    const int first = blockIdx.x / CLUSTER, step = gridDim.x / CLUSTER;
    if (threadIdx.x == 0) {
        for (int s = 0; s < PP_STAGES; ++s) {
            barrier_init_count(&full[s], 1);
            barrier_init_count(&empty[s], 4 * CLUSTER);              // the 4 warps of one consumer, of each block
        }
        for (int c = 0; c < WS_CONSUMERS; ++c)
            barrier_init_count(&turn[c], 4);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    if (CLUSTER > 1)
        cluster_sync();
    else
        __syncthreads();

    if (group == 0) {                                                // the producer warpgroup
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x == 0) {
            int it = 0;
            for (int t = first; t < tiles; t += step) {
                const int2 tile = ws_tile<true>(t, tiles_m, tiles_n);
                const int m0 = (tile.x * CLUSTER + rank) * PP_BM, n0 = tile.y * PP_BN;
                for (int kt = 0; kt < k_tiles; ++kt, ++it) {
                    const int s = it % PP_STAGES;
                    if (it >= PP_STAGES)
                        pp_wait(&empty[s], (it / PP_STAGES - 1) & 1);
                    barrier_expect(&full[s], PP_A_STAGE + PP_B_STAGE);
                    tma_load_2d(a_tiles + s * PP_A_STAGE, a_map, kt * WS_BK, m0, &full[s]);
                    if (CLUSTER == 1) {
                        tma_load_2d(b_tiles + s * PP_B_STAGE, bt_map, kt * WS_BK, n0, &full[s]);
                    } else {                                         // this block's half of B, into both blocks
                        const int half = PP_BN / 2;
                        tma_load_2d_both(b_tiles + s * PP_B_STAGE + rank * half * 128, bt_map, kt * WS_BK,
                                         n0 + rank * half, &full[s]);
                    }
                }
            }
        }
    } else {                                                         // a consumer warpgroup: every other tile
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        const int c = group - 1;
        const bool lead = threadIdx.x % 32 == 0;
        float d[2][64];
        for (int i = c, t = first + c * step; t < tiles; i += WS_CONSUMERS, t += WS_CONSUMERS * step) {
            const int2 tile = ws_tile<true>(t, tiles_m, tiles_n);
            const int m0 = (tile.x * CLUSTER + rank) * PP_BM, n0 = tile.y * PP_BN;
#pragma unroll
            for (int h = 0; h < 2; ++h)
#pragma unroll
                for (int r = 0; r < 64; ++r)
                    d[h][r] = 0.0f;
            if (i > 0)                                               // tile i - 1's main loop is issued
                pp_wait(&turn[1 - c], ((i - 1) / 2) & 1);
            int it = i * k_tiles;
            for (int kt = 0; kt < k_tiles; ++kt, ++it) {
                const int s = it % PP_STAGES;
                pp_wait(&full[s], (it / PP_STAGES) & 1);
                asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
                for (int kk = 0; kk < WS_BK / 16; ++kk)
                    wgmma_128x128x16<F16>(d, a_tiles + s * PP_A_STAGE, b_tiles + s * PP_B_STAGE, kk);
                asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
                asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");     // the K-tile before is done
                if (kt > 0 && lead)
                    release<CLUSTER>(&empty[(it - 1) % PP_STAGES], rank);
            }
            if (lead)                                                // the other consumer's turn: its wgmma queue
                barrier_arrive(&turn[c]);                            // behind this tile's last ones
            asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
            if (k_tiles > 0 && lead)
                release<CLUSTER>(&empty[(it - 1) % PP_STAGES], rank);
            // Final here: keep the epilogue's reads below the last wait (else ptxas serialises every wgmma).
#pragma unroll
            for (int h = 0; h < 2; ++h)
#pragma unroll
                for (int r = 0; r < 64; ++r)
                    asm volatile("" : "+f"(d[h][r])::"memory");
            // Each half is a 64 x 128 wgmma result, the layout store_d_tma reads (4 boxes of 32 columns each); 8
            // boxes per tile, an even number, so the two buffers keep alternating across halves and tiles.
            store_d_tma(d[0], c_map, boxes + c * 2 * C_BOX_BYTES, c, m0, n0);
            store_d_tma(d[1], c_map, boxes + c * 2 * C_BOX_BYTES, c, m0 + 64, n0);
        }
        if (threadIdx.x % 128 == 0)                                  // every box has left before the block does
            asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
    if (CLUSTER > 1)
        cluster_sync();              // no block leaves while the other may still arrive on its barriers
}
// [/gemm_pingpong]

extern "C" __global__ void __launch_bounds__(WS_THREADS, 1)
wgmma_gemm_pingpong_bf16(GEMM_TMA_STORE_PARAMS) { pingpong_gemm<false, 1>(&a_map, &bt_map, &c_map, M, N, K); }
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1)
wgmma_gemm_pingpong_f16(GEMM_TMA_STORE_PARAMS) { pingpong_gemm<true, 1>(&a_map, &bt_map, &c_map, M, N, K); }
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1) __cluster_dims__(2, 1, 1)
wgmma_gemm_pingpong2_bf16(GEMM_TMA_STORE_PARAMS) { pingpong_gemm<false, 2>(&a_map, &bt_map, &c_map, M, N, K); }
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1) __cluster_dims__(2, 1, 1)
wgmma_gemm_pingpong2_f16(GEMM_TMA_STORE_PARAMS) { pingpong_gemm<true, 2>(&a_map, &bt_map, &c_map, M, N, K); }
