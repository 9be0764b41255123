// Chapter 9 (Hopper, sm_90a only): one warpgroup multiplies with wgmma, its operands named by shared-memory descriptors.
// New since chapter 8: the warpgroup (4 warps) as the unit of the multiply, descriptors instead of fragments in registers.
//
//   wgmma_probe(A, Bt, D) - one block of 128 threads (one warpgroup). A (64 x 64) and Bt (64 x 64, B's transpose:
//       row n holds column n of B) are BF16, row-major, 128 bytes per row. The threads store both tiles into shared
//       memory in the 128-byte swizzle (16-byte chunk c of row r at chunk c ^ (r % 8), as the copy engine would),
//       then four wgmma.mma_async m64n64k16 (K = 16 each, the descriptor's address 32 bytes further each time)
//       accumulate D = A * B in FP32, 32 registers per thread. Each thread writes its registers raw:
//       D[thread][0..31]. gemmlab.hopper.wgmma_d_position says which element of D each one is; with the right
//       model the host reassembles A * B exactly (small integers).

#include <stdint.h>

__device__ __forceinline__ unsigned wg_smem(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// [descriptor]
// A K-major tile of 128-byte rows in the 128-byte swizzle: address / 16 in bits 0-13, the leading byte offset
// (unused in this layout, 16 bytes by convention) in bits 16-29, 1024 bytes from one group of 8 rows to the next
// in bits 32-45, swizzle mode 1 (128 bytes) in bits 62-63. Same fields as gemmlab.hopper.smem_descriptor.
__device__ __forceinline__ uint64_t descriptor_128b(const void* tile)
{
    const uint64_t address = wg_smem(tile);
    return ((address & 0x3FFFF) >> 4) | (uint64_t(16 >> 4) << 16) | (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
}
// [/descriptor]

// [wgmma]
// D (64 x 64, FP32, 32 registers per thread) += A (64 x 16, from shared memory) * B (16 x 64, from shared memory,
// stored as its transpose: 64 rows of K), both operands named by descriptors. Issued by all 128 threads together.
__device__ __forceinline__ void wgmma_64x64x16(float (&d)[32], uint64_t desc_a, uint64_t desc_b, int accumulate)
{
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %34, 0;\n"
                 " wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}
// [/wgmma]

extern "C" __global__ void __launch_bounds__(128) wgmma_probe(const uint4* __restrict__ A, const uint4* __restrict__ Bt,
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
        wgmma_64x64x16(d, descriptor_128b(a_tile) + 2 * kk, descriptor_128b(b_tile) + 2 * kk, 1);
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
    for (int i = 0; i < 32; ++i)
        D[32 * threadIdx.x + i] = d[i];
}
