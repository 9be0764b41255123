// Chapter 9, step 5 (hopper_pairs): hopper_persistent's kernel, C = A * B for BF16 or FP16 inputs, 128 x 256 tiles.
// Changed from hopper_persistent: the epilogue stores two neighbouring floats per instruction.

#include "09_hopper.cuh"

// [gemm_pairs]
// hopper_persistent's kernel with its epilogue storing two neighbouring columns per instruction (store_d_pairs): half
// the store instructions. Grid, threads and shared memory as hopper_persistent's.
template <bool F16>
__device__ __forceinline__ void pairs_gemm(const CUtensorMap* a_map, const CUtensorMap* bt_map,
                                           float* __restrict__ C, int M, int N, int K)
{
    constexpr int BM = 128, BN = 256, BK = 64, STAGES = 4, CONSUMERS = 2;
    constexpr int A_STAGE = BM * BK * 2, B_STAGE = BN * BK * 2;
    extern __shared__ unsigned char ring_raw[];
    unsigned char* base = ring_raw + ((1024 - tma_smem(ring_raw) % 1024) % 1024);
    unsigned char* a_tiles = base;                                   // STAGES tiles of 128 rows x 128 bytes
    unsigned char* b_tiles = base + STAGES * A_STAGE;                // STAGES tiles of 256 rows x 128 bytes
    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
    const int group = threadIdx.x / 128, k_tiles = (K + BK - 1) / BK;
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, tiles = tiles_m * tiles_n;
    // The tiles this block computes: blockIdx.x, blockIdx.x + gridDim.x, ... (a grid of one block per SM).
    TileWalk walk{static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x), tiles};
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            barrier_init_count(&full[s], 1);                         // the producer's arrival (and the bytes)
            barrier_init_count(&empty[s], CONSUMERS * 4);            // every consumer warp is done
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    // Both sides count the K-tiles they have passed over all of this block's tiles: stage it % STAGES, and
    // it / STAGES is how many times the ring went round (the parity of the phase to wait for).
    int t;
    if (group == 0) {                                                // the producer warpgroup
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x == 0) {
            int it = 0;
            while (walk.next(t)) {
                const int2 tile = ws_tile(t, tiles_m, tiles_n);      // in groups of rows, for the L2
                const int m0 = tile.x * BM, n0 = tile.y * BN;
                for (int kt = 0; kt < k_tiles; ++kt, ++it) {
                    const int s = it % STAGES;
                    if (it >= STAGES)                                // the consumers released the last round
                        barrier_wait(&empty[s], (it / STAGES - 1) & 1);
                    barrier_expect(&full[s], A_STAGE + B_STAGE);
                    tma_load_2d(a_tiles + s * A_STAGE, a_map, kt * BK, m0, &full[s]);
                    tma_load_2d(b_tiles + s * B_STAGE, bt_map, kt * BK, n0, &full[s]);
                }
            }
        }
    } else {                                                         // a consumer warpgroup: 64 rows of the tile
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        const int c = group - 1;
        float d[128];
        int it = 0;
        while (walk.next(t)) {
            const int2 tile = ws_tile(t, tiles_m, tiles_n);
            const int m0 = tile.x * BM, n0 = tile.y * BN;
#pragma unroll
            for (int i = 0; i < 128; ++i)
                d[i] = 0.0f;
            for (int kt = 0; kt < k_tiles; ++kt, ++it) {
                const int s = it % STAGES;
                barrier_wait(&full[s], (it / STAGES) & 1);
                asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk)
                    wgmma_64x256x16<F16>(d, descriptor_128b(a_tiles + s * A_STAGE + c * 64 * 128) + 2 * kk,
                                         descriptor_128b(b_tiles + s * B_STAGE) + 2 * kk);
                asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
                // Wait for the K-tile before only and hand its stage back, while this one's wgmma run.
                asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
                if (kt > 0 && threadIdx.x % 32 == 0)
                    barrier_arrive(&empty[(it - 1) % STAGES]);
            }
            asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");     // then the last K-tile's
            if (k_tiles > 0 && threadIdx.x % 32 == 0)
                barrier_arrive(&empty[(it - 1) % STAGES]);
            // The accumulators are final here: keep the compiler from moving the epilogue's reads of them above the
            // last wait (ptxas would then serialise every wgmma to be safe).
#pragma unroll
            for (int i = 0; i < 128; ++i)
                asm volatile("" : "+f"(d[i])::"memory");
            store_d_pairs(d, C, M, N, m0 + 64 * c, n0);                  // new: 8-byte stores
        }
    }
}
// [/gemm_pairs]
