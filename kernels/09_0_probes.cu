// Chapter 9's two probes (sm_90a only): tma_tile_image, one copy-engine box into swizzled shared memory and back,
// and wgmma_probe, one 64 x 64 x 64 product by four wgmma m64n64k16, whose registers the host maps to D's elements.
// Before the GEMMs: what the copy engine writes and where wgmma's results land (gemmlab.hopper models both).
//
//   tma_tile_image(map, x, y, out, bytes) - one block: thread 0 sets up an mbarrier that expects `bytes` bytes,
//       asks the copy engine for the box of `map` whose first element is column x, row y (the map's innermost
//       dimension first, as the driver names it), and every thread waits for the barrier's phase 0 to complete;
//       then the block writes shared memory back to out byte for byte. `bytes` must be the box's size
//       (gemmlab.hopper.TensorMap.box_bytes): expect more and the barrier never completes (chapter 3's lesson,
//       again); the host compares out with gemmlab.hopper.box_image. One block of 128 threads, `bytes` of
//       dynamic shared memory.
//   wgmma_probe(A, Bt, D) - one block of 128 threads (one warpgroup). A (64 x 64) and Bt (64 x 64, B's transpose:
//       row n holds column n of B) are BF16, row-major, 128 bytes per row. The threads store both tiles into shared
//       memory in the 128-byte swizzle (16-byte chunk c of row r at chunk c ^ (r % 8), as the copy engine would),
//       then four wgmma.mma_async m64n64k16 (K = 16 each, the descriptor's address 32 bytes further each time)
//       accumulate D = A * B in FP32, 32 registers per thread. Each thread writes its registers raw:
//       D[thread][0..31]; gemmlab.hopper.wgmma_d_position says which element of D each one is.
// The entry points, tma_tile_image and wgmma_probe, are generated (gemmlab.hopper_steps.PROBES): each calls its body.

#include "09_hopper.cuh"

// [tma_tile_image]
__device__ __forceinline__ void tma_tile_image_body(const CUtensorMap* map, int x, int y, uint4* __restrict__ out,
                                                    int bytes)
{
    extern __shared__ __align__(1024) unsigned char tile[];     // a swizzled tile starts 1024-byte aligned
    __shared__ __align__(8) uint64_t bar;
    if (threadIdx.x == 0)
        barrier_init(&bar);
    __syncthreads();
    if (threadIdx.x == 0) {
        barrier_expect(&bar, static_cast<unsigned>(bytes));
        tma_load_2d(tile, map, x, y, &bar);
    }
    barrier_wait(&bar, 0);
    for (int i = threadIdx.x; i < bytes / 16; i += blockDim.x)
        out[i] = reinterpret_cast<const uint4*>(tile)[i];
}
// [/tma_tile_image]

// [wgmma_probe]
__device__ __forceinline__ void wgmma_probe_body(const uint4* __restrict__ A, const uint4* __restrict__ Bt,
                                                 float* __restrict__ D)
{
    __shared__ __align__(1024) uint4 a_tile[64 * 8];
    __shared__ __align__(1024) uint4 b_tile[64 * 8];
    for (int q = threadIdx.x; q < 64 * 8; q += blockDim.x) {
        const int row = q / 8, chunk = q % 8;
        a_tile[8 * row + (chunk ^ (row % 8))] = A[q];
        b_tile[8 * row + (chunk ^ (row % 8))] = Bt[q];
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");     // stores by threads, read by wgmma next
    __syncthreads();

    float d[32];
#pragma unroll
    for (int i = 0; i < 32; ++i)
        d[i] = 0.0f;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)          // 16 more columns of K: 32 bytes further along each 128-byte row
        wgmma_64x64x16<false>(d, descriptor_128b(a_tile) + 2 * kk, descriptor_128b(b_tile) + 2 * kk);
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
    for (int i = 0; i < 32; ++i)
        D[32 * threadIdx.x + i] = d[i];
}
// [/wgmma_probe]
