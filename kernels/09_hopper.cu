// Chapter 9 (Hopper, sm_90a only): the tensor copy engine, mbarriers and warpgroup MMA (wgmma), one step at a time.
// New since chapter 8: tensor maps passed by value, cp.async.bulk.tensor, mbarrier transactions, wgmma descriptors.
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
//   wgmma_gemm_v0_bf16 / _f16(a_map, bt_map, C, M, N, K) - the first GEMM: C (M x N, FP32) = A (M x K) * B, BF16 or
//       FP16 inputs, B given as its transpose Bt (N x K), both through tensor maps of 64-wide boxes in the 128-byte
//       swizzle. One warpgroup per 64 x 128 tile of C, one 64-deep K-tile at a time: copy, wait on the mbarrier, four
//       wgmma m64n128k16, wait for them, barrier, next tile. No pipeline yet; the copy engine's zeros outside the
//       tensor handle every edge of the loads, and the stores check C's. Grid (ceil(N / 128), ceil(M / 64)), 128 threads, WGMMA_GEMM_V0_SHARED bytes of
//       dynamic shared memory (1024-byte aligned tiles).
//   wgmma_gemm_ws_bf16 / _f16 (same arguments) - the same product, warp-specialised: a ring of 4 stages, a producer
//       warpgroup (one thread drives the copy engine) and two consumer warpgroups, each 64 x 256 of a 128 x 256 tile.
//       Grid (ceil(N / 256), ceil(M / 128)), 384 threads, WGMMA_GEMM_WS_SHARED bytes of dynamic shared memory.
//   wgmma_gemm_overlap_*, wgmma_gemm_persistent_*, wgmma_gemm_pairs_*, wgmma_gemm_cluster_* - the same with one more
//       switch each (see ws_gemm): overlapped waits, persistent blocks (grid: min(SMs, tiles of C) blocks in one
//       row), paired stores, clusters of two blocks sharing B (its tensor map's box: 128 x 64).
//   wgmma_gemm_tmastore_* (a_map, bt_map, c_map, C, M, N, K) - the clustered kernel with its epilogue through the
//       copy engine (store_d_tma): c_map describes C (FP32, rows a multiple of 16 bytes apart) in boxes of 64 rows x
//       32 columns, 128-byte swizzle; WGMMA_GEMM_TMA_STORE_SHARED bytes of dynamic shared memory.
//   wgmma_gemm_storer_*, wgmma_gemm_split_* (same arguments) - the last two steps: the stores issued by two idle
//       warps of the producer warpgroup (ws_gemm's STORER), then half of each tile's epilogue under the next tile's
//       first two K-tiles (SPLIT); WGMMA_GEMM_TMA_STORE_SHARED bytes.
//   wgmma_gemm_quads_* - the paired-stores kernel with 16-byte stores instead (store_d_quads); a candidate that
//       was no faster, kept for the comparison.
//   wgmma_gemm_streamk_* (a_map, bt_map, c_map, C, M, N, K, flags, epoch) - the last step with a stream-K tail: where
//       the tiles of C are not a multiple of the grid's units, the last round's K-tiles are shared out evenly and the
//       parts of a tile cut between units meet in C through the copy engine's adds (StreamK, ws_gemm's STREAMK).
//       flags: WS_CONSUMERS unsigned per block, zero before the first launch; epoch: a value the flags have never
//       held (the host counts launches from 1). Every unit of the grid must be resident at once (the grid is at
//       most cuOccupancyMaxActiveClusters clusters). WGMMA_GEMM_TMA_STORE_SHARED bytes.
//   wgmma_gemm_pingpong_* (a_map, bt_map, c_map, C, M, N, K) - another schedule of the same pieces (pingpong_gemm):
//       each consumer warpgroup owns whole 128 x 128 tiles and the two take turns at the tensor cores, so that one
//       stores its tile while the other computes. No cluster; a_map and bt_map in boxes of 128 x 64, c_map as
//       wgmma_gemm_tmastore_*'s; grid min(SMs, tiles of C) blocks in one row, PINGPONG_SHARED bytes.

#include <cuda.h>
#include <stdint.h>

#define WGMMA_GEMM_V0_SHARED (1024 + 64 * 128 + 128 * 128)

__device__ __forceinline__ unsigned tma_smem(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Thread 0: the barrier expects one arrival per phase (the bytes to expect come with barrier_expect); init must be
// visible to the copy engine (the async proxy) before any copy names the barrier.
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

// [tma_tile_image]
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
// [/tma_tile_image]

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

// [wgmma_probe]
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
        wgmma_64x64x16<false>(d, descriptor_128b(a_tile) + 2 * kk, descriptor_128b(b_tile) + 2 * kk);
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
    for (int i = 0; i < 32; ++i)
        D[32 * threadIdx.x + i] = d[i];
}
// [/wgmma_probe]

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
// a half of the accumulators whose last values are still being stored (ws_gemm's SPLIT). With zeros assigned in C++
// instead, the compiler shares one zero register between the halves, and ptxas then waits for every wgmma of one half
// before the other half's stores (its message C7517).
#define SET8(i) "=f"(d[i]), "=f"(d[i + 1]), "=f"(d[i + 2]), "=f"(d[i + 3]), "=f"(d[i + 4]), "=f"(d[i + 5]), \
                "=f"(d[i + 6]), "=f"(d[i + 7])
#define SET64 SET8(0), SET8(8), SET8(16), SET8(24), SET8(32), SET8(40), SET8(48), SET8(56)
template <bool F16>
__device__ __forceinline__ void wgmma_64x128x16_set(float (&d)[64], uint64_t desc_a, uint64_t desc_b)
{
    if constexpr (F16)
        asm volatile("{\n wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {" REGS64 "}, %64, %65, 0, 1, 1, 0, 0;\n}"
                     : SET64 : "l"(desc_a), "l"(desc_b));
    else
        asm volatile("{\n wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" REGS64 "}, %64, %65, 0, 1, 1, 0, 0;\n}"
                     : SET64 : "l"(desc_a), "l"(desc_b));
}

// One 64-deep K-tile on a half of a consumer's accumulators (ws_gemm's SPLIT), committed as a group of its own: its
// first wgmma sets the half (set) or adds to it, the other three add.
template <bool F16>
__device__ __forceinline__ void wgmma_half_k_tile(float (&h)[64], bool set, uint64_t desc_a, uint64_t desc_b)
{
    if (set)
        wgmma_64x128x16_set<F16>(h, desc_a, desc_b);
    else
        wgmma_64x128x16<F16>(h, desc_a, desc_b);
#pragma unroll
    for (int kk = 1; kk < 4; ++kk)
        wgmma_64x128x16<F16>(h, desc_a + 2 * kk, desc_b + 2 * kk);
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

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
// The same, two neighbouring columns per instruction: registers 2i and 2i + 1 of a thread are columns c and c + 1 of
// one row, so where N is even (every row then starts 8-byte aligned) they leave as one 8-byte store.
template <int REGS>
__device__ __forceinline__ void store_d_pairs(const float (&d)[REGS], float* __restrict__ C, int M, int N, int row0, int col0)
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

// [store_d_quads]
// Four neighbouring columns per instruction: lanes 4g + t and 4g + (t ^ 1) swap halves, so that the even one holds
// columns c .. c + 3 of row g and the odd one the same columns of row g + 8 (c = 8j + 4 (t / 2)); where N is a
// multiple of 4 (every row then starts 16-byte aligned) each leaves as one 16-byte store.
template <int REGS>
__device__ __forceinline__ void store_d_quads(const float (&d)[REGS], float* __restrict__ C, int M, int N, int row0, int col0)
{
    const int warp = threadIdx.x % 128 / 32, lane = threadIdx.x % 32, odd = lane % 2;
#pragma unroll
    for (int j = 0; j < REGS / 4; ++j) {
        // The odd lane gives its row-g pair away and keeps row g + 8; the even lane the other way round.
        const float give0 = odd ? d[4 * j] : d[4 * j + 2], give1 = odd ? d[4 * j + 1] : d[4 * j + 3];
        const float got0 = __shfl_xor_sync(0xffffffffu, give0, 1), got1 = __shfl_xor_sync(0xffffffffu, give1, 1);
        const float4 v = odd ? make_float4(got0, got1, d[4 * j + 2], d[4 * j + 3])
                             : make_float4(d[4 * j], d[4 * j + 1], got0, got1);
        const int r = row0 + 16 * warp + lane / 4 + 8 * odd, c = col0 + 8 * j + 4 * (lane % 4 / 2);
        if (r >= M)
            continue;
        float* out = C + static_cast<size_t>(r) * N + c;
        if (N % 4 == 0 && c + 3 < N) {
            *reinterpret_cast<float4*>(out) = v;
        } else {
            const float e[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
            for (int q = 0; q < 4; ++q)
                if (c + q < N)
                    out[q] = e[q];
        }
    }
}
// [/store_d_quads]

// [gemm_v0]
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

// Every GEMM of this file twice, for BF16 inputs (name_bf16) and for FP16 inputs (name_f16); they differ only in the
// type that wgmma's name gives (and that the host's tensor maps describe).
#define GEMM_PARAMS const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap bt_map, \
                    float* __restrict__ C, int M, int N, int K
extern "C" __global__ void __launch_bounds__(128) wgmma_gemm_v0_bf16(GEMM_PARAMS) { v0_gemm<false>(&a_map, &bt_map, C, M, N, K); }
extern "C" __global__ void __launch_bounds__(128) wgmma_gemm_v0_f16(GEMM_PARAMS) { v0_gemm<true>(&a_map, &bt_map, C, M, N, K); }

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

// [streamk_split]
// Who computes what. T tiles (pairs of tiles in clusters) of k K-tiles each, G units (blocks, or clusters). Unit u
// takes whole tiles u, u + G, u + 2G, ... Without SHARE that is all. With SHARE, where T is not a multiple of G, the
// last round would leave units idle: its tiles' K-tiles (or, where fewer than half the units would have work, those
// of the last whole round too) are counted one after the other and cut into G ranges as even as integers allow, unit
// u taking [S u / G, S (u + 1) / G) of the S shared K-tiles. A range may begin and end inside a tile: a tile cut
// between units comes in parts, each a portion [kb, ke) of its K-tiles. gemmlab.streamk is the same arithmetic (the
// CPU tests compile this struct for the host and compare).
struct StreamK {
    int k, units, whole;             // K-tiles per tile, units, tiles done whole (0 .. whole - 1)
    long long shared;                // K-tiles shared out after the whole tiles
    int t;                           // this unit's next whole tile
    long long i, end;                // this unit's next shared K-tile, and the end of its range

    __host__ __device__ StreamK(int tiles, int k_tiles, int units_, int unit, bool share) : k(k_tiles), units(units_)
    {
        const int rounds = tiles / units, left = tiles % units;
        whole = !share || left == 0 ? tiles : (2 * left >= units ? rounds : (rounds > 1 ? rounds - 1 : 0)) * units;
        shared = static_cast<long long>(tiles - whole) * k;
        t = unit;
        i = begin(unit);
        end = begin(unit + 1);
    }

    // Where unit u's shared range begins (and unit u - 1's ends).
    __host__ __device__ long long begin(int u) const { return shared * u / units; }

    // The next portion, K-tiles [kb, ke) of tile `tile`; false once the unit is done.
    __host__ __device__ bool next(int& tile, int& kb, int& ke)
    {
        if (t < whole) {
            tile = t, kb = 0, ke = k;
            t += units;
            return true;
        }
        if (i >= end)
            return false;
        tile = whole + static_cast<int>(i / k);
        kb = static_cast<int>(i % k);
        ke = end - i < k - kb ? kb + static_cast<int>(end - i) : k;
        i += ke - kb;
        return true;
    }

    // The unit whose range holds K-tile kt of shared tile `tile` (the last unit that begins at or before it).
    __host__ __device__ int holder(int tile, int kt) const
    {
        const long long x = static_cast<long long>(tile - whole) * k + kt;
        int u = static_cast<int>(x * units / shared);
        while (u + 1 < units && begin(u + 1) <= x)
            ++u;
        while (u > 0 && begin(u) > x)
            --u;
        return u;
    }
};
// [/streamk_split]

// [streamk_handoff]
// The parts of a cut tile meet in C, added by the copy engine (store_d_tma<ADD>: cp.reduce.async.bulk.tensor .add,
// FP32 sums in the L2), in a fixed order so that C is the same at every launch: the last part (the one holding
// K-tile k - 1, the first thing its unit computes in its range) stores its sums as a whole tile would; every other
// part waits for the part after it to be in C, then adds its own. A part that others wait for raises its flag once
// the engine has written it. One thread per consumer warpgroup waits and raises, as it issues the stores. The flag
// holds the launch's epoch rather than being reset: nothing to clear between launches.
__device__ __forceinline__ void raise_when_stored(unsigned* flag, unsigned epoch)
{
    if (threadIdx.x % 128 != 0)
        return;
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");      // the engine has written this part into C
    asm volatile("fence.proxy.async.global;" ::: "memory");         // ... before the flag (other proxy) goes up
    // An atomic exchange (its old value dropped), so that no thread stores (STG) to global memory.
    asm volatile("{\n .reg .b32 old;\n atom.release.gpu.global.exch.b32 old, [%0], %1;\n}" ::"l"(flag), "r"(epoch) : "memory");
}

__device__ __forceinline__ void await_part(const unsigned* flag, unsigned epoch)
{
    if (threadIdx.x % 128 != 0)
        return;
    unsigned seen;
    for (;;) {
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(flag) : "memory");
        if (seen == epoch)
            break;
        __nanosleep(32);
    }
    asm volatile("fence.proxy.async.global;" ::: "memory");         // the engine's adds come after what it saw
}
// [/streamk_handoff]

// [cluster_helpers]
// Clusters of two blocks (a step of chapter 9's ladder): the block's rank in its cluster, a barrier over every thread of the
// cluster that has not exited, an arrival on the other block's copy of a barrier, and a copy that the engine writes
// into the same place of both blocks' shared memory (and counts against both blocks' barriers at that place).
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
// [/cluster_helpers]

// [store_d_tma]
// The epilogue through the copy engine: a consumer warpgroup writes 32 columns of its 64 x 256 results at a time
// into one of two 8 KiB buffers (64 rows of 128 bytes, in the 128-byte swizzle, so that the float2 stores of a
// warp are free of bank conflicts), and one thread asks the engine to store the box to C. The last boxes of a tile
// are still leaving while the warpgroup starts the next tile's main loop. The engine drops what falls outside C.
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
        *reinterpret_cast<float2*>(buf + r * 128 + (((col / 4) ^ (r % 8)) * 16) + (col % 4) * 4) = make_float2(d[i], d[i + 1]);
    }
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
        if (issuer) {
            if (ADD)                                                 // C += the box (FP32 sums, in the L2)
                asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%1, %2}], [%3];"
                             ::"l"(reinterpret_cast<uint64_t>(c_map)), "r"(col0 + 32 * j), "r"(row0), "r"(tma_smem(buf))
                             : "memory");
            else
                asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                             ::"l"(reinterpret_cast<uint64_t>(c_map)), "r"(col0 + 32 * j), "r"(row0), "r"(tma_smem(buf))
                             : "memory");
            asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        }
    }
}
// [/store_d_tma]

// [store_d_handed]
// The same boxes, handed to a storer warp (ws_gemm's STORER) instead of stored: the consumer warpgroup waits at named
// barrier 3 + consumer until its storer says the buffer is free, writes the box and fences like store_d_tma, and
// arrives at barrier 5 + consumer without waiting; the storer waits there and asks the copy engine for the store.
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

// [gemm_ws]
// The warp-specialised kernels: a ring of WS_STAGES tiles filled by the copy engine, one producer warpgroup and two
// consumer warpgroups. Thread 0 (the producer) waits until a stage is empty, tells its full barrier how many bytes
// to expect, and asks for the next 128 x 64 tile of A and 256 x 64 tile of Bt; each consumer warpgroup waits until
// the stage is full, multiplies its 64 rows of A by all 256 columns (four wgmma m64n256k16), and each of its warps
// marks the stage empty again once those wgmma are done (the empty barrier counts all eight consumer warps). The
// producer gives registers back (setmaxnreg) so that the consumers can hold 128 accumulators each. The switches:
//   OVERLAP     a consumer waits for the wgmma of the tile before (wait_group 1), not of this one (wait_group 0),
//               so the tensor cores always have the next tile's work queued while a stage is handed back;
//   PERSISTENT  one block per SM walks over the tiles of C (tile t, t + gridDim.x, ...) in groups of WS_GROUP rows
//               of tiles, so that the blocks running together share rows of A and columns of B in the L2, and the
//               producer fills the ring for the next tile while the consumers store this one;
//   STORE       how many neighbouring columns of C one store writes: 1, 2 (store_d_pairs) or 4 (store_d_quads);
//               0: none, the copy engine stores C from shared memory (store_d_tma, through C's tensor map);
//   CLUSTER     2: the blocks work in clusters of two on rows of tiles 2i and 2i + 1 of one column, and each block's
//               copy engine fetches half of the shared B tile into both (multicast): half the B traffic from the
//               L2. A stage is empty once the consumers of both blocks are done with it;
//   STREAMK     (a section of its own, beside the ladder) the last round's K-tiles are shared out evenly between the units
//               (StreamK), and the parts of a tile cut between units are added up in C by the copy engine;
//   STORER      (with STORE 0) two warps of the producer warpgroup issue the copy engine's stores (storer_warp): a
//               consumer hands each box over (store_d_handed) and waits only until a buffer is free;
//   SPLIT       (with STORER, 1 to WS_STAGES - 1) a consumer hands over the left half of its 64 x 256 results at a
//               tile's end and the right half under the next tile's first SPLIT K-tiles, which it runs on the left
//               half first: half of the epilogue overlaps wgmma (the main loop as two m64n128k16 per 16-deep step).
// Producer, consumers and storers walk the same portions (StreamK: whole tiles, and with STREAMK parts of tiles), so
// the ring's stages and phases agree.
#define WS_BM 128
#define WS_BN 256
#define WS_BK 64
#define WS_STAGES 4
#define WS_CONSUMERS 2
#define WS_THREADS 384
#define WS_GROUP 8
#define WGMMA_GEMM_WS_SHARED (1024 + WS_STAGES * (WS_BM + WS_BN) * WS_BK * 2)

__device__ __forceinline__ void barrier_init_count(uint64_t* bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(tma_smem(bar)), "r"(count));
}

__device__ __forceinline__ void barrier_arrive(uint64_t* bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(tma_smem(bar)) : "memory");
}

static_assert(WS_THREADS == 128 * (1 + WS_CONSUMERS), "one producer and WS_CONSUMERS consumer warpgroups");

// A consumer warp is done with a stage: it says so to its block's empty barrier and, in a cluster, to the other
// block's too (whose copy engine writes half of the stage's B into this block).
template <int CLUSTER>
__device__ __forceinline__ void release(uint64_t* empty, unsigned rank)
{
    barrier_arrive(empty);
    if (CLUSTER > 1)
        barrier_arrive_in(empty, rank ^ 1);
}

// Tile t of C (row of tiles, column of tiles): row-major, or down groups of WS_GROUP rows of tiles column by column.
template <bool GROUPED>
__device__ __forceinline__ int2 ws_tile(int t, int tiles_m, int tiles_n)
{
    if (!GROUPED)
        return make_int2(t / tiles_n, t % tiles_n);
    const int per_group = WS_GROUP * tiles_n, first = t / per_group * WS_GROUP;
    const int rows = min(WS_GROUP, tiles_m - first), in_group = t % per_group;
    return make_int2(first + in_group % rows, in_group / rows);
}

// [storer_warp]
// ws_gemm's STORER: warp 1 (2) of the producer warpgroup, idle otherwise, stores consumer 0's (1's) boxes, eight per
// tile in the order store_d_handed hands them over. Before each box it waits until the engine has read the box before
// last out of the buffer this one will use and says so at named barrier 3 + consumer; then it waits at barrier
// 5 + consumer until the consumer has written the box, and one lane asks for the store. It walks the block's tiles as
// the consumers do, for the place of each box in C.
template <bool PERSISTENT, int CLUSTER>
__device__ __forceinline__ void storer_warp(const CUtensorMap* c_map, unsigned char* all_buffers, int consumer,
                                            StreamK walk, int tiles_m, int tiles_n, unsigned rank)
{
    const bool lead = threadIdx.x % 32 == 0;
    unsigned char* const buffers = all_buffers + consumer * 2 * C_BOX_BYTES;
    int t, kb, ke;
    while (walk.next(t, kb, ke)) {
        const int2 tile = ws_tile<PERSISTENT>(t, tiles_m, tiles_n);
        const int row0 = (tile.x * CLUSTER + rank) * WS_BM + 64 * consumer, col0 = tile.y * WS_BN;
        for (int j = 0; j < WS_BN / 32; ++j) {
            unsigned char* buf = buffers + (j % 2) * C_BOX_BYTES;
            if (lead)
                asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
            __syncwarp();
            asm volatile("bar.arrive %0, 160;" ::"r"(3 + consumer) : "memory");
            asm volatile("bar.sync %0, 160;" ::"r"(5 + consumer) : "memory");
            if (lead) {
                asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                             ::"l"(reinterpret_cast<uint64_t>(c_map)), "r"(col0 + 32 * j), "r"(row0), "r"(tma_smem(buf))
                             : "memory");
                asm volatile("cp.async.bulk.commit_group;" ::: "memory");
            }
        }
    }
    if (lead)                                                        // every box has left before the block does
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}
// [/storer_warp]

template <bool OVERLAP, bool PERSISTENT, int STORE, bool F16, int CLUSTER = 1, bool STREAMK = false, bool STORER = false,
          int SPLIT = 0>
__device__ __forceinline__ void ws_gemm(const CUtensorMap* a_map, const CUtensorMap* bt_map, float* __restrict__ C,
                                        int M, int N, int K, const CUtensorMap* c_map = nullptr,
                                        unsigned* flags = nullptr, unsigned epoch = 0)
{
    constexpr int A_STAGE = WS_BM * WS_BK * 2, B_STAGE = WS_BN * WS_BK * 2;
    extern __shared__ unsigned char ring_raw[];
    unsigned char* base = ring_raw + ((1024 - tma_smem(ring_raw) % 1024) % 1024);
    unsigned char* a_tiles = base;                                   // WS_STAGES tiles of 128 rows x 128 bytes
    unsigned char* b_tiles = base + WS_STAGES * A_STAGE;             // WS_STAGES tiles of 256 rows x 128 bytes
    __shared__ __align__(8) uint64_t full[WS_STAGES], empty[WS_STAGES];
    static_assert(CLUSTER == 1 || (CLUSTER == 2 && PERSISTENT), "clusters of two, in the persistent kernel only");
    static_assert(!STREAMK || (PERSISTENT && STORE == 0), "stream-K: persistent, with the copy-engine epilogue");
    static_assert(!STORER || (STORE == 0 && !STREAMK), "storer warps: the copy-engine epilogue, whole tiles");
    static_assert(SPLIT == 0 || (STORER && SPLIT < WS_STAGES), "the split epilogue: halves handed to the storer warps");
    const int group = threadIdx.x / 128, k_tiles = (K + WS_BK - 1) / WS_BK;
    // With clusters the two blocks of a cluster take rows of tiles 2i and 2i + 1 of the same column: the work is
    // counted in such pairs (a pair past the last row computes zeros that it never stores).
    const unsigned rank = CLUSTER > 1 ? cluster_rank() : 0;
    const int tiles_m = (M + WS_BM * CLUSTER - 1) / (WS_BM * CLUSTER), tiles_n = (N + WS_BN - 1) / WS_BN;
    const int tiles = tiles_m * tiles_n;
    const int unit = PERSISTENT ? blockIdx.x / CLUSTER : blockIdx.y * gridDim.x + blockIdx.x;
    const int units = PERSISTENT ? gridDim.x / CLUSTER : tiles;
    if (threadIdx.x == 0) {
        for (int s = 0; s < WS_STAGES; ++s) {
            barrier_init_count(&full[s], 1);
            barrier_init_count(&empty[s], WS_CONSUMERS * 4 * CLUSTER);  // every consumer warp of the cluster is done
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    if (CLUSTER > 1)
        cluster_sync();              // both blocks' barriers exist before either block's copies name them
    else
        __syncthreads();

    // Both sides count the K-tiles they have passed over all of this block's tiles: stage it % WS_STAGES, and
    // it / WS_STAGES is how many times the ring went round (the parity of the phase to wait for).
    StreamK walk(tiles, k_tiles, units, unit, STREAMK);
    int t, kb, ke;
    if (group == 0) {                                                // the producer warpgroup
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x == 0) {
            int it = 0;
            while (walk.next(t, kb, ke)) {
                const int2 tile = ws_tile<PERSISTENT>(t, tiles_m, tiles_n);
                const int m0 = (tile.x * CLUSTER + rank) * WS_BM, n0 = tile.y * WS_BN;
                for (int kt = kb; kt < ke; ++kt, ++it) {
                    const int s = it % WS_STAGES;
                    if (it >= WS_STAGES)                             // the consumers released the last round
                        barrier_wait(&empty[s], (it / WS_STAGES - 1) & 1);
                    barrier_expect(&full[s], A_STAGE + B_STAGE);
                    tma_load_2d(a_tiles + s * A_STAGE, a_map, kt * WS_BK, m0, &full[s]);
                    if (CLUSTER == 1) {
                        tma_load_2d(b_tiles + s * B_STAGE, bt_map, kt * WS_BK, n0, &full[s]);
                    } else {                                         // this block's half of B, into both blocks
                        const int half = WS_BN / 2;
                        tma_load_2d_both(b_tiles + s * B_STAGE + rank * half * 128, bt_map, kt * WS_BK, n0 + rank * half,
                                         &full[s]);
                    }
                }
            }
        } else if (STORER && (threadIdx.x / 32 == 1 || threadIdx.x / 32 == 2)) {
            storer_warp<PERSISTENT, CLUSTER>(c_map, b_tiles + WS_STAGES * B_STAGE, threadIdx.x / 32 - 1, walk,
                                             tiles_m, tiles_n, rank);
        }
    } else {                                                         // a consumer warpgroup: 64 rows of the tile
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        const int c = group - 1;
        float d[128];
        float (&lo)[64] = reinterpret_cast<float (&)[64]>(d[0]);     // SPLIT: columns 0-127 of the tile
        float (&hi)[64] = reinterpret_cast<float (&)[64]>(d[64]);    // and 128-255 (the m64n256 layout's halves)
        bool owed = false;                                           // SPLIT: the tile before's right half, in hi
        unsigned char* const buffers = b_tiles + WS_STAGES * B_STAGE + c * 2 * C_BOX_BYTES;   // behind the ring
        int it = 0;
        while (walk.next(t, kb, ke)) {
            const int2 tile = ws_tile<PERSISTENT>(t, tiles_m, tiles_n);
            const int m0 = (tile.x * CLUSTER + rank) * WS_BM, n0 = tile.y * WS_BN;
            if (SPLIT && owed && ke - kb < SPLIT) {                  // too few K-tiles to hide the owed half under
                store_d_handed(hi, buffers, c);
                owed = false;
            }
            if (!(SPLIT && owed)) {
#pragma unroll
                for (int i = 0; i < 128; ++i)
                    d[i] = 0.0f;
            }
            int kt = kb;
            if (SPLIT && owed) {
                // The first SPLIT K-tiles on the left half, the owed right half stored under those wgmma, then the
                // same K-tiles on the right half.
#pragma unroll
                for (int q = 0; q < SPLIT; ++q) {
                    const int s = (it + q) % WS_STAGES;
                    barrier_wait(&full[s], ((it + q) / WS_STAGES) & 1);
                    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
                    wgmma_half_k_tile<F16>(lo, q == 0, descriptor_128b(a_tiles + s * A_STAGE + c * 64 * 128),
                                           descriptor_128b(b_tiles + s * B_STAGE));
                }
                store_d_handed(hi, buffers, c);
#pragma unroll
                for (int q = 0; q < SPLIT; ++q, ++it, ++kt) {
                    const int s = it % WS_STAGES;
                    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
                    wgmma_half_k_tile<F16>(hi, q == 0, descriptor_128b(a_tiles + s * A_STAGE + c * 64 * 128),
                                           descriptor_128b(b_tiles + s * B_STAGE + 128 * 128));
                    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
                    if (q > 0 && threadIdx.x % 32 == 0)              // both halves of the K-tile before are done
                        release<CLUSTER>(&empty[(it - 1) % WS_STAGES], rank);
                }
                owed = false;
            }
            for (; kt < ke; ++kt, ++it) {
                const int s = it % WS_STAGES;
                barrier_wait(&full[s], (it / WS_STAGES) & 1);
                asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
                // SPLIT: the halves as two m64n128k16 (an m64n256 on d next to m64n128s on its halves makes ptxas
                // copy the accumulators and serialise every wgmma, its message C7511)
#pragma unroll
                for (int kk = 0; kk < WS_BK / 16; ++kk)
                    if (SPLIT) {
                        wgmma_64x128x16<F16>(lo, descriptor_128b(a_tiles + s * A_STAGE + c * 64 * 128) + 2 * kk,
                                             descriptor_128b(b_tiles + s * B_STAGE) + 2 * kk);
                        wgmma_64x128x16<F16>(hi, descriptor_128b(a_tiles + s * A_STAGE + c * 64 * 128) + 2 * kk,
                                             descriptor_128b(b_tiles + s * B_STAGE + 128 * 128) + 2 * kk);
                    } else
                        wgmma_64x256x16<F16>(d, descriptor_128b(a_tiles + s * A_STAGE + c * 64 * 128) + 2 * kk,
                                        descriptor_128b(b_tiles + s * B_STAGE) + 2 * kk);
                asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
                if (OVERLAP) {                                       // the tile before is done: hand its stage back
                    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
                    if (kt > kb && threadIdx.x % 32 == 0)
                        release<CLUSTER>(&empty[(it - 1) % WS_STAGES], rank);
                } else {
                    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
                    if (threadIdx.x % 32 == 0)
                        release<CLUSTER>(&empty[s], rank);
                }
            }
            if (OVERLAP) {
                asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
                if (ke > kb && threadIdx.x % 32 == 0)
                    release<CLUSTER>(&empty[(it - 1) % WS_STAGES], rank);
            }
            // The accumulators are final here: keep the compiler from moving the epilogue's reads of them above the
            // last wait (ptxas would then serialise every wgmma to be safe).
#pragma unroll
            for (int i = 0; i < 128; ++i)
                asm volatile("" : "+f"(d[i])::"memory");
            if (STREAMK && ke < k_tiles) {                           // a part with another after it: add, in order
                await_part(flags + (walk.holder(t, ke) * CLUSTER + rank) * WS_CONSUMERS + c, epoch);
                store_d_tma<128, true>(d, c_map, buffers, c, m0 + 64 * c, n0);
            } else if (SPLIT) {                                      // the left half now, the right one owed
                store_d_handed(lo, buffers, c);
                owed = true;
            } else if (STORER)
                store_d_handed(d, buffers, c);
            else if (STORE == 0)
                store_d_tma(d, c_map, buffers, c, m0 + 64 * c, n0);
            else if (STORE == 4)
                store_d_quads(d, C, M, N, m0 + 64 * c, n0);
            else if (STORE == 2)
                store_d_pairs(d, C, M, N, m0 + 64 * c, n0);
            else
                store_d(d, C, M, N, m0 + 64 * c, n0);
            if (STREAMK && kb > 0)                                   // a part that the one before it waits for
                raise_when_stored(flags + blockIdx.x * WS_CONSUMERS + c, epoch);
        }
        if (SPLIT && owed)                                           // the last tile's right half
            store_d_handed(hi, buffers, c);
        if (STORE == 0 && !STORER && threadIdx.x % 128 == 0)         // every box has left before the block does
            asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
    if (CLUSTER > 1)
        cluster_sync();              // no block leaves while the other may still arrive on its barriers
}

// [/gemm_ws]

// [gemm_ws_variants]
// The steps, each with one more switch on: the ring alone, + overlapped waits, + persistent blocks, + paired stores,
// + clusters of two blocks that share each tile of B. The persistent ones take min(SMs, tiles of C) blocks in one
// row; the clustered one an even number, at most twice the clusters that fit on the GPU at once.
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1)
wgmma_gemm_ws_bf16(GEMM_PARAMS) { ws_gemm<false, false, 1, false>(&a_map, &bt_map, C, M, N, K); }
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1)
wgmma_gemm_ws_f16(GEMM_PARAMS) { ws_gemm<false, false, 1, true>(&a_map, &bt_map, C, M, N, K); }
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1)
wgmma_gemm_overlap_bf16(GEMM_PARAMS) { ws_gemm<true, false, 1, false>(&a_map, &bt_map, C, M, N, K); }
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1)
wgmma_gemm_overlap_f16(GEMM_PARAMS) { ws_gemm<true, false, 1, true>(&a_map, &bt_map, C, M, N, K); }
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1)
wgmma_gemm_persistent_bf16(GEMM_PARAMS) { ws_gemm<true, true, 1, false>(&a_map, &bt_map, C, M, N, K); }
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1)
wgmma_gemm_persistent_f16(GEMM_PARAMS) { ws_gemm<true, true, 1, true>(&a_map, &bt_map, C, M, N, K); }
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1)
wgmma_gemm_pairs_bf16(GEMM_PARAMS) { ws_gemm<true, true, 2, false>(&a_map, &bt_map, C, M, N, K); }
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1)
wgmma_gemm_pairs_f16(GEMM_PARAMS) { ws_gemm<true, true, 2, true>(&a_map, &bt_map, C, M, N, K); }
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1)
wgmma_gemm_quads_bf16(GEMM_PARAMS) { ws_gemm<true, true, 4, false>(&a_map, &bt_map, C, M, N, K); }
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1)
wgmma_gemm_quads_f16(GEMM_PARAMS) { ws_gemm<true, true, 4, true>(&a_map, &bt_map, C, M, N, K); }
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1) __cluster_dims__(2, 1, 1)
wgmma_gemm_cluster_bf16(GEMM_PARAMS) { ws_gemm<true, true, 2, false, 2>(&a_map, &bt_map, C, M, N, K); }
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1) __cluster_dims__(2, 1, 1)
wgmma_gemm_cluster_f16(GEMM_PARAMS) { ws_gemm<true, true, 2, true, 2>(&a_map, &bt_map, C, M, N, K); }
// [/gemm_ws_variants]

// [gemm_tma_store]
// The last step: the clustered kernel with its epilogue through the copy engine. C's tensor map (one more parameter)
// has boxes of 64 rows x 32 FP32 columns in the 128-byte swizzle; the host pads C's rows to a multiple of 16 bytes.
// Each consumer warpgroup adds two 8 KiB buffers behind the ring.
#define WGMMA_GEMM_TMA_STORE_SHARED (WGMMA_GEMM_WS_SHARED + WS_CONSUMERS * 2 * C_BOX_BYTES)
#define GEMM_TMA_STORE_PARAMS const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap bt_map, \
                              const __grid_constant__ CUtensorMap c_map, float* __restrict__ C, int M, int N, int K
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1) __cluster_dims__(2, 1, 1)
wgmma_gemm_tmastore_bf16(GEMM_TMA_STORE_PARAMS) { ws_gemm<true, true, 0, false, 2>(&a_map, &bt_map, C, M, N, K, &c_map); }
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1) __cluster_dims__(2, 1, 1)
wgmma_gemm_tmastore_f16(GEMM_TMA_STORE_PARAMS) { ws_gemm<true, true, 0, true, 2>(&a_map, &bt_map, C, M, N, K, &c_map); }
// [/gemm_tma_store]

// [gemm_storer]
// The last two steps: the stores issued by two idle warps of the producer warpgroup (STORER), then half of each
// tile's epilogue stored under the next tile's first two K-tiles (SPLIT = 2). Parameters, grid and shared memory as
// wgmma_gemm_tmastore_*'s.
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1) __cluster_dims__(2, 1, 1)
wgmma_gemm_storer_bf16(GEMM_TMA_STORE_PARAMS) { ws_gemm<true, true, 0, false, 2, false, true>(&a_map, &bt_map, C, M, N, K, &c_map); }
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1) __cluster_dims__(2, 1, 1)
wgmma_gemm_storer_f16(GEMM_TMA_STORE_PARAMS) { ws_gemm<true, true, 0, true, 2, false, true>(&a_map, &bt_map, C, M, N, K, &c_map); }
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1) __cluster_dims__(2, 1, 1)
wgmma_gemm_split_bf16(GEMM_TMA_STORE_PARAMS) { ws_gemm<true, true, 0, false, 2, false, true, 2>(&a_map, &bt_map, C, M, N, K, &c_map); }
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1) __cluster_dims__(2, 1, 1)
wgmma_gemm_split_f16(GEMM_TMA_STORE_PARAMS) { ws_gemm<true, true, 0, true, 2, false, true, 2>(&a_map, &bt_map, C, M, N, K, &c_map); }
// [/gemm_storer]

// [gemm_streamk_entry]
// Beside the ladder: the last step with its last round shared out (STREAMK). Two more parameters: the flags and the
// launch's epoch (see streamk_handoff).
#define GEMM_STREAMK_PARAMS GEMM_TMA_STORE_PARAMS, unsigned* __restrict__ flags, unsigned epoch
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1) __cluster_dims__(2, 1, 1)
wgmma_gemm_streamk_bf16(GEMM_STREAMK_PARAMS) { ws_gemm<true, true, 0, false, 2, true>(&a_map, &bt_map, C, M, N, K, &c_map, flags, epoch); }
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1) __cluster_dims__(2, 1, 1)
wgmma_gemm_streamk_f16(GEMM_STREAMK_PARAMS) { ws_gemm<true, true, 0, true, 2, true>(&a_map, &bt_map, C, M, N, K, &c_map, flags, epoch); }
// [/gemm_streamk_entry]

// [gemm_pingpong]
// Ping-pong consumers. In ws_gemm both consumer warpgroups finish a 128 x 256 tile together and both store it while
// the tensor cores wait. Here each consumer owns whole 128 x 128 tiles (two wgmma m64n128k16 per 16-deep step, 128
// accumulators per thread as before): consumer 0 takes the block's tiles 0, 2, 4, ..., consumer 1 tiles 1, 3, 5, ...,
// and while one runs the main loop of its tile the other stores the tile it has just finished. The producer fills the
// ring in the order the tiles are taken, so the ring is ws_gemm's single queue; only who empties a stage changes.
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
#define PP_BM 128
#define PP_BN 128
#define PP_STAGES 6
#define PP_A_STAGE (PP_BM * WS_BK * 2)
#define PP_B_STAGE (PP_BN * WS_BK * 2)
// 6 stages of 32 KiB beside the consumers' store buffers: as much as wgmma_gemm_tmastore_* asks for.
#define PINGPONG_SHARED (1024 + PP_STAGES * (PP_A_STAGE + PP_B_STAGE) + WS_CONSUMERS * 2 * C_BOX_BYTES)
static_assert(PINGPONG_SHARED + 1024 <= 232448, "ring, store buffers and static shared memory within 227 KiB");

// D (128 x 128, two m64n128 halves) += A (128 x 16) * B (16 x 128). The second half's rows of A start 64 rows (8 KiB,
// whole periods of the swizzle) further into the stage, so the same descriptor layout holds.
template <bool F16>
__device__ __forceinline__ void wgmma_128x128x16(float (&d)[2][64], const unsigned char* a, const unsigned char* b, int kk)
{
    wgmma_64x128x16<F16>(d[0], descriptor_128b(a) + 2 * kk, descriptor_128b(b) + 2 * kk);
    wgmma_64x128x16<F16>(d[1], descriptor_128b(a + 64 * 128) + 2 * kk, descriptor_128b(b) + 2 * kk);
}

template <bool F16>
__device__ __forceinline__ void pingpong_gemm(const CUtensorMap* a_map, const CUtensorMap* bt_map,
                                              const CUtensorMap* c_map, int M, int N, int K)
{
    extern __shared__ unsigned char ring_raw[];
    unsigned char* base = ring_raw + ((1024 - tma_smem(ring_raw) % 1024) % 1024);
    unsigned char* a_tiles = base;                                   // PP_STAGES tiles of 128 rows x 128 bytes
    unsigned char* b_tiles = base + PP_STAGES * PP_A_STAGE;          // PP_STAGES tiles of 128 rows x 128 bytes
    unsigned char* boxes = b_tiles + PP_STAGES * PP_B_STAGE;         // two 8 KiB store buffers per consumer
    __shared__ __align__(8) uint64_t full[PP_STAGES], empty[PP_STAGES], turn[WS_CONSUMERS];
    static_assert(WS_CONSUMERS == 2, "two consumers take turns");
    const int group = threadIdx.x / 128, k_tiles = (K + WS_BK - 1) / WS_BK;
    const int tiles_m = (M + PP_BM - 1) / PP_BM, tiles_n = (N + PP_BN - 1) / PP_BN, tiles = tiles_m * tiles_n;
    if (threadIdx.x == 0) {
        for (int s = 0; s < PP_STAGES; ++s) {
            barrier_init_count(&full[s], 1);
            barrier_init_count(&empty[s], 4);                        // the 4 warps of the stage's one consumer
        }
        for (int c = 0; c < WS_CONSUMERS; ++c)
            barrier_init_count(&turn[c], 4);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (group == 0) {                                                // the producer warpgroup, as in ws_gemm
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x == 0) {
            int it = 0;
            for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
                const int2 tile = ws_tile<true>(t, tiles_m, tiles_n);
                for (int kt = 0; kt < k_tiles; ++kt, ++it) {
                    const int s = it % PP_STAGES;
                    if (it >= PP_STAGES)
                        barrier_wait(&empty[s], (it / PP_STAGES - 1) & 1);
                    barrier_expect(&full[s], PP_A_STAGE + PP_B_STAGE);
                    tma_load_2d(a_tiles + s * PP_A_STAGE, a_map, kt * WS_BK, tile.x * PP_BM, &full[s]);
                    tma_load_2d(b_tiles + s * PP_B_STAGE, bt_map, kt * WS_BK, tile.y * PP_BN, &full[s]);
                }
            }
        }
    } else {                                                         // a consumer warpgroup: every other tile
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        const int c = group - 1;
        const bool lead = threadIdx.x % 32 == 0;
        float d[2][64];
        for (int i = c, t = blockIdx.x + c * gridDim.x; t < tiles; i += 2, t += 2 * gridDim.x) {
            const int2 tile = ws_tile<true>(t, tiles_m, tiles_n);
#pragma unroll
            for (int h = 0; h < 2; ++h)
#pragma unroll
                for (int r = 0; r < 64; ++r)
                    d[h][r] = 0.0f;
            if (i > 0)                                               // wait for tile i - 1's main loop to be issued
                barrier_wait(&turn[1 - c], ((i - 1) / 2) & 1);
            int it = i * k_tiles;
            for (int kt = 0; kt < k_tiles; ++kt, ++it) {
                const int s = it % PP_STAGES;
                barrier_wait(&full[s], (it / PP_STAGES) & 1);
                asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
                for (int kk = 0; kk < WS_BK / 16; ++kk)
                    wgmma_128x128x16<F16>(d, a_tiles + s * PP_A_STAGE, b_tiles + s * PP_B_STAGE, kk);
                asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
                asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");     // the K-tile before is done
                if (kt > 0 && lead)
                    barrier_arrive(&empty[(it - 1) % PP_STAGES]);
            }
            if (lead)                                                // the other consumer's turn: its wgmma queue
                barrier_arrive(&turn[c]);                            // behind this tile's last ones
            asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
            if (k_tiles > 0 && lead)
                barrier_arrive(&empty[(it - 1) % PP_STAGES]);
            // Final here: keep the epilogue's reads below the last wait (else ptxas serialises every wgmma).
#pragma unroll
            for (int h = 0; h < 2; ++h)
#pragma unroll
                for (int r = 0; r < 64; ++r)
                    asm volatile("" : "+f"(d[h][r])::"memory");
            // Each half is a 64 x 128 wgmma result, the layout store_d_tma reads: 8 boxes per tile, an even number,
            // so the two buffers keep alternating across halves and tiles.
            store_d_tma(d[0], c_map, boxes + c * 2 * C_BOX_BYTES, c, tile.x * PP_BM, tile.y * PP_BN);
            store_d_tma(d[1], c_map, boxes + c * 2 * C_BOX_BYTES, c, tile.x * PP_BM + 64, tile.y * PP_BN);
        }
        if (threadIdx.x % 128 == 0)                                  // every box has left before the block does
            asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}
// [/gemm_pingpong]
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1)
wgmma_gemm_pingpong_bf16(GEMM_TMA_STORE_PARAMS) { pingpong_gemm<false>(&a_map, &bt_map, &c_map, M, N, K); }
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1)
wgmma_gemm_pingpong_f16(GEMM_TMA_STORE_PARAMS) { pingpong_gemm<true>(&a_map, &bt_map, &c_map, M, N, K); }
