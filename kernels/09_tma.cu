// Chapter 9 (Hopper, sm_90a only): the tensor copy engine (TMA) fills shared memory and completes on an mbarrier.
// New since chapter 8: a tensor map passed by value, cp.async.bulk.tensor, and mbarrier transactions.
//
//   tma_tile_image(map, x, y, out, bytes) - one block: thread 0 sets up an mbarrier that expects `bytes` bytes,
//       asks the copy engine for the box of `map` whose first element is column x, row y (the map's innermost
//       dimension first, as the driver names it), and every thread waits for the barrier's phase 0 to complete;
//       then the block writes shared memory back to out byte for byte. `bytes` must be the box's size
//       (gemmlab.hopper.TensorMap.box_bytes): expect more and the barrier never completes (chapter 3's lesson,
//       again); the host compares out with gemmlab.hopper.swizzled_offset.
//
// Launch with one block of 128 threads and `bytes` of dynamic shared memory (at most 64 KiB here).

#include <cuda.h>
#include <stdint.h>

__device__ __forceinline__ unsigned tma_smem(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Thread 0: the barrier counts one arrival and `bytes` of transactions; init must be visible to the copy engine
// (the async proxy) before any copy names the barrier.
__device__ __forceinline__ void barrier_init(uint64_t* bar)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(tma_smem(bar)));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void barrier_expect(uint64_t* bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(tma_smem(bar)), "r"(bytes) : "memory");
}

// Spin until the barrier's phase `parity` has completed.
__device__ __forceinline__ void barrier_wait(uint64_t* bar, unsigned parity)
{
    unsigned done = 0;
    while (!done)
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                     : "=r"(done) : "r"(tma_smem(bar)), "r"(parity) : "memory");
}

// The copy engine moves the box at (x, y) of `map` into shared memory at dst; its bytes count against `bar`.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, int x, int y, uint64_t* bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 ::"r"(tma_smem(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(tma_smem(bar))
                 : "memory");
}

extern "C" __global__ void __launch_bounds__(128)
tma_tile_image(const __grid_constant__ CUtensorMap map, int x, int y, uint4* __restrict__ out, int bytes)
{
    extern __shared__ __align__(1024) unsigned char tile[];     // a swizzled tile starts 1024-byte aligned
    __shared__ __align__(8) uint64_t bar;
    if (threadIdx.x == 0)
        barrier_init(&bar);
    __syncthreads();
    if (threadIdx.x == 0) {
        barrier_expect(&bar, static_cast<unsigned>(bytes));
        tma_load_2d(tile, &map, x, y, &bar);
    }
    barrier_wait(&bar, 0);
    for (int i = threadIdx.x; i < bytes / 16; i += blockDim.x)
        out[i] = reinterpret_cast<const uint4*>(tile)[i];
}
