// Chapter 9, step 3 (hopper_overlap): hopper_ring's kernel, C = A * B for BF16 or FP16 inputs, 128 x 256 tiles.
// Changed from hopper_ring: a consumer hands a stage back once the next K-tile's wgmma are queued behind it, so the
// tensor cores never wait while a stage goes back to the producer.

#include "09_hopper.cuh"

// [gemm_overlap]
// hopper_ring's kernel, but a consumer waits for the wgmma of the K-tile before (wait_group 1), not of this one
// (wait_group 0), and then hands the stage of the K-tile before back: the tensor cores always have the next K-tile's
// work queued. Grid, threads and shared memory as hopper_ring's.
template <bool F16>
__device__ __forceinline__ void overlap_gemm(const CUtensorMap* a_map, const CUtensorMap* bt_map,
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
    // The tiles this block computes: one, blockIdx.y * gridDim.x + blockIdx.x (the grid has a block per tile of C).
    TileWalk walk{static_cast<int>(blockIdx.y * gridDim.x + blockIdx.x), tiles, tiles};
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            barrier_init_count(&full[s], 1);                         // the producer's arrival (and the bytes)
            barrier_init_count(&empty[s], CONSUMERS * 4);            // every consumer warp is done
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    // Both sides count the K-tiles they have passed: stage it % STAGES, and it / STAGES is how many times the ring
    // went round (the parity of the phase to wait for).
    int t;
    if (group == 0) {                                                // the producer warpgroup
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x == 0) {
            int it = 0;
            while (walk.next(t)) {
                const int m0 = t / tiles_n * BM, n0 = t % tiles_n * BN;
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
            const int m0 = t / tiles_n * BM, n0 = t % tiles_n * BN;
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
                // New: wait for the K-tile before only and hand its stage back, while this one's wgmma run.
                asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
                if (kt > 0 && threadIdx.x % 32 == 0)
                    barrier_arrive(&empty[(it - 1) % STAGES]);
            }
            asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");     // new: then the last K-tile's
            if (k_tiles > 0 && threadIdx.x % 32 == 0)
                barrier_arrive(&empty[(it - 1) % STAGES]);
            // The accumulators are final here: keep the compiler from moving the epilogue's reads of them above the
            // last wait (ptxas would then serialise every wgmma to be safe).
#pragma unroll
            for (int i = 0; i < 128; ++i)
                asm volatile("" : "+f"(d[i])::"memory");
            store_d(d, C, M, N, m0 + 64 * c, n0);
        }
    }
}
// [/gemm_overlap]
