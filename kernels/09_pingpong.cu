// Chapter 9, beside the ladder (hopper_pingpong): C = A * B for BF16 or FP16 inputs, hopper_tmastore's pieces in
// another schedule: each consumer warpgroup owns whole 128 x 128 tiles and the two take turns at the tensor cores, so
// that one stores its tile through the copy engine while the other computes. No cluster; a ring of 6 stages.

#include "09_hopper.cuh"

// [gemm_pingpong]
// D (128 x 128, two m64n128 halves) += A (128 x 16) * B (16 x 128). The second half's rows of A start 64 rows (8 KiB,
// whole periods of the swizzle) further into the stage, so the same descriptor layout holds.
template <bool F16>
__device__ __forceinline__ void wgmma_128x128x16(float (&d)[2][64], const unsigned char* a, const unsigned char* b,
                                                 int kk)
{
    wgmma_64x128x16<F16>(d[0], descriptor_128b(a) + 2 * kk, descriptor_128b(b) + 2 * kk);
    wgmma_64x128x16<F16>(d[1], descriptor_128b(a + 64 * 128) + 2 * kk, descriptor_128b(b) + 2 * kk);
}

// Ping-pong consumers. In hopper_tmastore both consumer warpgroups finish a 128 x 256 tile together and both store
// it while the tensor cores wait. Here each consumer owns whole 128 x 128 tiles (two wgmma m64n128k16 per 16-deep
// step, 128 accumulators per thread as before): consumer 0 takes the block's tiles 0, 2, 4, ..., consumer 1 tiles
// 1, 3, 5, ..., and while one runs the main loop of its tile the other stores the tile it has just finished. The
// producer fills the ring in the order the tiles are taken, so the ring is hopper_tmastore's single queue; only who
// empties a stage changes.
//
// The turns: turn[c] completes its phase j when consumer c has issued the whole main loop of its j-th tile (the
// block's tile 2j + c; its 4 warps arrive). Before its tile i > 0 a consumer waits for tile i - 1's main loop:
// turn[1 - c], phase (i - 1) / 2. The main loops thus run one at a time, in the block's tile order. The turns are
// needed for correctness, not only for speed: a parity wait cannot tell phase n from n - 2, and without them consumer
// 1 could wait for stage s's fill n while fill n - 1 (consumer 0's, not yet landed) is the one in flight; with 64
// K-tiles per tile and 6 stages, consumer 1's first wait (K-tile 64, stage 4, parity 0) would pass as soon as
// consumer 0's first fill of stage 4 landed. No deadlock: a consumer waits only for the main loop of the tile just
// before its own, which waits for nothing but its fills, and each fill needs only the release of a fill six earlier,
// of a tile whose main loop has ended or is running. With one tile per block, consumer 1 has none and consumer 0's
// arrival on turn[0] is never waited for.
// tests/test_pingpong_protocol.py runs this protocol under random schedules and shows it failing without the turns.
// Grid: min(SMs, tiles of C) blocks in one row; a_map and bt_map in boxes of 128 x 64, c_map as hopper_tmastore's;
// 384 threads, 1024 + 6 * (128 + 128) * 128 + 2 * 2 * 8192 bytes of dynamic shared memory.
template <bool F16>
__device__ __forceinline__ void pingpong_gemm(const CUtensorMap* a_map, const CUtensorMap* bt_map,
                                              const CUtensorMap* c_map, int M, int N, int K)
{
    constexpr int BM = 128, BN = 128, BK = 64, STAGES = 6, CONSUMERS = 2;
    constexpr int A_STAGE = BM * BK * 2, B_STAGE = BN * BK * 2;
    // 6 stages of 32 KiB beside the consumers' store buffers: as much as hopper_tmastore asks for.
    static_assert(1024 + STAGES * (A_STAGE + B_STAGE) + CONSUMERS * 2 * C_BOX_BYTES + 1024 <= 232448,
                  "ring, store buffers and static shared memory within 227 KiB");
    extern __shared__ unsigned char ring_raw[];
    unsigned char* base = ring_raw + ((1024 - tma_smem(ring_raw) % 1024) % 1024);
    unsigned char* a_tiles = base;                                   // STAGES tiles of 128 rows x 128 bytes
    unsigned char* b_tiles = base + STAGES * A_STAGE;                // STAGES tiles of 128 rows x 128 bytes
    unsigned char* boxes = b_tiles + STAGES * B_STAGE;               // two 8 KiB store buffers per consumer
    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES], turn[CONSUMERS];
    const int group = threadIdx.x / 128, k_tiles = (K + BK - 1) / BK;
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, tiles = tiles_m * tiles_n;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            barrier_init_count(&full[s], 1);
            barrier_init_count(&empty[s], 4);                        // the 4 warps of the stage's one consumer
        }
        for (int c = 0; c < CONSUMERS; ++c)
            barrier_init_count(&turn[c], 4);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (group == 0) {                                                // the producer warpgroup, as before
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x == 0) {
            int it = 0;
            for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
                const int2 tile = ws_tile(t, tiles_m, tiles_n);
                for (int kt = 0; kt < k_tiles; ++kt, ++it) {
                    const int s = it % STAGES;
                    if (it >= STAGES)
                        barrier_wait(&empty[s], (it / STAGES - 1) & 1);
                    barrier_expect(&full[s], A_STAGE + B_STAGE);
                    tma_load_2d(a_tiles + s * A_STAGE, a_map, kt * BK, tile.x * BM, &full[s]);
                    tma_load_2d(b_tiles + s * B_STAGE, bt_map, kt * BK, tile.y * BN, &full[s]);
                }
            }
        }
    } else {                                                         // a consumer warpgroup: every other tile
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        const int c = group - 1;
        const bool lead = threadIdx.x % 32 == 0;
        float d[2][64];
        for (int i = c, t = blockIdx.x + c * gridDim.x; t < tiles; i += 2, t += 2 * gridDim.x) {
            const int2 tile = ws_tile(t, tiles_m, tiles_n);
#pragma unroll
            for (int h = 0; h < 2; ++h)
#pragma unroll
                for (int r = 0; r < 64; ++r)
                    d[h][r] = 0.0f;
            if (i > 0)                                               // wait for tile i - 1's main loop to be issued
                barrier_wait(&turn[1 - c], ((i - 1) / 2) & 1);
            int it = i * k_tiles;
            for (int kt = 0; kt < k_tiles; ++kt, ++it) {
                const int s = it % STAGES;
                barrier_wait(&full[s], (it / STAGES) & 1);
                asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk)
                    wgmma_128x128x16<F16>(d, a_tiles + s * A_STAGE, b_tiles + s * B_STAGE, kk);
                asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
                asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");     // the K-tile before is done
                if (kt > 0 && lead)
                    barrier_arrive(&empty[(it - 1) % STAGES]);
            }
            if (lead)                                                // the other consumer's turn: its wgmma queue
                barrier_arrive(&turn[c]);                            // behind this tile's last ones
            asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
            if (k_tiles > 0 && lead)
                barrier_arrive(&empty[(it - 1) % STAGES]);
            // Final here: keep the epilogue's reads below the last wait (else ptxas serialises every wgmma).
#pragma unroll
            for (int h = 0; h < 2; ++h)
#pragma unroll
                for (int r = 0; r < 64; ++r)
                    asm volatile("" : "+f"(d[h][r])::"memory");
            // Each half is a 64 x 128 wgmma result, the layout store_d_tma reads: 8 boxes per tile, an even number,
            // so the two buffers keep alternating across halves and tiles.
            store_d_tma(d[0], c_map, boxes + c * 2 * C_BOX_BYTES, c, tile.x * BM, tile.y * BN);
            store_d_tma(d[1], c_map, boxes + c * 2 * C_BOX_BYTES, c, tile.x * BM + 64, tile.y * BN);
        }
        if (threadIdx.x % 128 == 0)                                  // every box has left before the block does
            asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}
// [/gemm_pingpong]
