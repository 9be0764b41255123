// Chapter 8: GEMM on the tensor cores. C (M x N) is FP32, row-major, and every product is accumulated in FP32.
// FP16 and BF16: A (M x K) and B (K x N) hold 16-bit values, row-major. TF32: A (M x K) and B's transpose
// (N x K) hold FP32 values already rounded to TF32, row-major: K runs along the rows of both, because ldmatrix
// can transpose 16-bit elements only, and a TF32 B fragment wants B's columns (the launcher stores B that way).
//
// The launcher (gemmlab.tensor_gemm) converts the FP32 operands and pads each row with zeros to a multiple of
// 16 bytes: lda = K rounded up to 8 (16-bit) or 4 (TF32), ldb = N rounded up to 8 (16-bit), ldb = K rounded up
// to 4 (TF32, B's transpose). Every 16-byte chunk the kernels copy is then either wholly inside a row or wholly in
// its padding, so one predicate per chunk handles every size, 1 x 1 x 1 included: chunks along a padded row up to
// its length (the padding is zeros), rows up to their number (B has K rows in 16 bits: the rows k >= K of a tile
// are filled with zeros, never read: memory there could hold a NaN, and 0 x NaN is NaN).
//
//   tc_wmma_<type>                 - the first step: WMMA fragments (16 x 16 x 16) from shared-memory tiles.
//   tc_mma_<config>_<type>         - mma.sync (m16n8k16; m16n8k8 for TF32) fed by ldmatrix, one template, switched per config:
//        SWIZZLE  XOR swizzle of 16-byte chunks in the shared tiles (gemmlab.mma.swizzle_chunk), so that
//                 every ldmatrix and every tile store is free of bank conflicts;
//        ASYNC    cp.async copies global -> shared in a ring of STAGES tiles (sm_80+; compiled for sm_75 the
//                 copies are plain 16-byte loads and stores, and the ring still runs);
//        PREFETCH the next k-step's fragments loaded while this one's mma run, across tiles too;
//        SPREAD   the next tile's cp.async copies issued a share per k-step instead of all at once;
//        INNER    a block wholly inside C copies its whole K-tiles without bounds checks, from source
//                 pointers carried along K;
//        TAIL     the tiles of a half-empty last wave shared out over one block per SM (stream-K, tc_tail below;
//                 two more parameters, and C's shared tiles zeroed first by tc_tail_zero);
//        BM x BN x BK block tile, WM x WN warp tile.
//   <type>: f16, bf16 or tf32. On sm_75 (a T4) there is no BF16 or TF32 tensor-core instruction: those entry points
//   stop with a trap there, and the launcher refuses them before that.
//   tc_tma_ws_k<BK>_s<STAGES>_<type> (a_map, b_map, C, M, N, K) - Hopper only (sm_90a, f16 and bf16): tc_inner's
//        128 x 256 tile and warp tiles, its tiles copied by the SM's copy engine (tensor maps, chapter 9) for a
//        producer warpgroup of its own, the 8 warps that multiply waiting on mbarriers instead of __syncthreads().
//        Compiled only in gemmlab's second unit of this file (TC_TMA_WS defined, gemmlab.compile_units.arch_unit).
//
// One k-step of 16 is one m16n8k16 on sm_80+; on sm_75 it is two m16n8k8, whose fragments are the two halves of
// the m16n8k16 ones (gemmlab.mma gives both layouts).

#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <mma.h>
#include <stdint.h>

#define TC_GROUP 8      // block rows walked together, so that neighbouring blocks share tiles of A and B in the L2

__device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// [copy16]
// One 16-byte chunk global -> shared; a chunk outside the matrix is written as zeros. With cp.async the copy
// runs in the background until cp.async.wait_group; src-size 0 copies nothing and fills 16 zero bytes.
template <bool ASYNC>
__device__ __forceinline__ void copy16(void* dst, const void* src, bool inside)
{
#if __CUDA_ARCH__ >= 800
    if constexpr (ASYNC) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_u32(dst)), "l"(src), "r"(inside ? 16 : 0));
        return;
    }
#endif
    *static_cast<uint4*>(dst) = inside ? *static_cast<const uint4*>(src) : make_uint4(0, 0, 0, 0);
}

__device__ __forceinline__ void copy_commit()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;");
#endif
}

template <int PENDING>
__device__ __forceinline__ void copy_wait()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;" ::"n"(PENDING));
#endif
}
// [/copy16]

// [ldmatrix]
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(p)));
}

__device__ __forceinline__ void ldmatrix_x4(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3, const void* p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(smem_u32(p)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3, const void* p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(smem_u32(p)));
}
// [/ldmatrix]

// [mma]
// c += a * b for one k-step: a = 4 registers of A (16 x 16 16-bit, or 16 x 8 TF32), b = 2 of B, c = 4 floats.
enum Kind { F16 = 0, BF16 = 1, TF32 = 2 };

template <int KIND>
__device__ __forceinline__ void mma_step(float (&c)[4], const unsigned (&a)[4], const unsigned* b)
{
#if __CUDA_ARCH__ >= 800
    if constexpr (KIND == TF32)
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                     "{%8, %9}, {%0, %1, %2, %3};"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else if constexpr (KIND == BF16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                     "{%8, %9}, {%0, %1, %2, %3};"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                     "{%8, %9}, {%0, %1, %2, %3};"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    if constexpr (KIND != F16) {
        __trap();       // sm_75 has no BF16 or TF32 mma; the launcher refuses before this
    } else {
        // k 0..7: A registers 0, 1 and B register 0; k 8..15: A registers 2, 3 and B register 1
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, "
                     "{%0, %1, %2, %3};"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(b[0]));
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, "
                     "{%0, %1, %2, %3};"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a[2]), "r"(a[3]), "r"(b[1]));
    }
#endif
}

// A warp's MI x NI grid of accumulator tiles (MI 16-row blocks of A by NI 8-column blocks of B): all set to zero,
// and one k-step added to each, fragment i of A times fragment j of B.
template <int MI, int NI>
__device__ __forceinline__ void zero_grid(float (&acc)[MI][NI][4])
{
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e)
                acc[i][j][e] = 0.0f;
}

template <int KIND, int MI, int NI>
__device__ __forceinline__ void mma_grid(float (&acc)[MI][NI][4], const unsigned (&a)[MI][4], const unsigned (&b)[NI][2])
{
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
            mma_step<KIND>(acc[i][j], a[i], b[j]);
}
// [/mma]

// [swizzle]
// Byte offset of 16-byte chunk `chunk` of row `row` in a tile with rows of ROW bytes. Swizzled, the chunk moves
// within its row to chunk ^ (the row's 128-byte line, modulo the chunks a row has, at most 8): eight rows that
// read the same logical chunk then hit eight different sets of four banks. Same rule as gemmlab.mma.swizzle_chunk.
template <int ROW, bool SWIZZLE>
__device__ __forceinline__ int chunk_offset(int row, int chunk)
{
    constexpr int CHUNKS = ROW / 16;
    constexpr int ROWS_PER_LINE = ROW >= 128 ? 1 : 128 / ROW;
    constexpr int SPAN = CHUNKS < 8 ? CHUNKS : 8;
    if constexpr (SWIZZLE)
        chunk ^= (row / ROWS_PER_LINE) % SPAN;
    return row * ROW + chunk * 16;
}
// [/swizzle]

// Tile (bm, bn) number `id` of C's tiles: TC_GROUP block rows at a time, column by column, so that the blocks
// running together read a few rows of A and columns of B many times over from the L2.
__device__ __forceinline__ void tile_coords(int M, int N, int BM, int BN, int id, int& bm, int& bn)
{
    const int grid_m = (M + BM - 1) / BM, grid_n = (N + BN - 1) / BN;
    const int first = id / (TC_GROUP * grid_n) * TC_GROUP;
    const int rows = min(grid_m - first, TC_GROUP);
    const int in_group = id % (TC_GROUP * grid_n);
    bm = first + in_group % rows;
    bn = in_group / rows;
}

// The tile of this block: tile number blockIdx, in the order of tile_coords.
__device__ __forceinline__ void block_coords(int M, int N, int BM, int BN, int& bm, int& bn)
{
    tile_coords(M, N, BM, BN, blockIdx.y * gridDim.x + blockIdx.x, bm, bn);
}

// Two FP32 results of one lane (row r, columns c and c + 1) into C, as one float2 where that is legal.
__device__ __forceinline__ void store_pair(float* C, int M, int N, int r, int c, float v0, float v1)
{
    if (r >= M)
        return;
    float* p = C + static_cast<size_t>(r) * N + c;
    if (c + 1 < N && (N & 1) == 0) {
        *reinterpret_cast<float2*>(p) = make_float2(v0, v1);
    } else {
        if (c < N) p[0] = v0;
        if (c + 1 < N) p[1] = v1;
    }
}

// The same two results added into C, for a tile whose K-tiles several blocks share (TAIL).
__device__ __forceinline__ void add_pair(float* C, int M, int N, int r, int c, float v0, float v1)
{
    if (r >= M)
        return;
    float* p = C + static_cast<size_t>(r) * N + c;
    if (c < N) atomicAdd(p, v0);
    if (c + 1 < N) atomicAdd(p + 1, v1);
}

// K-tiles of BK elements in a row of A padded as the launcher pads it (8 16-bit or 4 TF32 elements per 16 bytes).
template <int BK, int KIND>
__device__ __forceinline__ int k_tiles(int K)
{
    constexpr int PER_CHUNK = KIND == TF32 ? 4 : 8;
    return ((K + PER_CHUNK - 1) / PER_CHUNK * PER_CHUNK + BK - 1) / BK;
}

// [tc_gemm]
// K-tiles kt_lo .. kt_hi - 1 of C's tile (bm, bn): stored into C, or with `add` added to what C holds (TAIL, below).
template <int BM, int BN, int BK, int WM, int WN, int STAGES, bool SWIZZLE, bool ASYNC, bool PREFETCH, bool SPREAD, bool INNER,
          int KIND>
__device__ __forceinline__ void tc_gemm(const unsigned char* __restrict__ A, const unsigned char* __restrict__ B,
                                        float* __restrict__ C, int M, int N, int K, int bm, int bn, int kt_lo,
                                        int kt_hi, bool add)
{
    constexpr int WARPS_N = BN / WN, THREADS = 32 * (BM / WM) * WARPS_N;
    constexpr int MI = WM / 16, NI = WN / 8;                   // m16 and n8 fragments per warp
    constexpr int ELEM = KIND == TF32 ? 4 : 2, PER_CHUNK = 16 / ELEM;
    constexpr int A_ROW = BK * ELEM;                           // bytes per row of the A tile (BM rows)
    constexpr bool B_KMAJOR = KIND == TF32;                    // TF32: the B tile holds B's transpose, BN rows of K
    constexpr int B_ROWS = B_KMAJOR ? BN : BK, B_ROW = B_KMAJOR ? A_ROW : BN * ELEM;
    constexpr int A_CHUNKS = BM * A_ROW / 16, B_CHUNKS = B_ROWS * B_ROW / 16;
    constexpr int STAGE = BM * A_ROW + B_ROWS * B_ROW;
    constexpr int KSTEPS = A_ROW / 32;                          // a k-step is 32 bytes of K: 16 x 16-bit, 8 x TF32
#if __CUDA_ARCH__ >= 800
    constexpr int RING = STAGES;
#else
    constexpr int RING = 2;         // sm_75 copies synchronously: more stages would only cost registers
#endif
    static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 16 == 0 && A_ROW % 64 == 0, "tile shapes");
    static_assert(A_CHUNKS % THREADS == 0 && B_CHUNKS % THREADS == 0, "every thread copies whole chunks");
    static_assert(STAGES >= 2 && (ASYNC || STAGES == 2), "a ring of stages needs cp.async");
    static_assert(PREFETCH || !SPREAD, "spreading the copies over the k-steps is part of the prefetching loop");

    extern __shared__ __align__(128) unsigned char smem[];
    const int lda = (K + PER_CHUNK - 1) / PER_CHUNK * PER_CHUNK;          // elements per row of A
    const int ldb = B_KMAJOR ? lda : (N + PER_CHUNK - 1) / PER_CHUNK * PER_CHUNK;
    const int m0 = bm * BM, n0 = bn * BN;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int wm0 = warp / WARPS_N * WM, wn0 = warp % WARPS_N * WN;

    // [load_tile]
    // Each thread's copies, planned once: THREADS is a multiple of the chunks in a row, so all of a thread's chunks
    // of a tile sit in one 16-byte column, STEP rows apart, and (STEP being a multiple of 8) at
    // one swizzled column too. A copy is then a base plus constants; `part` of `parts` lets the copies of a tile be
    // spread over the k-steps of the tile before. Chunk q: A's first, then B's.
    constexpr int A_CPR = A_ROW / 16, B_CPR = B_ROW / 16;                  // chunks per row
    constexpr int A_STEP = THREADS / A_CPR, B_STEP = THREADS / B_CPR;      // rows between a thread's chunks
    constexpr int A_PER = A_CHUNKS / THREADS, B_PER = B_CHUNKS / THREADS;
    static_assert(THREADS % A_CPR == 0 && THREADS % B_CPR == 0 && A_STEP % 8 == 0 && B_STEP % 8 == 0,
                  "a thread's chunks share a (swizzled) column");
    const int a_r = threadIdx.x / A_CPR, a_ch = threadIdx.x % A_CPR;
    const int b_r = threadIdx.x / B_CPR, b_ch = threadIdx.x % B_CPR;
    const int a_dst = chunk_offset<A_ROW, SWIZZLE>(a_r, a_ch), b_dst = chunk_offset<B_ROW, SWIZZLE>(b_r, b_ch);
    const unsigned char* a_src = A + (static_cast<size_t>(m0 + a_r) * lda + PER_CHUNK * a_ch) * ELEM;
    const unsigned char* b_src = B_KMAJOR ? B + (static_cast<size_t>(n0 + b_r) * ldb + PER_CHUNK * b_ch) * ELEM
                                          : B + (static_cast<size_t>(b_r) * ldb + n0 + PER_CHUNK * b_ch) * ELEM;
    // INNER: a block whose tile lies wholly inside C copies each K-tile that lies wholly inside K without a
    // predicate, from pointers that only move along K; tiles at an edge take the checked copies below. Per tile this
    // saves each copy its bounds checks and address arithmetic (and false, the branch compiles away).
    const bool inner = INNER && m0 + BM <= M && (B_KMAJOR ? n0 + BN <= N : n0 + BN <= ldb);
    const size_t a_step = static_cast<size_t>(A_STEP) * lda * ELEM, b_step = static_cast<size_t>(B_STEP) * ldb * ELEM;
    // The inner copies' sources, carried from tile to tile rather than recomputed from k0: load_tile runs for
    // kt = 0, 1, 2, ... in order (a tile's parts in order too), and a block's unchecked tiles come first, so
    // they point at tile kt whenever it takes the unchecked path. Carried, the kernel is 2.5-3% faster
    // (results/carried-pointers-h200.txt); recomputed, their registers were reused a few instructions after the copies.
    const size_t b_kstep = static_cast<size_t>(BK) * (B_KMAJOR ? 1 : ldb) * ELEM;
    const unsigned char* pa_k = a_src + static_cast<size_t>(kt_lo) * BK * ELEM;
    const unsigned char* pb_k = b_src + kt_lo * b_kstep;
    auto load_tile = [&](int kt, int stage, int part, int parts) {
        unsigned char* as = smem + stage * STAGE;
        unsigned char* bs = as + BM * A_ROW;
        const int k0 = (kt_lo + kt) * BK;       // kt counts from the first K-tile of this call
        // if constexpr: without INNER nothing of this path is compiled (the captured pointers alone changed nvcc's
        // code for the other configurations, and cost tc_mma 5-8%)
        if constexpr (INNER) if (inner && k0 + BK <= K) {
            const unsigned char* pa = pa_k;
            const unsigned char* pb = pb_k;
            if (part == parts - 1) { pa_k += BK * ELEM; pb_k += b_kstep; }
#pragma unroll
            for (int q = 0; q < A_PER + B_PER; ++q) {
                if (q % parts != part)
                    continue;
                if (q < A_PER)
                    copy16<ASYNC>(as + a_dst + q * A_STEP * A_ROW, pa + q * a_step, true);
                else
                    copy16<ASYNC>(bs + b_dst + (q - A_PER) * B_STEP * B_ROW, pb + (q - A_PER) * b_step, true);
            }
            return;
        }
#pragma unroll
        for (int q = 0; q < A_PER + B_PER; ++q) {
            if (q % parts != part)
                continue;
            if (q < A_PER) {
                const bool inside = m0 + a_r + q * A_STEP < M && k0 + PER_CHUNK * a_ch < lda;
                copy16<ASYNC>(as + a_dst + q * A_STEP * A_ROW,
                              inside ? a_src + (static_cast<size_t>(q * A_STEP) * lda + k0) * ELEM : A, inside);
            } else if constexpr (B_KMAJOR) {
                const int p = q - A_PER;
                const bool inside = n0 + b_r + p * B_STEP < N && k0 + PER_CHUNK * b_ch < ldb;
                copy16<ASYNC>(bs + b_dst + p * B_STEP * B_ROW,
                              inside ? b_src + (static_cast<size_t>(p * B_STEP) * ldb + k0) * ELEM : B, inside);
            } else {
                const int p = q - A_PER;   // B has K rows (padded in length, not in number)
                const bool inside = k0 + b_r + p * B_STEP < K && n0 + PER_CHUNK * b_ch < ldb;
                copy16<ASYNC>(bs + b_dst + p * B_STEP * B_ROW,
                              inside ? b_src + static_cast<size_t>(k0 + p * B_STEP) * ldb * ELEM : B, inside);
            }
        }
    };
    // [/load_tile]

    float acc[MI][NI][4];
    zero_grid(acc);

    // [warp_step]
    // The warp's fragments for one k-step (32 bytes of K): A by ldmatrix.x4, a 16-row block whose lane l points at
    // row l % 16, chunk l / 16 (the same in bytes for 16-bit and TF32 elements). B, 16-bit: ldmatrix.x4.trans, two
    // 8-column blocks; lane l points at k-row l % 8 + 8 * (l / 8 % 2), column block l / 16. B, TF32 (B's transpose in
    // the tile): ldmatrix.x4 without .trans; lane l points at n-row l % 8 + 8 * (l / 16), chunk l / 8 % 2.
    // Rows 16 apart swizzle alike, so a few offsets per lane, computed once, serve every fragment.
    // Two sets, so that the next k-step's loads are in flight during this one's mma.
    static_assert(B_KMAJOR || B_ROW >= 128, "B's rows of at least 128 bytes: 16 k-rows apart swizzle alike");
    constexpr int B_OFFS = B_KMAJOR ? KSTEPS : NI / 2;
    int a_off[KSTEPS], b_off[B_OFFS];
#pragma unroll
    for (int kk = 0; kk < KSTEPS; ++kk)
        a_off[kk] = chunk_offset<A_ROW, SWIZZLE>(wm0 + lane % 16, 2 * kk + lane / 16);
#pragma unroll
    for (int t = 0; t < B_OFFS; ++t)
        b_off[t] = B_KMAJOR ? BM * A_ROW + chunk_offset<B_ROW, SWIZZLE>(wn0 + lane % 8 + 8 * (lane / 16), 2 * t + lane / 8 % 2)
                            : BM * A_ROW + chunk_offset<B_ROW, SWIZZLE>(lane % 8 + 8 * (lane / 8 % 2), (wn0 + 16 * t) / 8 + lane / 16);
    unsigned a[2][MI][4], b[2][NI][2];
    auto load_fragments = [&](int stage, int kk, int set) {
        const unsigned char* st = smem + stage * STAGE;
#pragma unroll
        for (int i = 0; i < MI; ++i)
            ldmatrix_x4(a[set][i], st + a_off[kk] + 16 * i * A_ROW);
#pragma unroll
        for (int j = 0; j < NI / 2; ++j) {
            if constexpr (B_KMAJOR)
                ldmatrix_x4(b[set][2 * j][0], b[set][2 * j][1], b[set][2 * j + 1][0], b[set][2 * j + 1][1],
                            st + b_off[kk] + 16 * j * B_ROW);
            else
                ldmatrix_x4_trans(b[set][2 * j][0], b[set][2 * j][1], b[set][2 * j + 1][0], b[set][2 * j + 1][1],
                                  st + b_off[j] + 16 * kk * B_ROW);
        }
    };
    auto mma_all = [&](int set) { mma_grid<KIND>(acc, a[set], b[set]); };
    // [/warp_step]

    // [pipeline]
    // A ring of RING tiles (STAGES; 2 on sm_75): RING - 1 in flight while the warps compute on the oldest. Tile kt + RING - 1
    // goes into the stage that tile kt - 1 used, once every warp is past the barrier that ended its reads.
    // Without PREFETCH each tile starts with a wait (at most RING - 2 younger copies pending) and a barrier,
    // and each k-step loads its fragments, then multiplies. With PREFETCH the fragments of step kk + 1 are
    // loaded before the mma of step kk, across tiles too: the wait and the barrier for tile kt + 1 come at the
    // last k-step of tile kt, before its first fragments are read. With SPREAD the copies of tile kt + RING - 1
    // are issued a share per k-step of tile kt, between the mma, and committed as one group at its last k-step.
    const int tiles = kt_hi - kt_lo;
#pragma unroll
    for (int s = 0; s < RING - 1; ++s) {
        if (s < tiles)
            load_tile(s, s, 0, 1);
        copy_commit();
    }
    if constexpr (!PREFETCH) {
        for (int kt = 0; kt < tiles; ++kt) {
            copy_wait<RING - 2>();
            __syncthreads();
            const int next = kt + RING - 1;
            if (next < tiles)
                load_tile(next, next % RING, 0, 1);
            copy_commit();
#pragma unroll
            for (int kk = 0; kk < KSTEPS; ++kk) {
                load_fragments(kt % RING, kk, 0);
                mma_all(0);
            }
        }
    } else {
        static_assert(KSTEPS % 2 == 0, "two fragment sets alternate: an even number of k-steps per tile");
        copy_wait<RING - 2>();
        __syncthreads();
        load_fragments(0, 0, 0);
        for (int kt = 0; kt < tiles; ++kt) {
            const int next = kt + RING - 1;
#pragma unroll
            for (int kk = 0; kk < KSTEPS; ++kk) {
                if (SPREAD || kk == 0) {
                    if (next < tiles)
                        load_tile(next, next % RING, SPREAD ? kk : 0, SPREAD ? KSTEPS : 1);
                    if (!SPREAD || kk == KSTEPS - 1)
                        copy_commit();
                }
                if (kk < KSTEPS - 1) {
                    load_fragments(kt % RING, kk + 1, (kk + 1) % 2);
                } else {
                    copy_wait<RING - 2>();
                    __syncthreads();
                    if (kt + 1 < tiles)
                        load_fragments((kt + 1) % RING, 0, 0);
                }
                mma_all(kk % 2);
            }
        }
    }
    // [/pipeline]

    // [epilogue]
    // Lane l holds, per fragment, rows l / 4 and l / 4 + 8, columns 2 * (l % 4) and + 1 (the C layout of mma).
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j) {
            const int r = m0 + wm0 + 16 * i + lane / 4, c = n0 + wn0 + 8 * j + 2 * (lane % 4);
            if (add) {
                add_pair(C, M, N, r, c, acc[i][j][0], acc[i][j][1]);
                add_pair(C, M, N, r + 8, c, acc[i][j][2], acc[i][j][3]);
            } else {
                store_pair(C, M, N, r, c, acc[i][j][0], acc[i][j][1]);
                store_pair(C, M, N, r + 8, c, acc[i][j][2], acc[i][j][3]);
            }
        }
    // [/epilogue]
}
// [/tc_gemm]

// One block, one whole tile: the tile of this block, all of K, stored.
template <int BM, int BN, int BK, int WM, int WN, int STAGES, bool SWIZZLE, bool ASYNC, bool PREFETCH, bool SPREAD, bool INNER,
          int KIND>
__device__ __forceinline__ void tc_tile(const void* A, const void* B, float* C, int M, int N, int K)
{
    int bm, bn;
    block_coords(M, N, BM, BN, bm, bn);
    tc_gemm<BM, BN, BK, WM, WN, STAGES, SWIZZLE, ASYNC, PREFETCH, SPREAD, INNER, KIND>(
        static_cast<const unsigned char*>(A), static_cast<const unsigned char*>(B), C, M, N, K, bm, bn, 0,
        k_tiles<BK, KIND>(K), false);
}

// [tail]
// TAIL: a stream-K tail. Tiles 0 .. full_tiles - 1 (whole waves of them) run one block each, as tc_tile runs them.
// The K-tiles of the tiles left over, the last wave's, are shared out evenly over `units` more blocks: block u runs
// K-tiles [u * work / units, (u + 1) * work / units) of their sequence (tile by tile, K-tile by K-tile), through
// one, two or more tiles, and adds each part into C, which tc_tail_zero set to zero there first. The adds meet in
// an order that varies between launches, so the last bits of those tiles may vary too (as chapter 7's split-K).
template <int BM, int BN, int BK, int WM, int WN, int STAGES, bool SWIZZLE, bool ASYNC, bool PREFETCH, bool SPREAD, bool INNER,
          int KIND>
__device__ __forceinline__ void tc_tail(const void* A, const void* B, float* C, int M, int N, int K, int full_tiles,
                                        int units)
{
    const auto* a = static_cast<const unsigned char*>(A);
    const auto* b = static_cast<const unsigned char*>(B);
    const int kpt = k_tiles<BK, KIND>(K);
    int bm, bn;
    if (static_cast<int>(blockIdx.x) < full_tiles) {
        block_coords(M, N, BM, BN, bm, bn);
        tc_gemm<BM, BN, BK, WM, WN, STAGES, SWIZZLE, ASYNC, PREFETCH, SPREAD, INNER, KIND>(a, b, C, M, N, K, bm, bn, 0,
                                                                                         kpt, false);
        return;
    }
    const int tiles = ((M + BM - 1) / BM) * ((N + BN - 1) / BN);
    const long long u = blockIdx.x - full_tiles, work = static_cast<long long>(tiles - full_tiles) * kpt;
    long long lo = u * work / units;
    const long long hi = (u + 1) * work / units;
    while (lo < hi) {
        const int t = static_cast<int>(lo / kpt), kt = static_cast<int>(lo % kpt);
        const long long end = min(hi, static_cast<long long>(t + 1) * kpt);
        tile_coords(M, N, BM, BN, full_tiles + t, bm, bn);
        tc_gemm<BM, BN, BK, WM, WN, STAGES, SWIZZLE, ASYNC, PREFETCH, SPREAD, INNER, KIND>(
            a, b, C, M, N, K, bm, bn, kt, kt + static_cast<int>(end - lo), true);
        lo = end;
        __syncthreads();        // the next part's copies reuse the stages this part's last fragments came from
    }
}

// Before tc_tail: the tiles from full_tiles on (one block of 256 threads each) set to zero, for the adds.
extern "C" __global__ void __launch_bounds__(256) tc_tail_zero(float* C, int M, int N, int BM, int BN, int full_tiles)
{
    int bm, bn;
    tile_coords(M, N, BM, BN, full_tiles + blockIdx.x, bm, bn);
    for (int e = threadIdx.x; e < BM * BN; e += blockDim.x) {
        const int r = bm * BM + e / BN, c = bn * BN + e % BN;
        if (r < M && c < N)
            C[static_cast<size_t>(r) * N + c] = 0.0f;
    }
}
// [/tail]

// [wmma]
// The first step: the CUDA C++ WMMA API. A block of 256 threads (8 warps, 4 x 2) computes 128 x 128 of C; each
// warp 32 x 64 as 2 x 4 fragments of 16 x 16. Tiles are plain row-major copies in shared memory, loaded with
// 16-byte loads and two barriers per K-tile, as in chapter 2. The accumulator layout of a WMMA fragment is
// unspecified, so results go out through a 16 x 16 scratch tile per warp.
namespace wmma = nvcuda::wmma;

template <bool IS_BF16> struct Element { using T = __half; };
template <> struct Element<true> { using T = __nv_bfloat16; };

template <bool IS_BF16>
__device__ __forceinline__ void tc_wmma(const uint16_t* __restrict__ A, const uint16_t* __restrict__ B,
                                        float* __restrict__ C, int M, int N, int K)
{
    using T = typename Element<IS_BF16>::T;
    constexpr int BM = 128, BN = 128, BK = 32, THREADS = 256;
    __shared__ __align__(128) T as[BM * BK];
    __shared__ __align__(128) T bs[BK * BN];
    const int lda = (K + 7) & ~7, ldb = (N + 7) & ~7;
    int bm, bn;
    block_coords(M, N, BM, BN, bm, bn);
    const int m0 = bm * BM, n0 = bn * BN, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm0 = warp / 2 * 32, wn0 = warp % 2 * 64;
#if __CUDA_ARCH__ < 800
    if constexpr (IS_BF16) {
        __trap();       // sm_75 has no BF16 WMMA; the launcher refuses before this
    } else
#endif
    {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][4];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
            wmma::fill_fragment(acc[i][j], 0.0f);
    for (int k0 = 0; k0 < lda; k0 += BK) {
#pragma unroll
        for (int i = 0; i < BM * BK / 8 / THREADS; ++i) {
            const int id = threadIdx.x + i * THREADS, r = id / (BK / 8), ch = id % (BK / 8);
            const bool inside = m0 + r < M && k0 + 8 * ch < lda;
            copy16<false>(as + r * BK + 8 * ch, A + (inside ? static_cast<size_t>(m0 + r) * lda + k0 + 8 * ch : 0), inside);
        }
#pragma unroll
        for (int i = 0; i < BK * BN / 8 / THREADS; ++i) {
            const int id = threadIdx.x + i * THREADS, r = id / (BN / 8), ch = id % (BN / 8);
            const bool inside = k0 + r < K && n0 + 8 * ch < ldb;
            copy16<false>(bs + r * BN + 8 * ch, B + (inside ? static_cast<size_t>(k0 + r) * ldb + n0 + 8 * ch : 0), inside);
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b[4];
#pragma unroll
            for (int i = 0; i < 2; ++i)
                wmma::load_matrix_sync(a[i], as + (wm0 + 16 * i) * BK + kk, BK);
#pragma unroll
            for (int j = 0; j < 4; ++j)
                wmma::load_matrix_sync(b[j], bs + kk * BN + wn0 + 16 * j, BN);
#pragma unroll
            for (int i = 0; i < 2; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
    float* scratch = reinterpret_cast<float*>(as) + warp * 256;     // the A tile is free now: 1 KiB per warp
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            wmma::store_matrix_sync(scratch, acc[i][j], 16, wmma::mem_row_major);
            __syncwarp();
            for (int e = lane; e < 256; e += 32) {
                const int r = m0 + wm0 + 16 * i + e / 16, c = n0 + wn0 + 16 * j + e % 16;
                if (r < M && c < N)
                    C[static_cast<size_t>(r) * N + c] = scratch[e];
            }
            __syncwarp();
        }
    }
}
// [/wmma]

extern "C" __global__ void __launch_bounds__(256) tc_wmma_f16(const uint16_t* A, const uint16_t* B, float* C, int M, int N, int K)
{
    tc_wmma<false>(A, B, C, M, N, K);
}

extern "C" __global__ void __launch_bounds__(256) tc_wmma_bf16(const uint16_t* A, const uint16_t* B, float* C, int M, int N, int K)
{
    tc_wmma<true>(A, B, C, M, N, K);
}

// The configurations of tc_gemm are gemmlab's (gemmlab/tc_configs.py): it appends an entry point per configuration
// and input format to this file, named tc_mma_<BM>x<BN>x<BK>_<WM>x<WN>_s<STAGES>[_swz][_async][_pf][_sp]_<f16|bf16|tf32>.

#ifdef TC_TMA_WS
// ---- Hopper: the copies taken off the warps that multiply. Chapter 9's mbarrier and copy-engine helpers
// (barrier_init_count, barrier_expect, barrier_wait, barrier_arrive, tma_load_2d) come from its kernel file, which
// this unit includes; the unit is compiled for sm_90a alone, as that file is.
#include "09_hopper.cu"

// [tma_ws]
// One 128 x 256 tile of C per block, 384 threads: warps 0-7 multiply in tc_inner's 64 x 64 warp tiles, fragments
// prefetched a k-step ahead; warps 8-11 are the producer warpgroup, of which one thread issues the copies. A stage
// holds A's BM x BK tile as the engine's box of BK * 2-byte rows in its 64- or 128-byte swizzle (the chapter's XOR
// swizzle of 16-byte chunks for rows of that length) and B's BK x 256 tile as four boxes of 64 columns (128-byte
// rows, 128-byte swizzle). Each stage has a "full" mbarrier (one arrival, the producer's, plus the stage's bytes)
// and an "empty" one (8 arrivals, one per multiplying warp). The engine writes zeros for what lies outside A or B,
// so edge tiles take the same path as inner ones.
template <int BK, int STAGES, int KIND>
__device__ __forceinline__ void tc_tma_ws(const CUtensorMap* a_map, const CUtensorMap* b_map, float* __restrict__ C,
                                          int M, int N, int K)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int BM = 128, BN = 256, A_ROW = BK * 2, A_BYTES = BM * A_ROW, PANEL = BK * 128, KSTEPS = BK / 16;
    constexpr int STAGE = A_BYTES + 4 * PANEL, MI = 4, NI = 8;
    static_assert((BK == 32 || BK == 64) && KSTEPS % 2 == 0, "two fragment sets alternate over the k-steps");
    extern __shared__ __align__(128) unsigned char raw[];
    // the tiles start 1024-byte aligned, where the engine's swizzle pattern starts (the launcher asks 1 KiB more)
    unsigned char* const smem = raw + (1024 - smem_u32(raw) % 1024) % 1024;
    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    // the tile's place and its K-tiles, computed after setmaxnreg on each side: a value live across it is spilled
    auto tile = [&](int& m0, int& n0) {
        int bm, bn;
        block_coords(M, N, BM, BN, bm, bn);
        m0 = bm * BM;
        n0 = bn * BN;
        return k_tiles<BK, KIND>(K);
    };
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            barrier_init_count(full + s, 1);
            barrier_init_count(empty + s, 8);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (warp >= 8) {                     // the producer warpgroup: one thread copies, all give registers back
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        int m0, n0;
        const int tiles = tile(m0, n0);
        if (warp == 8 && lane == 0)
            for (int kt = 0; kt < tiles; ++kt) {
                const int s = kt % STAGES;
                if (kt >= STAGES)        // the stage's last tile, kt - STAGES, released by all 8 warps
                    barrier_wait(empty + s, (kt / STAGES - 1) & 1);
                barrier_expect(full + s, STAGE);
                unsigned char* st = smem + s * STAGE;
                tma_load_2d(st, a_map, kt * BK, m0, full + s);
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    tma_load_2d(st + A_BYTES + j * PANEL, b_map, n0 + 64 * j, kt * BK, full + s);
            }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    int m0, n0;
    const int tiles = tile(m0, n0);
    const int wm0 = warp / 4 * 64, wn0 = warp % 4 * 64;
    int a_off[KSTEPS], b_off[4];
#pragma unroll
    for (int kk = 0; kk < KSTEPS; ++kk)  // the engine's swizzle of A's rows is the chapter's for rows so long
        a_off[kk] = chunk_offset<A_ROW, true>(wm0 + lane % 16, 2 * kk + lane / 16);
#pragma unroll
    for (int t = 0; t < 4; ++t) {        // B: panel chunk / 8, its 128-byte swizzle
        const int row = lane % 8 + 8 * (lane / 8 % 2), chunk = (wn0 + 16 * t) / 8 + lane / 16;
        b_off[t] = A_BYTES + chunk / 8 * PANEL + row * 128 + ((chunk % 8) ^ (row % 8)) * 16;
    }
    float acc[MI][NI][4];
    zero_grid(acc);
    unsigned a[2][MI][4], b[2][NI][2];
    auto load_fragments = [&](int stage, int kk, int set) {
        const unsigned char* st = smem + stage * STAGE;
#pragma unroll
        for (int i = 0; i < MI; ++i)
            ldmatrix_x4(a[set][i], st + a_off[kk] + 16 * i * A_ROW);
#pragma unroll
        for (int j = 0; j < NI / 2; ++j)
            ldmatrix_x4_trans(b[set][2 * j][0], b[set][2 * j][1], b[set][2 * j + 1][0], b[set][2 * j + 1][1],
                              st + b_off[j] + 16 * kk * 128);
    };
    auto mma_all = [&](int set) { mma_grid<KIND>(acc, a[set], b[set]); };
    if (tiles > 0) {
        barrier_wait(full, 0);
        load_fragments(0, 0, 0);
    }
    for (int kt = 0; kt < tiles; ++kt) {
        const int s = kt % STAGES;
#pragma unroll
        for (int kk = 0; kk < KSTEPS; ++kk) {
            if (kk < KSTEPS - 1) {
                load_fragments(s, kk + 1, (kk + 1) % 2);
            } else if (kt + 1 < tiles) {
                const int next = (kt + 1) % STAGES;
                barrier_wait(full + next, ((kt + 1) / STAGES) & 1);
                load_fragments(next, 0, 0);
            }
            mma_all(kk % 2);
            if (kk == KSTEPS - 2) {      // the tile's last fragments are in registers: this warp releases the stage
                __syncwarp();
                if (lane == 0)
                    barrier_arrive(empty + s);
            }
        }
    }
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j) {
            const int r = m0 + wm0 + 16 * i + lane / 4, c = n0 + wn0 + 8 * j + 2 * (lane % 4);
            store_pair(C, M, N, r, c, acc[i][j][0], acc[i][j][1]);
            store_pair(C, M, N, r + 8, c, acc[i][j][2], acc[i][j][3]);
        }
#endif
}
// [/tma_ws]
#endif
