// C = A·B (row-major, float32), fast: the SIMT recipe that brings a hand-written SGEMM to cuBLAS level.
// Changed from 06_register_tiling: float4 global loads prefetched into registers one K-tile ahead (or
// copied by cp.async), A stored transposed in a skewed layout that keeps its stores free of bank
// conflicts, both tiles double buffered in shared memory (one barrier per K-tile), warp tiling with
// float4 fragment reads double buffered in registers, and a block swizzle for L2 reuse. Switches turn
// single techniques off (VEC, STAGES, SKEW) so chapter 7 can measure what each is worth.
// Edges: float4 loads and stores only where they are legal (K % 4 == 0 for A, N % 4 == 0 for B and
// C, 16-byte aligned pointers, all four elements in range); else two float2 where rows are 8-byte
// aligned (K or N even); elsewhere scalar accesses, guarded with zero padding at the matrix edges, so
// any size works. K-tiles that lie wholly inside A and B run a copy of the loop with no checks at all.
// Split-K (SPLITK > 1): blockIdx.z picks a range of whole K-tiles; each block adds its part of C
// atomically into a C that the launcher zeroed (chapter 7: for grids smaller than one wave).
//
// Layout of the work. A block computes a BM×BN tile of C; its warps each own a WM×WN warp tile; a
// thread owns TM×TN elements, as (TM/4)×(TN/4) sub-blocks of 4×4 spaced 4·(lanes across) apart, so
// that every fragment read from shared memory is one float4 and the lanes of a warp read a few
// contiguous float4 (broadcasts, no bank conflicts), and every store of C is a float4 that lines up
// with its neighbours' into whole 128-byte rows.
//
// Entry points: none in this file. gemmlab (gemmlab/fast_configs.py) appends one per named
// configuration: a struct of constants (BM = 128, BN = 128, ...) and an extern "C" kernel that
// instantiates fast::gemm<Config> with it, under __launch_bounds__(THREADS, MIN_BLOCKS).

namespace fast {

// 16 bytes through the read-only data path.
__device__ __forceinline__ float4 ldg4(const float* p)
{
    return __ldg(reinterpret_cast<const float4*>(p));
}

__device__ __forceinline__ bool aligned16(const void* p)
{
    return (reinterpret_cast<unsigned long long>(p) & 15ull) == 0;
}

__device__ __forceinline__ bool aligned8(const void* p)
{
    return (reinterpret_cast<unsigned long long>(p) & 7ull) == 0;
}

// An int the compiler must recompute where it is used: keeps it from turning tile + offset into one
// 64-bit pointer per load held across the loop (two registers each, which we do not have to spare).
__device__ __forceinline__ int opaque(int x)
{
    asm volatile("" : "+r"(x));
    return x;
}

// Split-K's store: n (0-4) elements added atomically; sm_90 adds an aligned float4 (vec) in one instruction.
__device__ __forceinline__ void add_to_c(float* p, const float* v, int n, bool vec)
{
#if __CUDA_ARCH__ >= 900
    if (vec) {
        atomicAdd(reinterpret_cast<float4*>(p), make_float4(v[0], v[1], v[2], v[3]));
        return;
    }
#endif
#pragma unroll
    for (int j = 0; j < 4; ++j)                           // constant indices: v stays in registers
        if (j < n)
            atomicAdd(p + j, v[j]);
}

// A compile-time flag for the two versions of the K-tile loop.
template <bool B>
struct Flag {
    static constexpr bool value = B;
};

// cp.async (sm_80 and later): a copy from global to shared memory that does not pass through
// registers; `in` false writes zeros instead (src-size 0: nothing is read, and the source pointer is
// a valid one anyway). Before sm_80: a plain load and store, so the kernel still runs.
__device__ __forceinline__ void copy4(float* dst, const float* src, bool in)
{
#if __CUDA_ARCH__ >= 800
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(s), "l"(src), "r"(in ? 4 : 0) : "memory");
#else
    *dst = in ? __ldg(src) : 0.0f;
#endif
}

__device__ __forceinline__ void copy16(float* dst, const float* src)
{
#if __CUDA_ARCH__ >= 800
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(src) : "memory");
#else
    *reinterpret_cast<float4*>(dst) = ldg4(src);
#endif
}

// Waits for this thread's cp.async copies (a barrier must follow before other threads read them).
__device__ __forceinline__ void copies_done()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

// threadIdx.x read afresh: lets the epilogue recompute its indices instead of holding them in
// registers through the main loop.
__device__ __forceinline__ int fresh_tid()
{
    int t;
    asm volatile("mov.u32 %0, %%tid.x;" : "=r"(t));
    return t;
}

// Where a thread stores its share of a tile (its row and k-quad of A, its k and column of B): held in
// registers through the K loop, or recomputed from threadIdx at each store. On sm_75 and sm_80 holding
// them makes ptxas spill; on sm_90 recomputing them made it issue the next tile's global loads half a
// tile late instead of at its start (3% slower, measured), so each architecture gets the other choice.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 860
constexpr bool RECOMPUTE_STORE_INDICES = true;
#else
constexpr bool RECOMPUTE_STORE_INDICES = false;
#endif

// Thread t's place in a tile with Q float4 per row: row t/Q, first column 4*(t%Q). Below sm_86 it is
// recomputed here from threadIdx; above, the caller's registers (row, col) are kept as they are.
template <int Q>
__device__ __forceinline__ void store_position(int& row, int& col)
{
    if (RECOMPUTE_STORE_INDICES) {
        const unsigned t = fresh_tid();
        row = t / Q;
        col = (t % Q) * 4;
    }
}

// Loads float4 number first..last-1 of this thread's share of a tile of A or B. The tile starts at
// `tile` and has `ld` floats per row; thread t's float4 i holds row t/Q + i*RS, columns 4*(t%Q)..+3,
// and lies at tile[off + i*RS*ld]. `rows` and `cols` are what is left of the matrix from the tile's
// corner: outside them, zeros. vec: float4 loads are legal (ld % 4 == 0 and 16-byte aligned rows;
// then col < cols means col + 3 < cols); pairs: float2 loads are (ld even, 8-byte aligned rows).
// full (the same for the whole block: every element of the tile in range): no checks, one float4
// load if vec, else two float2 if pairs, else four scalar loads. Otherwise each float4 is checked:
// one float4 (or two float2) where legal and in range, else four guarded scalar loads; this slow
// path recomputes its indices so that the main loop holds none for it. In-tile offsets are below
// (tile rows)*ld, so int holds them while BM*K and BK*N stay below 2^31 (K and N below 8 million);
// the tile's own offset in the matrix is size_t.
template <int RS, int Q, int N4>
__device__ __forceinline__ void load_tile(float4 (&r)[N4], int first, int last, const float* __restrict__ tile,
                                          int off, int ld, int rows, int cols, bool vec, bool full, bool pairs)
{
    if (full && vec) {
#pragma unroll
        for (int i = first; i < last; ++i)
            r[i] = ldg4(tile + opaque(off + i * RS * ld));
        return;
    }
    if (full && pairs) {                                  // rows 8-byte aligned (ld even): two float2
#pragma unroll
        for (int i = first; i < last; ++i) {
            const float* p = tile + opaque(off + i * RS * ld);
            const float2 lo = __ldg(reinterpret_cast<const float2*>(p));
            const float2 hi = __ldg(reinterpret_cast<const float2*>(p + 2));
            r[i] = make_float4(lo.x, lo.y, hi.x, hi.y);
        }
        return;
    }
    if (full) {
#pragma unroll
        for (int i = first; i < last; ++i) {
            const float* p = tile + opaque(off + i * RS * ld);
            r[i] = make_float4(__ldg(p + 0), __ldg(p + 1), __ldg(p + 2), __ldg(p + 3));
        }
        return;
    }
    const int t = fresh_tid(), row = t / Q, col = (t % Q) * 4;
#pragma unroll
    for (int i = first; i < last; ++i) {
        const float* p = tile + ((row + i * RS) * ld + col);
        const bool in = row + i * RS < rows;
        if (vec && in && col < cols) {
            r[i] = ldg4(p);
        } else if (pairs && in && col + 3 < cols) {
            const float2 lo = __ldg(reinterpret_cast<const float2*>(p));
            const float2 hi = __ldg(reinterpret_cast<const float2*>(p + 2));
            r[i] = make_float4(lo.x, lo.y, hi.x, hi.y);
        } else {
            r[i].x = (in && col + 0 < cols) ? __ldg(p + 0) : 0.0f;
            r[i].y = (in && col + 1 < cols) ? __ldg(p + 1) : 0.0f;
            r[i].z = (in && col + 2 < cols) ? __ldg(p + 2) : 0.0f;
            r[i].w = (in && col + 3 < cols) ? __ldg(p + 3) : 0.0f;
        }
    }
}

// Where element (k, m) of the transposed A tile lives in a stage of As. Plain padding (rows of BM + 4
// floats) keeps float4 reads aligned but leaves the transposing stores 2-way conflicted once a warp
// stores more than two k-quads (BK >= 16): one warp's store writes 32/KQ consecutive m in each of KQ
// rows k = 4q + j (KQ = BK/4 float4 per row of the A tile in global memory), and rows 4q and 4q + 8
// start on the same bank. SKEW instead pads once every four rows, by 32/KQ floats: row 4q + j then
// starts 32/KQ·q banks further on, the KQ groups of a store cover all 32 banks, and the pad is a
// multiple of 4 floats, so fragment reads stay aligned float4. The offset is a constant for each
// (unrolled) k, so it folds into the instructions and costs no registers.
template <int BM, int KQ, bool SKEW>
struct ATile {
    static constexpr int ROW = SKEW ? BM : BM + 4;        // floats from row 4q + j to row 4q + j + 1
    static constexpr int GROUP = SKEW ? 4 * BM + 32 / KQ : 4 * ROW;   // floats from row 4q to row 4q + 4
    static constexpr int FLOATS = KQ * GROUP;             // one stage: BK = 4*KQ rows
    static __device__ __forceinline__ int at(int k, int m)
    {
        return (k / 4) * GROUP + (k % 4) * ROW + m;
    }
};

// Stores [first, last) of the float4 of A into a stage of As, transposed: four scalar stores each.
// k is a multiple of 4, so rows k..k+3 are one group: one base address, constant offsets.
template <class AT, int RS, int Q, int N4>
__device__ __forceinline__ void store_a(float* As, const float4 (&r)[N4], int first, int last, int row, int k)
{
    store_position<Q>(row, k);                            // row t/Q, k-quad 4*(t%Q)
    float* base = As + AT::at(k, row);
#pragma unroll
    for (int i = first; i < last; ++i) {
        base[i * RS + 0 * AT::ROW] = r[i].x;
        base[i * RS + 1 * AT::ROW] = r[i].y;
        base[i * RS + 2 * AT::ROW] = r[i].z;
        base[i * RS + 3 * AT::ROW] = r[i].w;
    }
}

// cp.async versions of load_tile + store_a / store_b: each thread copies the same elements it would
// load, straight into the stage. A: four 4-byte copies per float4 (they transpose); B: one 16-byte
// copy where vec and in range, else four 4-byte ones. `safe` is a valid address for the zero fills.
template <class AT, int RS, int Q>
__device__ __forceinline__ void copy_a(float* As, int first, int last, const float* __restrict__ tile, int ld,
                                       int rows, int cols, bool full, int row, int k, const float* safe)
{
    store_position<Q>(row, k);
    float* base = As + AT::at(k, row);                    // k is a multiple of 4, as in store_a
#pragma unroll
    for (int i = first; i < last; ++i) {
        const int r = row + i * RS;
        const float* p = tile + (r * ld + k);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const bool in = full || (r < rows && k + j < cols);
            copy4(&base[i * RS + j * AT::ROW], in ? p + j : safe, in);
        }
    }
}

template <int RS, int LD>
__device__ __forceinline__ void copy_b(float (*Bs)[LD], int first, int last, const float* __restrict__ tile, int ld,
                                       int rows, int cols, bool vec, bool full, int k, int col, const float* safe)
{
    store_position<LD / 4>(k, col);                       // row t/(LD/4), column 4*(t%(LD/4))
#pragma unroll
    for (int i = first; i < last; ++i) {
        const int r = k + i * RS;
        const float* p = tile + (r * ld + col);
        if (vec && (full || (r < rows && col < cols))) {
            copy16(&Bs[r][col], p);
        } else {
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const bool in = full || (r < rows && col + j < cols);
                copy4(&Bs[r][col + j], in ? p + j : safe, in);
            }
        }
    }
}

// Stores [first, last) of the float4 of B into a stage of Bs, as they are: one float4 store each.
template <int RS, int N4, int LD>
__device__ __forceinline__ void store_b(float (*Bs)[LD], const float4 (&r)[N4], int first, int last, int k, int col)
{
    store_position<LD / 4>(k, col);
#pragma unroll
    for (int i = first; i < last; ++i)
        *reinterpret_cast<float4*>(&Bs[k + i * RS][col]) = r[i];
}

// The block's tile of C, swizzled for L2: consecutive blocks walk GROUP block rows column by column,
// so blocks running together share rows of A and columns of B in L2. A bijection of the grid
// (ceil(N/BN), ceil(M/BM)) onto itself; returns (tile row, tile column). EDGES_FIRST numbers the
// blocks from the end: the last block row and column, whose tiles take the slower checked path, then
// start in the first wave instead of finishing the grid in a last wave of their own.
template <int GROUP, bool EDGES_FIRST>
__device__ __forceinline__ int2 swizzled_block()
{
    const int launched = blockIdx.y * gridDim.x + blockIdx.x;
    const int pid = EDGES_FIRST ? gridDim.x * gridDim.y - 1 - launched : launched;
    const int per_group = GROUP * gridDim.x;
    const int first = (pid / per_group) * GROUP;
    const int rows = min((int)gridDim.y - first, GROUP);
    return make_int2(first + (pid % per_group) % rows, (pid % per_group) / rows);
}

// One k-step's fragments: this thread's SUB_M float4 of the A tile (column frag_m of As) and SUB_N
// float4 of the B tile (column frag_n of Bs), its sub-blocks LANES*4 apart: one LDS.128 each.
template <class AT, int LANES_M, int LANES_N, int SUB_M, int SUB_N, int LD>
__device__ __forceinline__ void load_fragments(float4 (&fa)[SUB_M], float4 (&fb)[SUB_N], const float* As,
                                               const float (*Bs)[LD], int k, int frag_m, int frag_n)
{
#pragma unroll
    for (int s = 0; s < SUB_M; ++s)
        fa[s] = *reinterpret_cast<const float4*>(&As[frag_m + AT::at(k, s * LANES_M * 4)]);
#pragma unroll
    for (int s = 0; s < SUB_N; ++s)
        fb[s] = *reinterpret_cast<const float4*>(&Bs[k][frag_n + s * LANES_N * 4]);
}

// The kernel, for one configuration (a struct of constants; gemmlab generates one per configuration):
// BM, BN, BK: block tile and K-step. WM, WN: warp tile. TM, TN: thread tile (multiples of 4).
// THREADS: threads per block, one warp per warp tile. The next K-tile's global loads are issued at
// the tile's first k-step and stored to shared memory at k-step STORE, hiding their latency behind
// STORE steps of FMAs. GROUP: block rows per swizzle group.
// Switches, all on in the tuned kernels: VEC, float4 global loads where legal (false: always scalar);
// STAGES 2, the next tile loaded during this one into a second stage (1: loaded at the end of the
// tile between two barriers, chapter 6's way); SKEW, As padded every four rows (false: every row, by 4
// floats). ASYNC: cp.async copies instead of loads into registers and stores (needs STAGES 2).
// SPLITK: blocks along K (grid z), each adding its part into C (1: no split, plain stores).
template <class Config>
__device__ __forceinline__ void gemm(const float* __restrict__ A, const float* __restrict__ B,
                                     float* __restrict__ C, int M, int N, int K)
{
    constexpr int BM = Config::BM, BN = Config::BN, BK = Config::BK, WM = Config::WM, WN = Config::WN;
    constexpr int TM = Config::TM, TN = Config::TN, THREADS = Config::THREADS, STORE = Config::STORE;
    constexpr int GROUP = Config::GROUP, STAGES = Config::STAGES, SPLITK = Config::SPLITK;
    constexpr bool VEC = Config::VEC, SKEW = Config::SKEW, ASYNC = Config::ASYNC;
    constexpr int WARPS_N = BN / WN;
    constexpr int LANES_M = WM / TM, LANES_N = WN / TN;   // how a warp's 32 lanes tile its warp tile
    constexpr int SUB_M = TM / 4, SUB_N = TN / 4;         // 4x4 sub-blocks per thread
    constexpr int A_KQ = BK / 4, B_NQ = BN / 4;           // float4 per row of the A tile, of the B tile
    constexpr int A_ALL = BM * BK / 4, B_ALL = BK * BN / 4; // float4 per tile of A, of B
    constexpr int A_F4 = (A_ALL + THREADS - 1) / THREADS;  // float4 loads per thread per K-tile
    constexpr int B_F4 = (B_ALL + THREADS - 1) / THREADS;
    constexpr int A_RS = THREADS / A_KQ, B_RS = THREADS / B_NQ;  // rows between a thread's float4
    using AT = ATile<BM, BK / 4, SKEW>;                   // the layout of the transposed A tile
    // The same rules as gemmlab.fast_configs.FastConfig.problems (a CPU test checks that they agree).
    // Static shared memory above 48 KiB needs no assert: the compiler refuses it.
    static_assert(TM % 4 == 0 && TN % 4 == 0, "thread tile TM x TN must be made of 4x4 sub-blocks (float4 fragments)");
    static_assert(BM % WM == 0 && BN % WN == 0, "warp tile WM x WN must divide the block tile BM x BN");
    static_assert(WM % TM == 0 && WN % TN == 0 && LANES_M * LANES_N == 32,
                  "a warp tile must hold exactly 32 thread tiles: WM*WN == 32*TM*TN");
    static_assert(LANES_M % 2 == 0, "the lane layout pairs lanes along M: WM/TM must be even");
    static_assert(THREADS == (BM / WM) * (BN / WN) * 32, "THREADS must be one warp per warp tile");
    static_assert(THREADS <= 1024, "a block has at most 1024 threads");
    static_assert(BK % 4 == 0, "BK must be a multiple of 4 (float4 loads of A along k)");
    static_assert((A_ALL % THREADS == 0 || THREADS % A_ALL == 0) && THREADS % A_KQ == 0,
                  "the BM x BK tile of A must split into whole float4 loads per thread (or fewer float4 than threads)");
    static_assert((B_ALL % THREADS == 0 || THREADS % B_ALL == 0) && THREADS % B_NQ == 0,
                  "the BK x BN tile of B must split into whole float4 loads per thread (or fewer float4 than threads)");
    static_assert(0 <= STORE && STORE < BK, "STORE must be a k-step of the tile");
    static_assert(GROUP >= 1, "GROUP must be at least one block row");
    static_assert(STAGES == 1 || STAGES == 2, "one stage or two");
    static_assert(SPLITK >= 1, "SPLITK must be at least 1");
    static_assert(!ASYNC || STAGES == 2, "cp.async copies into the second stage: STAGES must be 2");
    static_assert(!SKEW || (BK <= 32 && BM % 32 == 0), "the A skew needs BK <= 32 (pads of whole float4) and BM % 32 == 0");

    __shared__ __align__(16) float As[STAGES][AT::FLOATS]; // A tile transposed: element (k, m) at AT::at(k, m)
    __shared__ __align__(16) float Bs[STAGES][BK][BN];    // B tile as is:      Bs[k][n]

    const int2 blk = swizzled_block<GROUP, Config::EDGES_FIRST>();
    const int row0 = blk.x * BM, col0 = blk.y * BN;

    // [warp layout]
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    // Lanes in a (LANES_M x LANES_N) grid; each quarter warp covers 2 x 4 lanes, so its float4 reads hit
    // few addresses. A thread's sub-blocks sit LANES_M*4 rows and LANES_N*4 columns apart.
    const int lm = (lane / (2 * LANES_N)) * 2 + lane % 2;
    const int ln = (lane / 2) % LANES_N;
    const int frag_m = (warp / WARPS_N) * WM + lm * 4;    // column of As this thread reads
    const int frag_n = (warp % WARPS_N) * WN + ln * 4;    // column of Bs this thread reads
    // [/warp layout]

    // Global loads: A rows a_row + i*A_RS, columns a_k..a_k+3 of the tile; B rows b_k + i*B_RS,
    // columns b_n..b_n+3. Where a tile has fewer float4 than the block has threads, the rest sit out.
    const int a_row = tid / A_KQ, a_k = (tid % A_KQ) * 4;
    const int b_k = tid / B_NQ, b_n = (tid % B_NQ) * 4;
    const bool a_on = A_ALL >= THREADS || tid < A_ALL;
    const bool b_on = B_ALL >= THREADS || tid < B_ALL;
    const bool vecA = VEC && K % 4 == 0 && aligned16(A);  // uniform over the block
    const bool vecB = VEC && N % 4 == 0 && aligned16(B);
    const bool pairsA = VEC && K % 2 == 0 && aligned8(A); // else float2 pairs where legal
    const bool pairsB = VEC && N % 2 == 0 && aligned8(B);
    // [split-K]
    // Split-K: block z of SPLITK sums k in [kbeg, kbeg + KZ), whole K-tiles; the parts meet in C.
    const int k_split = (K + SPLITK * BK - 1) / (SPLITK * BK) * BK;
    const int kbeg = SPLITK == 1 ? 0 : min(K, (int)blockIdx.z * k_split);
    const int KZ = SPLITK == 1 ? K : min(K - kbeg, k_split);
    const int a_off = a_row * K + a_k, b_off = b_k * N + b_n;
    const float* A_blk = A + (size_t)row0 * K + kbeg;     // the block's rows of A, from column kbeg
    const float* B_blk = B + (size_t)kbeg * N + col0;     // the block's columns of B, from row kbeg
    // [/split-K]
    const bool blkA = row0 + BM <= M;                     // the block's tiles lie inside A and B,
    const bool blkB = col0 + BN <= N;                     // but for the last K-tile

    float4 ra[A_F4], rb[B_F4];                            // the next K-tile, in flight
    float4 fa[2][SUB_M], fb[2][SUB_N];                    // fragments for step k and k+1
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
            acc[i][j] = 0.0f;

    // Tile 0 into stage 0.
    if (ASYNC) {
        if (a_on)
            copy_a<AT, A_RS, A_KQ>(As[0], 0, A_F4, A_blk, K, M - row0, KZ, blkA && BK <= KZ, a_row, a_k, A);
        if (b_on)
            copy_b<B_RS>(Bs[0], 0, B_F4, B_blk, N, KZ, N - col0, vecB, blkB && BK <= KZ, b_k, b_n, B);
        copies_done();
    } else {
        if (a_on) {
            load_tile<A_RS, A_KQ>(ra, 0, A_F4, A_blk, a_off, K, M - row0, KZ, vecA, blkA && BK <= KZ, pairsA);
            store_a<AT, A_RS, A_KQ>(As[0], ra, 0, A_F4, a_row, a_k);
        }
        if (b_on) {
            load_tile<B_RS, B_NQ>(rb, 0, B_F4, B_blk, b_off, N, KZ, N - col0, vecB, blkB && BK <= KZ, pairsB);
            store_b<B_RS>(Bs[0], rb, 0, B_F4, b_k, b_n);
        }
    }
    __syncthreads();
    load_fragments<AT, LANES_M, LANES_N>(fa[0], fb[0], As[0], Bs[0], 0, frag_m, frag_n);

    // [main loop]
    const int tiles = (KZ + BK - 1) / BK;
    int buf = 0;
    for (int t = 0; t < tiles; ++t) {
        const int k0 = (t + 1) * BK;                      // first column of A (row of B) of the next tile
        const bool more = t + 1 < tiles;                  // uniform: every thread takes the same branches
        const bool fastA = blkA && k0 + BK <= KZ, fastB = blkB && k0 + BK <= KZ;
        // One K-tile: BK steps of TM*TN FMAs, with the next tile's loads in between. Compiled twice:
        // FAST (a next tile, all of it inside A and B: no checks at all) and the general case.
        auto tile = [&](auto fast) {
            constexpr bool FAST = decltype(fast)::value;
            const bool next = FAST || more;
#pragma unroll
            for (int k = 0; k < BK; ++k) {
                const int cur = k % 2, nxt = (k + 1) % 2;
                if (ASYNC && next && k == 0) {            // copy the next tile into the other stage
                    if (a_on)
                        copy_a<AT, A_RS, A_KQ>(As[buf ^ 1], 0, A_F4, A_blk + k0, K, M - row0, KZ - k0,
                                               FAST || fastA, a_row, a_k, A);
                    if (b_on)
                        copy_b<B_RS>(Bs[buf ^ 1], 0, B_F4, B_blk + (size_t)k0 * N, N, KZ - k0, N - col0, vecB,
                                     FAST || fastB, b_k, b_n, B);
                }
                if (!ASYNC && STAGES == 2 && next && k == 0) {  // issue the next tile's loads now...
                    if (a_on)
                        load_tile<A_RS, A_KQ>(ra, 0, A_F4, A_blk + k0, a_off, K, M - row0, KZ - k0, vecA,
                                              FAST || fastA, pairsA);
                    if (b_on)
                        load_tile<B_RS, B_NQ>(rb, 0, B_F4, B_blk + (size_t)k0 * N, b_off, N, KZ - k0, N - col0,
                                              vecB, FAST || fastB, pairsB);
                }
                if (!ASYNC && STAGES == 2 && next && k == STORE) {  // ...and store them at step STORE, in
                    if (a_on)                             // the other stage: nobody reads that one now
                        store_a<AT, A_RS, A_KQ>(As[buf ^ 1], ra, 0, A_F4, a_row, a_k);
                    if (b_on)
                        store_b<B_RS>(Bs[buf ^ 1], rb, 0, B_F4, b_k, b_n);
                }
                if (k < BK - 1) {                         // fragments of step k+1
                    load_fragments<AT, LANES_M, LANES_N>(fa[nxt], fb[nxt], As[buf], Bs[buf], k + 1, frag_m, frag_n);
                } else if (next) {                        // last step: publish the next tile, then read its
                    if (STAGES == 1) {                    // first fragments. One stage: wait until every warp
                        __syncthreads();                  // has read this tile, then load and store the next
                        const unsigned t = fresh_tid();   // (offsets recomputed here: held through the
                        if (a_on) {                       // tile for this one use, they spill)
                            load_tile<A_RS, A_KQ>(ra, 0, A_F4, A_blk + k0, int(t / A_KQ) * K + int(t % A_KQ) * 4, K,
                                                  M - row0, KZ - k0, vecA, FAST || fastA, pairsA);
                            store_a<AT, A_RS, A_KQ>(As[0], ra, 0, A_F4, a_row, a_k);
                        }
                        if (b_on) {
                            load_tile<B_RS, B_NQ>(rb, 0, B_F4, B_blk + (size_t)k0 * N,
                                                  int(t / B_NQ) * N + int(t % B_NQ) * 4, N, KZ - k0, N - col0, vecB,
                                                  FAST || fastB, pairsB);
                            store_b<B_RS>(Bs[0], rb, 0, B_F4, b_k, b_n);
                        }
                    }
                    if (ASYNC)
                        copies_done();
                    __syncthreads();                      // Two stages: the one barrier per K-tile (the stage
                    buf ^= STAGES - 1;                    // written next was last read before it)
                    load_fragments<AT, LANES_M, LANES_N>(fa[nxt], fb[nxt], As[buf], Bs[buf], 0, frag_m, frag_n);
                }
                float a[TM], b[TN];
#pragma unroll
                for (int s = 0; s < SUB_M; ++s) {
                    a[4 * s + 0] = fa[cur][s].x; a[4 * s + 1] = fa[cur][s].y;
                    a[4 * s + 2] = fa[cur][s].z; a[4 * s + 3] = fa[cur][s].w;
                }
#pragma unroll
                for (int s = 0; s < SUB_N; ++s) {
                    b[4 * s + 0] = fb[cur][s].x; b[4 * s + 1] = fb[cur][s].y;
                    b[4 * s + 2] = fb[cur][s].z; b[4 * s + 3] = fb[cur][s].w;
                }
#pragma unroll
                for (int x = 0; x < TM * TN; ++x) {       // TM*TN FMAs from TM/4 + TN/4 float4 loads, row by
                    const int i = x / TN, j = x % TN;     // row (measured faster than column by column)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
                }
            }
        };
        if (more && fastA && fastB)
            tile(Flag<true>());
        else
            tile(Flag<false>());
    }

    // [/main loop]

    // Store: each row of a 4x4 sub-block is one float4; a warp's lanes write whole contiguous rows.
    const bool vecC = N % 4 == 0 && aligned16(C);
    const int etid = fresh_tid(), elane = etid % 32, ewarp = etid / 32;
    const int c_row = row0 + (ewarp / WARPS_N) * WM + ((elane / (2 * LANES_N)) * 2 + elane % 2) * 4;
    const int c_col = col0 + (ewarp % WARPS_N) * WN + ((elane / 2) % LANES_N) * 4;
#pragma unroll
    for (int sm = 0; sm < SUB_M; ++sm)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int r = c_row + sm * LANES_M * 4 + i;
            if (r < M) {
#pragma unroll
                for (int sn = 0; sn < SUB_N; ++sn) {
                    const int c = c_col + sn * LANES_N * 4;
                    const float* v = &acc[sm * 4 + i][sn * 4];
                    float* p = C + (size_t)r * N + c;
                    if (SPLITK > 1) {                     // C was zeroed: add this block's part
                        add_to_c(p, v, max(0, min(4, N - c)), vecC && c < N);
                    } else if (vecC && c < N) {
                        *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
                    } else {
#pragma unroll
                        for (int j = 0; j < 4; ++j)
                            if (c + j < N)
                                p[j] = v[j];
                    }
                }
            }
        }
}

}  // namespace fast
