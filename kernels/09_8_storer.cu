// Chapter 9, step 8 (hopper_storer): hopper_tmastore's kernel, C = A * B for BF16 or FP16 inputs, 128 x 256 tiles.
// Changed from hopper_tmastore: two idle warps of the producer warpgroup issue the copy engine's stores; a consumer
// hands each box over (store_d_handed) and waits only until a buffer is free.

#include "09_hopper.cuh"

// [gemm_storer]
// hopper_tmastore's kernel with the stores issued by warps 1 and 2 of the producer warpgroup, idle until now: each
// takes one consumer's boxes (storer_tile), so that no consumer thread issues or waits for a store. Parameters, grid,
// threads and shared memory as hopper_tmastore's.
template <bool F16>
__device__ __forceinline__ void storer_gemm(const CUtensorMap* a_map, const CUtensorMap* bt_map,
                                            const CUtensorMap* c_map, int M, int N, int K)
{
    constexpr int BM = 128, BN = 256, BK = 64, STAGES = 4, CONSUMERS = 2;
    constexpr int A_STAGE = BM * BK * 2, B_STAGE = BN * BK * 2;
    extern __shared__ unsigned char ring_raw[];
    unsigned char* base = ring_raw + ((1024 - tma_smem(ring_raw) % 1024) % 1024);
    unsigned char* a_tiles = base;                                   // STAGES tiles of 128 rows x 128 bytes
    unsigned char* b_tiles = base + STAGES * A_STAGE;                // STAGES tiles of 256 rows x 128 bytes
    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
    const int group = threadIdx.x / 128, k_tiles = (K + BK - 1) / BK;
    // The work is counted in pairs of tiles, one per block of a cluster (a pair past the last row of tiles
    // computes zeros that it never stores); the cluster walks them as a block did.
    const unsigned rank = cluster_rank();
    const int tiles_m = (M + 2 * BM - 1) / (2 * BM), tiles_n = (N + BN - 1) / BN, tiles = tiles_m * tiles_n;
    TileWalk walk{static_cast<int>(blockIdx.x / 2), static_cast<int>(gridDim.x / 2), tiles};
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            barrier_init_count(&full[s], 1);                         // the producer's arrival (and the bytes)
            barrier_init_count(&empty[s], CONSUMERS * 4 * 2);        // every consumer warp of the cluster
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    cluster_sync();                  // both blocks' barriers exist before either block's copies name them

    // Both sides count the K-tiles they have passed over all of this block's tiles: stage it % STAGES, and
    // it / STAGES is how many times the ring went round (the parity of the phase to wait for).
    int t;
    if (group == 0) {                                                // the producer warpgroup
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x == 0) {
            int it = 0;
            while (walk.next(t)) {
                const int2 tile = ws_tile(t, tiles_m, tiles_n);      // in groups of rows, for the L2
                const int m0 = (tile.x * 2 + rank) * BM, n0 = tile.y * BN;
                for (int kt = 0; kt < k_tiles; ++kt, ++it) {
                    const int s = it % STAGES;
                    if (it >= STAGES)                                // the consumers released the last round
                        barrier_wait(&empty[s], (it / STAGES - 1) & 1);
                    barrier_expect(&full[s], A_STAGE + B_STAGE);
                    tma_load_2d(a_tiles + s * A_STAGE, a_map, kt * BK, m0, &full[s]);
                    const int half = BN / 2;                         // this block's half of B, into both
                    tma_load_2d_both(b_tiles + s * B_STAGE + rank * half * 128, bt_map, kt * BK, n0 + rank * half,
                                     &full[s]);
                }
            }
        } else if (threadIdx.x / 32 == 1 || threadIdx.x / 32 == 2) {  // new: a storer warp, for consumer 0 or 1
            const bool lead = threadIdx.x % 32 == 0;
            const int c = threadIdx.x / 32 - 1;
            unsigned char* const buffers = b_tiles + STAGES * B_STAGE + c * 2 * C_BOX_BYTES;
            while (walk.next(t)) {                                   // the consumer's tiles: where each box goes
                const int2 tile = ws_tile(t, tiles_m, tiles_n);
                storer_tile(c_map, buffers, c, (tile.x * 2 + rank) * BM + 64 * c, tile.y * BN);
            }
            if (lead)                                                // every box has left before the block does
                asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
        }
    } else {                                                         // a consumer warpgroup: 64 rows of the tile
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        const int c = group - 1;
        float d[128];
        unsigned char* const buffers = b_tiles + STAGES * B_STAGE + c * 2 * C_BOX_BYTES;   // behind the ring
        int it = 0;
        while (walk.next(t)) {                                       // (the storer knows where the tile goes)
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
                if (kt > 0 && threadIdx.x % 32 == 0)                 // to both blocks' empty barriers
                    release_both(&empty[(it - 1) % STAGES], rank);
            }
            asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");     // then the last K-tile's
            if (k_tiles > 0 && threadIdx.x % 32 == 0)
                release_both(&empty[(it - 1) % STAGES], rank);
            // The accumulators are final here: keep the compiler from moving the epilogue's reads of them above the
            // last wait (ptxas would then serialise every wgmma to be safe).
#pragma unroll
            for (int i = 0; i < 128; ++i)
                asm volatile("" : "+f"(d[i])::"memory");
            store_d_handed(d, buffers, c);                           // new: the boxes handed to the storer warp
        }
    }
    cluster_sync();                  // no block leaves while the other may still arrive on its barriers
}
// [/gemm_storer]
