// Chapter 8: GEMM on the tensor cores. A (M x K) and B (K x N) hold 16-bit values (FP16 or BF16), row-major;
// C (M x N) is FP32, row-major, and every product is accumulated in FP32.
//
// The launcher (gemmlab.tensor_gemm) converts the FP32 operands and pads each row of A and of B with zeros to a
// multiple of 8 elements, 16 bytes: lda = K rounded up to 8, ldb = N rounded up to 8. Every 16-byte chunk the
// kernels copy is then either wholly inside a row or wholly in its padding, so one predicate per chunk handles
// every size, 1 x 1 x 1 included: A's chunks up to lda (the padding is zeros), B's rows up to K (B has K rows;
// the rows k >= K of a tile are filled with zeros, never read: memory there could hold a NaN, and 0 x NaN is NaN).
//
//   tc_wmma_<type>                 - the first step: WMMA fragments (16 x 16 x 16) from shared-memory tiles.
//   tc_mma_<config>_<type>         - mma.sync m16n8k16 fed by ldmatrix, one template, switched per config:
//        SWIZZLE  XOR swizzle of 16-byte chunks in the shared tiles (gemmlab.mma.swizzle_chunk), so that
//                 every ldmatrix and every tile store is free of bank conflicts;
//        ASYNC    cp.async copies global -> shared in a ring of STAGES tiles (sm_80+; compiled for sm_75 the
//                 copies are plain 16-byte loads and stores, and the ring still runs);
//        BM x BN x BK block tile, WM x WN warp tile.
//   <type>: f16 or bf16. On sm_75 (a T4) there is no BF16 tensor-core instruction: the bf16 entry points stop
//   with a trap there, and the launcher refuses them before that.
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

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3, const void* p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(smem_u32(p)));
}
// [/ldmatrix]

// [mma]
// c += a * b for one 16 x 8 x 16 step: a = 4 registers of A (16 x 16), b = 2 of B (16 x 8), c = 4 floats.
template <bool BF16>
__device__ __forceinline__ void mma_16x8x16(float (&c)[4], const unsigned (&a)[4], const unsigned* b)
{
#if __CUDA_ARCH__ >= 800
    if constexpr (BF16)
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
    if constexpr (BF16) {
        __trap();       // sm_75 has no BF16 mma; the launcher refuses before this
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

// Block (bm, bn) for this blockIdx: TC_GROUP block rows at a time, column by column, so that the blocks running
// together read a few rows of A and columns of B many times over from the L2.
__device__ __forceinline__ void block_coords(int M, int N, int BM, int BN, int& bm, int& bn)
{
    const int grid_m = (M + BM - 1) / BM, grid_n = (N + BN - 1) / BN;
    const int id = blockIdx.y * gridDim.x + blockIdx.x;
    const int first = id / (TC_GROUP * grid_n) * TC_GROUP;
    const int rows = min(grid_m - first, TC_GROUP);
    const int in_group = id % (TC_GROUP * grid_n);
    bm = first + in_group % rows;
    bn = in_group / rows;
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

// [tc_gemm]
template <int BM, int BN, int BK, int WM, int WN, int STAGES, bool SWIZZLE, bool ASYNC, bool PREFETCH, bool BF16>
__device__ __forceinline__ void tc_gemm(const uint16_t* __restrict__ A, const uint16_t* __restrict__ B,
                                        float* __restrict__ C, int M, int N, int K)
{
    constexpr int WARPS_N = BN / WN, THREADS = 32 * (BM / WM) * WARPS_N;
    constexpr int MI = WM / 16, NI = WN / 8;                   // m16 and n8 fragments per warp
    constexpr int A_ROW = BK * 2, B_ROW = BN * 2;              // bytes per row of the shared tiles
    constexpr int A_CHUNKS = BM * BK / 8, B_CHUNKS = BK * BN / 8;
    constexpr int STAGE = BM * A_ROW + BK * B_ROW;
#if __CUDA_ARCH__ >= 800
    constexpr int RING = STAGES;
#else
    constexpr int RING = 2;         // sm_75 copies synchronously: more stages would only cost registers
#endif
    static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 16 == 0 && BK % 16 == 0, "tile shapes");
    static_assert(A_CHUNKS % THREADS == 0 && B_CHUNKS % THREADS == 0, "every thread copies whole chunks");
    static_assert(STAGES >= 2 && (ASYNC || STAGES == 2), "a ring of stages needs cp.async");

    extern __shared__ __align__(128) unsigned char smem[];
    const int lda = (K + 7) & ~7, ldb = (N + 7) & ~7;
    int bm, bn;
    block_coords(M, N, BM, BN, bm, bn);
    const int m0 = bm * BM, n0 = bn * BN;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int wm0 = warp / WARPS_N * WM, wn0 = warp % WARPS_N * WN;

    // [load_tile]
    auto load_tile = [&](int kt, int stage) {
        unsigned char* as = smem + stage * STAGE;
        unsigned char* bs = as + BM * A_ROW;
        const int k0 = kt * BK;
#pragma unroll
        for (int i = 0; i < A_CHUNKS / THREADS; ++i) {
            const int id = threadIdx.x + i * THREADS, r = id / (BK / 8), ch = id % (BK / 8);
            const int gr = m0 + r, gk = k0 + 8 * ch;
            const bool inside = gr < M && gk < lda;
            copy16<ASYNC>(as + chunk_offset<A_ROW, SWIZZLE>(r, ch), A + (inside ? static_cast<size_t>(gr) * lda + gk : 0), inside);
        }
#pragma unroll
        for (int i = 0; i < B_CHUNKS / THREADS; ++i) {
            const int id = threadIdx.x + i * THREADS, r = id / (BN / 8), ch = id % (BN / 8);
            const int gk = k0 + r, gn = n0 + 8 * ch;
            const bool inside = gk < K && gn < ldb;   // B has K rows (padded in length, not in number)
            copy16<ASYNC>(bs + chunk_offset<B_ROW, SWIZZLE>(r, ch), B + (inside ? static_cast<size_t>(gk) * ldb + gn : 0), inside);
        }
    };
    // [/load_tile]

    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e)
                acc[i][j][e] = 0.0f;

    // [warp_step]
    // The warp's fragments for one k-step of 16: A by ldmatrix.x4 (a 16 x 16 block; lane l points at row l % 16,
    // chunk l / 16), B by ldmatrix.x4.trans (two 8-column blocks; lane l points at k-row l % 8 + 8 * (l / 8 % 2),
    // column block l / 16). Two sets, so that the next k-step's loads are in flight during this one's mma.
    unsigned a[2][MI][4], b[2][NI][2];
    auto load_fragments = [&](int stage, int kk, int set) {
        const unsigned char* as = smem + stage * STAGE;
        const unsigned char* bs = as + BM * A_ROW;
#pragma unroll
        for (int i = 0; i < MI; ++i)
            ldmatrix_x4(a[set][i], as + chunk_offset<A_ROW, SWIZZLE>(wm0 + 16 * i + lane % 16, 2 * kk + lane / 16));
#pragma unroll
        for (int j = 0; j < NI / 2; ++j)
            ldmatrix_x4_trans(b[set][2 * j][0], b[set][2 * j][1], b[set][2 * j + 1][0], b[set][2 * j + 1][1],
                              bs + chunk_offset<B_ROW, SWIZZLE>(16 * kk + lane % 8 + 8 * (lane / 8 % 2),
                                                                (wn0 + 16 * j) / 8 + lane / 16));
    };
    auto mma_all = [&](int set) {
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
            for (int j = 0; j < NI; ++j)
                mma_16x8x16<BF16>(acc[i][j], a[set][i], b[set][j]);
    };
    // [/warp_step]

    // [pipeline]
    // A ring of RING tiles (STAGES; 2 on sm_75): RING - 1 in flight while the warps compute on the oldest. Tile kt + RING - 1
    // goes into the stage that tile kt - 1 used, once every warp is past the barrier that ended its reads.
    // Without PREFETCH each tile starts with a wait (at most RING - 2 younger copies pending) and a barrier,
    // and each k-step loads its fragments, then multiplies. With PREFETCH the fragments of step kk + 1 are
    // loaded before the mma of step kk, across tiles too: the wait and the barrier for tile kt + 1 come at the
    // last k-step of tile kt, before its first fragments are read.
    constexpr int KSTEPS = BK / 16;
    const int tiles = (lda + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < RING - 1; ++s) {
        if (s < tiles)
            load_tile(s, s);
        copy_commit();
    }
    if constexpr (!PREFETCH) {
        for (int kt = 0; kt < tiles; ++kt) {
            copy_wait<RING - 2>();
            __syncthreads();
            const int next = kt + RING - 1;
            if (next < tiles)
                load_tile(next, next % RING);
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
#pragma unroll
            for (int kk = 0; kk < KSTEPS; ++kk) {
                if (kk == 0) {
                    const int next = kt + RING - 1;
                    if (next < tiles)
                        load_tile(next, next % RING);
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
            store_pair(C, M, N, r, c, acc[i][j][0], acc[i][j][1]);
            store_pair(C, M, N, r + 8, c, acc[i][j][2], acc[i][j][3]);
        }
    // [/epilogue]
}
// [/tc_gemm]

// [wmma]
// The first step: the CUDA C++ WMMA API. A block of 256 threads (8 warps, 4 x 2) computes 128 x 128 of C; each
// warp 32 x 64 as 2 x 4 fragments of 16 x 16. Tiles are plain row-major copies in shared memory, loaded with
// 16-byte loads and two barriers per K-tile, as in chapter 2. The accumulator layout of a WMMA fragment is
// unspecified, so results go out through a 16 x 16 scratch tile per warp.
namespace wmma = nvcuda::wmma;

template <bool BF16> struct Element { using T = __half; };
template <> struct Element<true> { using T = __nv_bfloat16; };

template <bool BF16>
__device__ __forceinline__ void tc_wmma(const uint16_t* __restrict__ A, const uint16_t* __restrict__ B,
                                        float* __restrict__ C, int M, int N, int K)
{
    using T = typename Element<BF16>::T;
    constexpr int BM = 128, BN = 128, BK = 32, THREADS = 256;
    __shared__ __align__(128) T as[BM * BK];
    __shared__ __align__(128) T bs[BK * BN];
    const int lda = (K + 7) & ~7, ldb = (N + 7) & ~7;
    int bm, bn;
    block_coords(M, N, BM, BN, bm, bn);
    const int m0 = bm * BM, n0 = bn * BN, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm0 = warp / 2 * 32, wn0 = warp % 2 * 64;
#if __CUDA_ARCH__ < 800
    if constexpr (BF16) {
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

// The configurations of tc_gemm are gemmlab's (gemmlab/tc_configs.py): it appends one FP16 and one BF16 entry point
// per configuration to this file, named tc_mma_<BM>x<BN>x<BK>_<WM>x<WN>_s<STAGES>[_swz][_async][_pf]_<f16|bf16>.
