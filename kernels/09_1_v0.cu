// Chapter 9, step 1 (hopper_v0): C (M x N, FP32) = A (M x K) * B, BF16 or FP16 inputs, B given as its transpose Bt.
// New since chapter 8: the tiles arrive by the copy engine (TMA) through tensor maps and an mbarrier, and one
// warpgroup multiplies them with wgmma; one 64 x 128 tile of C per block, one 64-deep K-tile at a time, no pipeline.

#include "09_hopper.cuh"

// [gemm_v0]
// A and Bt come through tensor maps of 64-wide boxes in the 128-byte swizzle: the copy engine's zeros outside the
// tensor handle every edge of the loads, and the stores check C's. Grid (ceil(N / 128), ceil(M / 64)), 128 threads,
// 1024 + (64 + 128) * 128 bytes of dynamic shared memory (the tiles, and room to align them to 1024 bytes).
template <bool F16>
__device__ __forceinline__ void v0_gemm(const CUtensorMap* a_map, const CUtensorMap* bt_map, float* __restrict__ C,
                                        int M, int N, int K)
{
    constexpr int BM = 64, BN = 128, BK = 64;
    extern __shared__ unsigned char v0_raw[];
    // Tiles start 1024-byte aligned (the swizzle repeats every 1024 bytes, counted from the address).
    unsigned char* base = v0_raw + ((1024 - tma_smem(v0_raw) % 1024) % 1024);
    unsigned char* a_tile = base;                        // 64 rows of 128 bytes
    unsigned char* b_tile = base + BM * 128;             // 128 rows of 128 bytes
    __shared__ __align__(8) uint64_t bar;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    if (threadIdx.x == 0)
        barrier_init(&bar);
    __syncthreads();

    float d[64];
#pragma unroll
    for (int i = 0; i < 64; ++i)
        d[i] = 0.0f;
    unsigned phase = 0;
    for (int k0 = 0; k0 < K; k0 += BK) {
        if (threadIdx.x == 0) {
            barrier_expect(&bar, (BM + BN) * BK * 2);
            tma_load_2d(a_tile, a_map, k0, m0, &bar);
            tma_load_2d(b_tile, bt_map, k0, n0, &bar);
        }
        barrier_wait(&bar, phase);
        phase ^= 1;
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk)
            wgmma_64x128x16<F16>(d, descriptor_128b(a_tile) + 2 * kk, descriptor_128b(b_tile) + 2 * kk);
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        __syncthreads();                                 // every warp is done reading the tiles before the next copy
    }

    store_d(d, C, M, N, m0, n0);
}
// [/gemm_v0]
