// C = A·B with 2D register tiling whose shared-memory reads are all float4 and conflict-free.
// Changed from 06_register_tiling (gemm_regtile_2d): the A tile is stored transposed (As[k][m]) so a
// thread's 8 values of A for one k are two float4, and a thread's 8x8 outputs are four 4x4 blocks half
// a tile apart, so the 16 lanes that share a row of threads read 16 consecutive float4 of Bs.
// The tile loads count passes from 0, so the compiler unrolls them and issues every load before the
// first store (gemm_regtile_2d_t_strided keeps 06_register_tiling's loop to show what that is worth).
// Edges: zero-padded loads and guarded stores, as before; any size works.

// PASSES: the tile loads count passes from 0 (true) or walk i = tid, tid + THREADS, ... as
// 06_register_tiling does (false; kept to measure the difference).
template <int BM, int BN, int BK, int TM, int TN, bool PASSES = true>
__device__ __forceinline__ void gemm_2d_t(const float* __restrict__ A, const float* __restrict__ B,
                                          float* __restrict__ C, int M, int N, int K)
{
    constexpr int TX = BN / TN, TY = BM / TM, THREADS = TX * TY;   // threads along N and along M
    constexpr int PAD = 4;                   // As rows of BM+4 floats: rows stay 16-byte aligned, and with
                                             // BK = 8 one warp's transposing stores cover all 32 banks
                                             // (with BK >= 16 two lanes share a bank: chapter 7)
    static_assert(TM == 8 && TN == 8, "the thread tile is two by two 4x4 blocks");
    static_assert((BM * BK) % THREADS == 0 && (BK * BN) % THREADS == 0 && THREADS % BK == 0 && THREADS % BN == 0,
                  "tiles must split into whole passes of the block's threads");
    __shared__ __align__(16) float As[BK][BM + PAD];
    __shared__ __align__(16) float Bs[BK][BN];
    const int tid = threadIdx.x;
    const int tx = tid % TX, ty = tid / TX;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM][TN] = {{0.0f}};

    // Each thread loads the same places of every tile: A rows a_r + p*A_STEP at column a_c, B rows
    // b_r + p*B_STEP at column b_c. Counting passes p from 0 (not i from tid) gives the compiler a fixed
    // trip count, so it unrolls the loads, issues all of them before the first store, and folds the
    // offsets into the instructions.
    constexpr int A_STEP = THREADS / BK, B_STEP = THREADS / BN;
    const int a_r = tid / BK, a_c = tid % BK, b_r = tid / BN, b_c = tid % BN;
    for (int k0 = 0; k0 < K; k0 += BK) {
        if (PASSES) {
#pragma unroll
            for (int p = 0; p < BM * BK / THREADS; ++p) {         // A: coalesced along k, stored transposed
                const int r = a_r + p * A_STEP;
                As[a_c][r] = (row0 + r < M && k0 + a_c < K) ? A[(size_t)(row0 + r) * K + k0 + a_c] : 0.0f;
            }
#pragma unroll
            for (int p = 0; p < BK * BN / THREADS; ++p) {         // B: coalesced along n, stored as is
                const int r = b_r + p * B_STEP;
                Bs[r][b_c] = (k0 + r < K && col0 + b_c < N) ? B[(size_t)(k0 + r) * N + col0 + b_c] : 0.0f;
            }
        } else {                                 // the trip count depends on tid: a loop at run time
#pragma unroll
            for (int i = tid; i < BM * BK; i += THREADS) {
                const int r = i / BK, c = i % BK;
                As[c][r] = (row0 + r < M && k0 + c < K) ? A[(size_t)(row0 + r) * K + k0 + c] : 0.0f;
            }
#pragma unroll
            for (int i = tid; i < BK * BN; i += THREADS) {
                const int r = i / BN, c = i % BN;
                Bs[r][c] = (k0 + r < K && col0 + c < N) ? B[(size_t)(k0 + r) * N + col0 + c] : 0.0f;
            }
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
#pragma unroll
            for (int h = 0; h < 2; ++h) {                           // two float4 of A, two of B
                const float4 av = *reinterpret_cast<const float4*>(&As[k][ty * 4 + h * BM / 2]);
                const float4 bv = *reinterpret_cast<const float4*>(&Bs[k][tx * 4 + h * BN / 2]);
                a[4 * h + 0] = av.x; a[4 * h + 1] = av.y; a[4 * h + 2] = av.z; a[4 * h + 3] = av.w;
                b[4 * h + 0] = bv.x; b[4 * h + 1] = bv.y; b[4 * h + 2] = bv.z; b[4 * h + 3] = bv.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int r = row0 + ty * 4 + (i % 4) + (i / 4) * BM / 2;
            const int c = col0 + tx * 4 + (j % 4) + (j / 4) * BN / 2;
            if (r < M && c < N)
                C[(size_t)r * N + c] = acc[i][j];
        }
}

extern "C" {
// 128x128 block tile, K-tile 8, 8x8 per thread as 2x2 blocks of 4x4: 256 threads, 2 blocks per SM.
__global__ void __launch_bounds__(256, 2) gemm_regtile_2d_t(const float* A, const float* B, float* C, int M, int N, int K)
{ gemm_2d_t<128, 128, 8, 8, 8>(A, B, C, M, N, K); }
// The same with the tile loads walking i = tid, tid + 256, ...: the compiler cannot count that loop.
__global__ void __launch_bounds__(256, 2) gemm_regtile_2d_t_strided(const float* A, const float* B, float* C, int M, int N, int K)
{ gemm_2d_t<128, 128, 8, 8, 8, false>(A, B, C, M, N, K); }
// K-tile 16: half the barriers and load rounds per FMA.
__global__ void __launch_bounds__(256, 2) gemm_regtile_2d_t_k16(const float* A, const float* B, float* C, int M, int N, int K)
{ gemm_2d_t<128, 128, 16, 8, 8>(A, B, C, M, N, K); }
// K-tile 32: a quarter of the barriers of K-tile 8 (33 KB of shared memory: 2 blocks per SM on an H200, 1 on a T4).
__global__ void __launch_bounds__(256, 2) gemm_regtile_2d_t_k32(const float* A, const float* B, float* C, int M, int N, int K)
{ gemm_2d_t<128, 128, 32, 8, 8>(A, B, C, M, N, K); }
}
