// C = A·B with register tiling: each thread computes several elements of C from values it holds
// in registers. Changed from 02_tiled: the block tile (BM×BN) no longer equals the thread block;
// 1D: a thread computes TM elements of one column (one B value in a register feeds TM FMAs);
// 2D: a thread computes a TM×TN outer product (TM + TN shared loads feed TM·TN FMAs).
// Edges: tiles are loaded with zero padding and only in-range elements are stored, so any size works.

// Both kernels stage a BM×BK tile of A and a BK×BN tile of B per phase; THREADS threads share the
// loads, zero-padding what lies outside the matrices.
template <int BM, int BN, int BK, int THREADS>
__device__ __forceinline__ void load_tiles(float (*As)[BK], float (*Bs)[BN], const float* __restrict__ A,
                                           const float* __restrict__ B, int M, int N, int K,
                                           int row0, int col0, int k0)
{
    for (int i = threadIdx.x; i < BM * BK; i += THREADS) {
        const int r = i / BK, c = i % BK;
        As[r][c] = (row0 + r < M && k0 + c < K) ? A[(size_t)(row0 + r) * K + k0 + c] : 0.0f;
    }
    for (int i = threadIdx.x; i < BK * BN; i += THREADS) {
        const int r = i / BN, c = i % BN;
        Bs[r][c] = (k0 + r < K && col0 + c < N) ? B[(size_t)(k0 + r) * N + col0 + c] : 0.0f;
    }
}

template <int BM, int BN, int BK, int TM>
__device__ __forceinline__ void gemm_1d(const float* __restrict__ A, const float* __restrict__ B,
                                        float* __restrict__ C, int M, int N, int K)
{
    constexpr int THREADS = (BM / TM) * BN;
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];
    const int tid = threadIdx.x;
    const int tx = tid % BN, ty = tid / BN;           // column of the tile, group of TM rows
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM] = {0.0f};

    for (int k0 = 0; k0 < K; k0 += BK) {
        load_tiles<BM, BN, BK, THREADS>(As, Bs, A, B, M, N, K, row0, col0, k0);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            const float b = Bs[k][tx];                // one shared load, TM multiply-adds
#pragma unroll
            for (int i = 0; i < TM; ++i)
                acc[i] += As[ty * TM + i][k] * b;
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = row0 + ty * TM + i, c = col0 + tx;
        if (r < M && c < N)
            C[(size_t)r * N + c] = acc[i];
    }
}

template <int BM, int BN, int BK, int TM, int TN>
__device__ __forceinline__ void gemm_2d(const float* __restrict__ A, const float* __restrict__ B,
                                        float* __restrict__ C, int M, int N, int K)
{
    constexpr int THREADS = (BM / TM) * (BN / TN);
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];
    const int tid = threadIdx.x;
    const int tx = tid % (BN / TN), ty = tid / (BN / TN);
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM][TN] = {{0.0f}};
    float a[TM], b[TN];

    for (int k0 = 0; k0 < K; k0 += BK) {
        load_tiles<BM, BN, BK, THREADS>(As, Bs, A, B, M, N, K, row0, col0, k0);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; ++i)
                a[i] = As[ty * TM + i][k];
#pragma unroll
            for (int j = 0; j < TN; ++j)
                b[j] = Bs[k][tx * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    acc[i][j] += a[i] * b[j];         // the outer product, all in registers
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int r = row0 + ty * TM + i, c = col0 + tx * TN + j;
            if (r < M && c < N)
                C[(size_t)r * N + c] = acc[i][j];
        }
}

extern "C" {
// 64x64 block tile, K-tile 8, 8 rows per thread: 512 threads.
__global__ void __launch_bounds__(512) gemm_regtile_1d(const float* A, const float* B, float* C, int M, int N, int K)
{ gemm_1d<64, 64, 8, 8>(A, B, C, M, N, K); }
// 128x128 block tile, K-tile 8, 8x8 per thread: 256 threads.
__global__ void __launch_bounds__(256) gemm_regtile_2d(const float* A, const float* B, float* C, int M, int N, int K)
{ gemm_2d<128, 128, 8, 8, 8>(A, B, C, M, N, K); }
}
