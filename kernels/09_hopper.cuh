// Chapter 9's Hopper primitives (sm_90a only), shared by every step of the ladder (kernels/09_*.cu): tensor-map
// copies (TMA), mbarriers, wgmma and its shared-memory descriptors, clusters, and the epilogues several steps share.
// Each wrapper is one PTX idea; a step's file holds the schedule that uses them.
#ifndef GEMMLAB_09_HOPPER_CUH
#define GEMMLAB_09_HOPPER_CUH

#include <cuda.h>
#include <stdint.h>

// PTX names shared memory by its 32-bit address in the shared window, not by a generic pointer.
__device__ __forceinline__ unsigned tma_smem(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// [mbarrier]
// Thread 0: the barrier expects one arrival per phase (the bytes to expect come with barrier_expect); init must be
// visible to the copy engine (the async proxy) before any copy names the barrier.
__device__ __forceinline__ void barrier_init(uint64_t* bar)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(tma_smem(bar)));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// The same for `count` arrivals per phase, without the fence: a ring initialises all its barriers, then fences once.
__device__ __forceinline__ void barrier_init_count(uint64_t* bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(tma_smem(bar)), "r"(count));
}

// One arrival that also tells the barrier how many bytes the copy engine will deliver this phase.
__device__ __forceinline__ void barrier_expect(uint64_t* bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(tma_smem(bar)), "r"(bytes) : "memory");
}

// Spin until the barrier's phase `parity` has completed.
__device__ __forceinline__ void barrier_wait(uint64_t* bar, unsigned parity)
{
    unsigned done = 0;
    while (!done)
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     " selp.u32 %0, 1, 0, p;\n}"
                     : "=r"(done) : "r"(tma_smem(bar)), "r"(parity) : "memory");
}

__device__ __forceinline__ void barrier_arrive(uint64_t* bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(tma_smem(bar)) : "memory");
}
// [/mbarrier]

// [tma_load]
// The copy engine moves the box at (x, y) of `map` into shared memory at dst; its bytes count against `bar`.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, int x, int y, uint64_t* bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];"
                 ::"r"(tma_smem(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(tma_smem(bar))
                 : "memory");
}
// [/tma_load]

// [descriptor]
// A K-major tile of 128-byte rows in the 128-byte swizzle: address / 16 in bits 0-13, the leading byte offset
// (unused in this layout, 16 bytes by convention) in bits 16-29, 1024 bytes from one group of 8 rows to the next
// in bits 32-45, swizzle mode 1 (128 bytes) in bits 62-63. Same fields as gemmlab.hopper.smem_descriptor.
__device__ __forceinline__ uint64_t descriptor_128b(const void* tile)
{
    const uint64_t address = tma_smem(tile);
    return ((address & 0x3FFFF) >> 4) | (uint64_t(16 >> 4) << 16) | (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
}
// [/descriptor]

// [wgmma]
// One wgmma.mma_async m64nNk16 with FP32 sums: D (64 x N, N / 2 registers per thread) += A (64 x 16) * B (16 x N),
// both from shared memory and named by descriptors (B stored as its transpose: N rows of K), issued by all 128
// threads of the warpgroup together; T is the input type, bf16 or f16. Inline PTX names every accumulator, so the
// lists are built from groups of 8: ACC8(i) binds d[i .. i + 7], REGSn names %0 .. %(n - 1) in the instruction, and
// the two descriptors are the operands after them.
#define ACC8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
                "+f"(d[i + 6]), "+f"(d[i + 7])
#define ACC32 ACC8(0), ACC8(8), ACC8(16), ACC8(24)
#define ACC64 ACC32, ACC8(32), ACC8(40), ACC8(48), ACC8(56)
#define ACC128 ACC64, ACC8(64), ACC8(72), ACC8(80), ACC8(88), ACC8(96), ACC8(104), ACC8(112), ACC8(120)
#define REGS32 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
               "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define REGS64 REGS32 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
                      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define REGS128 REGS64 ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
                       "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
                       "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
                       "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define WGMMA(N, T, REGS, ACCS, DESC_A, DESC_B)                                                                      \
    asm volatile("{\n wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." T "." T " {" REGS "}, %" DESC_A ", %" DESC_B \
                 ", 1, 1, 1, 0, 0;\n}" : ACCS : "l"(desc_a), "l"(desc_b))

template <bool F16>
__device__ __forceinline__ void wgmma_64x64x16(float (&d)[32], uint64_t desc_a, uint64_t desc_b)
{
    if constexpr (F16)
        WGMMA(64, "f16", REGS32, ACC32, "32", "33");
    else
        WGMMA(64, "bf16", REGS32, ACC32, "32", "33");
}
// [/wgmma]

// D (64 x 128) += A (64 x 16) * B (16 x 128): the first GEMM's instruction.
template <bool F16>
__device__ __forceinline__ void wgmma_64x128x16(float (&d)[64], uint64_t desc_a, uint64_t desc_b)
{
    if constexpr (F16)
        WGMMA(128, "f16", REGS64, ACC64, "64", "65");
    else
        WGMMA(128, "bf16", REGS64, ACC64, "64", "65");
}

// The same with D = A * B: d's old values neither read (scale-d 0) nor declared read ("=f"), for the first K-tile of
// a half of the accumulators whose last values are still being stored (the split step). With zeros assigned in C++
// instead, the compiler shares one zero register between the halves, and ptxas then waits for every wgmma of one half
// before the other half's stores (its message C7517).
#define SET8(i) "=f"(d[i]), "=f"(d[i + 1]), "=f"(d[i + 2]), "=f"(d[i + 3]), "=f"(d[i + 4]), "=f"(d[i + 5]), \
                "=f"(d[i + 6]), "=f"(d[i + 7])
#define SET64 SET8(0), SET8(8), SET8(16), SET8(24), SET8(32), SET8(40), SET8(48), SET8(56)
template <bool F16>
__device__ __forceinline__ void wgmma_64x128x16_set(float (&d)[64], uint64_t desc_a, uint64_t desc_b)
{
    if constexpr (F16)
        asm volatile("{\n wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {" REGS64 "}, %64, %65,"
                     " 0, 1, 1, 0, 0;\n}"
                     : SET64 : "l"(desc_a), "l"(desc_b));
    else
        asm volatile("{\n wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" REGS64 "}, %64, %65,"
                     " 0, 1, 1, 0, 0;\n}"
                     : SET64 : "l"(desc_a), "l"(desc_b));
}

// [wgmma_256]
// D (64 x 256, 128 registers per thread) += A (64 x 16) * B (16 x 256): the widest wgmma, for the warp-specialised
// kernels.
template <bool F16>
__device__ __forceinline__ void wgmma_64x256x16(float (&d)[128], uint64_t desc_a, uint64_t desc_b)
{
    if constexpr (F16)
        WGMMA(256, "f16", REGS128, ACC128, "128", "129");
    else
        WGMMA(256, "bf16", REGS128, ACC128, "128", "129");
}
// [/wgmma_256]

// [cluster_helpers]
// Clusters of two blocks (from the cluster step on): the block's rank in its cluster, a barrier over every thread of
// the cluster that has not exited, an arrival on the other block's copy of a barrier, and a copy that the engine
// writes into the same place of both blocks' shared memory (and counts against both blocks' barriers at that place).
// The remote arrival keeps the default ordering (release at the block's scope), which is all the handshake needs:
// with release at the cluster's scope (.release.cluster) the kernel ran at 70% of the speed of the one before.
__device__ __forceinline__ unsigned cluster_rank()
{
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    return rank;
}

__device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release;\n barrier.cluster.wait.acquire;" ::: "memory");
}

__device__ __forceinline__ void barrier_arrive_in(uint64_t* bar, unsigned rank)
{
    asm volatile("{\n .reg .b32 remote;\n mapa.shared::cluster.u32 remote, %0, %1;\n"
                 " mbarrier.arrive.shared::cluster.b64 _, [remote];\n}"
                 ::"r"(tma_smem(bar)), "r"(rank) : "memory");
}

__device__ __forceinline__ void tma_load_2d_both(void* dst, const CUtensorMap* map, int x, int y, uint64_t* bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;"
                 ::"r"(tma_smem(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(tma_smem(bar)),
                   "h"(static_cast<unsigned short>(0b11))
                 : "memory");
}

// A consumer warp is done with a stage: it says so to its block's empty barrier and to the other block's too, whose
// copy engine writes half of the stage's B into this block.
__device__ __forceinline__ void release_both(uint64_t* empty, unsigned rank)
{
    barrier_arrive(empty);
    barrier_arrive_in(empty, rank ^ 1);
}
// [/cluster_helpers]

// [tile_walk]
// The tiles of C a block (or a cluster) computes, in turn: tile t, t + step, t + 2 step, ... below `tiles`. One tile
// where the grid has a block per tile; from the persistent step on, every gridDim.x-th tile. The producer and the
// consumers walk the same tiles, so the ring's stages and phases agree. (Stream-K walks parts of tiles: StreamK.)
struct TileWalk {
    int t, step, tiles;

    // The next tile; false once the walk is past the last.
    __device__ bool next(int& tile)
    {
        if (t >= tiles)
            return false;
        tile = t;
        t += step;
        return true;
    }
};
// [/tile_walk]

// [ws_tile]
// Tile t of C (row of tiles, column of tiles) for persistent blocks: down groups of 8 rows of tiles, column by
// column, so that the blocks running together share rows of A and columns of B in the L2.
__device__ __forceinline__ int2 ws_tile(int t, int tiles_m, int tiles_n)
{
    constexpr int GROUP = 8;
    const int per_group = GROUP * tiles_n, first = t / per_group * GROUP;
    const int rows = min(GROUP, tiles_m - first), in_group = t % per_group;
    return make_int2(first + in_group % rows, in_group / rows);
}
// [/ws_tile]

// [store_d]
// A warpgroup's accumulators into C (row-major, M x N), where they fall inside it. Register 4j + e of lane l of warp w
// (of the warpgroup) is row row0 + 16w + l / 4 + 8 (e / 2), column col0 + 8j + 2 (l % 4) + e % 2: the layout of
// gemmlab.hopper.wgmma_d_position.
template <int REGS>
__device__ __forceinline__ void store_d(const float (&d)[REGS], float* __restrict__ C, int M, int N, int row0, int col0)
{
    const int warp = threadIdx.x % 128 / 32, lane = threadIdx.x % 32;
#pragma unroll
    for (int i = 0; i < REGS; ++i) {
        const int r = row0 + 16 * warp + lane / 4 + 8 * (i % 4 / 2), c = col0 + 8 * (i / 4) + 2 * (lane % 4) + i % 2;
        if (r < M && c < N)
            C[static_cast<size_t>(r) * N + c] = d[i];
    }
}
// [/store_d]

// [store_d_pairs]
// The same, two neighbouring columns per instruction (the pairs step): registers 2i and 2i + 1 of a thread are
// columns c and c + 1 of one row, so where N is even (every row then starts 8-byte aligned) they leave as one 8-byte
// store.
template <int REGS>
__device__ __forceinline__ void store_d_pairs(const float (&d)[REGS], float* __restrict__ C, int M, int N, int row0,
                                              int col0)
{
    const int warp = threadIdx.x % 128 / 32, lane = threadIdx.x % 32;
#pragma unroll
    for (int i = 0; i < REGS; i += 2) {
        const int r = row0 + 16 * warp + lane / 4 + 8 * (i % 4 / 2), c = col0 + 8 * (i / 4) + 2 * (lane % 4);
        if (r >= M)
            continue;
        float* out = C + static_cast<size_t>(r) * N + c;
        if (N % 2 == 0 && c + 1 < N) {
            *reinterpret_cast<float2*>(out) = make_float2(d[i], d[i + 1]);
        } else {
            if (c < N)
                out[0] = d[i];
            if (c + 1 < N)
                out[1] = d[i + 1];
        }
    }
}
// [/store_d_pairs]

// [store_d_tma]
// The epilogue through the copy engine (from the tmastore step on): a consumer warpgroup writes 32 columns of its
// 64 x N results at a time into one of two 8 KiB buffers (64 rows of 128 bytes, in the 128-byte swizzle, so that the
// float2 stores of a warp are free of bank conflicts), and one thread asks the engine to store the box to C. The last
// boxes of a tile are still leaving while the warpgroup starts the next tile's main loop. The engine drops what falls
// outside C. ADD (stream-K) asks the engine to add the box to C instead.
#define C_BOX_BYTES (64 * 32 * 4)
// A barrier for the 128 threads of one warpgroup only (named barrier id; 0 is __syncthreads()'s).
__device__ __forceinline__ void warpgroup_barrier(int id)
{
    asm volatile("bar.sync %0, 128;" ::"r"(id) : "memory");
}

// Box j (columns 32j .. 32j + 31 of the warpgroup's 64 rows) into buf: each thread writes its pairs of neighbouring
// columns as float2, row r of the box at r * 128 bytes, 16-byte chunk c at chunk c ^ (r % 8).
template <int REGS>
__device__ __forceinline__ void write_box(const float (&d)[REGS], unsigned char* buf, int j)
{
    const int warp = threadIdx.x % 128 / 32, lane = threadIdx.x % 32;
#pragma unroll
    for (int i = 16 * j; i < 16 * j + 16; i += 2) {
        const int r = 16 * warp + lane / 4 + 8 * (i % 4 / 2), col = 8 * (i / 4 - 4 * j) + 2 * (lane % 4);
        const int offset = r * 128 + (((col / 4) ^ (r % 8)) * 16) + (col % 4) * 4;
        *reinterpret_cast<float2*>(buf + offset) = make_float2(d[i], d[i + 1]);
    }
}

// The engine's store of the box in buf to C at (row0, col0): FP32 sums added in the L2 with ADD.
template <bool ADD = false>
__device__ __forceinline__ void tma_store_box(const CUtensorMap* c_map, int row0, int col0, const unsigned char* buf)
{
    if (ADD)
        asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%1, %2}], [%3];"
                     ::"l"(reinterpret_cast<uint64_t>(c_map)), "r"(col0), "r"(row0), "r"(tma_smem(buf)) : "memory");
    else
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                     ::"l"(reinterpret_cast<uint64_t>(c_map)), "r"(col0), "r"(row0), "r"(tma_smem(buf)) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

template <int REGS, bool ADD = false>
__device__ __forceinline__ void store_d_tma(const float (&d)[REGS], const CUtensorMap* c_map, unsigned char* buffers,
                                            int consumer, int row0, int col0)
{
    const bool issuer = threadIdx.x % 128 == 0;
#pragma unroll
    for (int j = 0; j < REGS / 16; ++j) {
        unsigned char* buf = buffers + (j % 2) * C_BOX_BYTES;
        if (issuer)                                                  // the store that read buf last is done reading
            asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
        warpgroup_barrier(1 + consumer);
        write_box(d, buf, j);
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // the threads' stores, read by the engine next
        warpgroup_barrier(1 + consumer);
        if (issuer)
            tma_store_box<ADD>(c_map, row0, col0 + 32 * j, buf);
    }
}
// [/store_d_tma]

// [store_d_handed]
// The same boxes, handed to a storer warp (the storer and split steps) instead of stored: the consumer warpgroup waits
// at named barrier 3 + consumer until its storer says the buffer is free, writes the box and fences like store_d_tma,
// and arrives at barrier 5 + consumer without waiting; the storer waits there and asks the copy engine for the store.
// Each barrier counts 160 threads: the warpgroup and the storer warp. No consumer thread issues or waits for a store.
template <int REGS>
__device__ __forceinline__ void store_d_handed(const float (&d)[REGS], unsigned char* buffers, int consumer)
{
#pragma unroll
    for (int j = 0; j < REGS / 16; ++j) {
        unsigned char* buf = buffers + (j % 2) * C_BOX_BYTES;
        asm volatile("bar.sync %0, 160;" ::"r"(3 + consumer) : "memory");      // the storer: buf is free
        write_box(d, buf, j);
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // the threads' stores, read by the engine next
        asm volatile("bar.arrive %0, 160;" ::"r"(5 + consumer) : "memory");    // buf is written: store it
    }
}
// [/store_d_handed]

// [storer_warp]
// The storer warp's side of the hand-over, for one tile: eight boxes of 32 columns, in the order store_d_handed hands
// them over. Before each box it waits until the engine has read the box before last out of the buffer this one will
// use and says so at named barrier 3 + consumer; then it waits at barrier 5 + consumer until the consumer has written
// the box, and one lane asks for the store. The caller waits for the last stores before the block exits.
__device__ __forceinline__ void storer_tile(const CUtensorMap* c_map, unsigned char* buffers, int consumer, int row0,
                                            int col0)
{
    const bool lead = threadIdx.x % 32 == 0;
    for (int j = 0; j < 256 / 32; ++j) {
        unsigned char* buf = buffers + (j % 2) * C_BOX_BYTES;
        if (lead)
            asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
        __syncwarp();
        asm volatile("bar.arrive %0, 160;" ::"r"(3 + consumer) : "memory");
        asm volatile("bar.sync %0, 160;" ::"r"(5 + consumer) : "memory");
        if (lead)
            tma_store_box(c_map, row0, col0 + 32 * j, buf);
    }
}
// [/storer_warp]

#endif
