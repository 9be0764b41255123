// C = A·B (row-major, float32) with one thread per element of C, every operand read from global memory.
// The baseline of the course: thread (row, col) walks row `row` of A and column `col` of B,
// two global loads for every multiply-add (0.25 FLOP per byte requested).
// COLUMN picks the mapping of threads to C: false, threadIdx.x runs along a row of C (a warp's lanes
// are neighbours in one row: coalesced); true, it runs down a column (lanes 32 rows apart).

template <int BLOCK, bool COLUMN>
__device__ __forceinline__ void naive_gemm(const float* __restrict__ A, const float* __restrict__ B,
                                           float* __restrict__ C, int M, int N, int K)
{
    const int row = blockIdx.y * BLOCK + (COLUMN ? threadIdx.x : threadIdx.y);
    const int col = blockIdx.x * BLOCK + (COLUMN ? threadIdx.y : threadIdx.x);
    // Leaving early is safe here only because this kernel has no __syncthreads() (see chapter 3).
    if (row >= M || col >= N)
        return;
    const float* a = A + (size_t)row * K;   // size_t: M*K can pass 2^31 elements
    const float* b = B + col;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc += a[k] * b[(size_t)k * N];
    C[(size_t)row * N + col] = acc;
}

// One 32x32 block of threads computes one 32x32 block of C: grid = ceil(N/32) x ceil(M/32).
extern "C" __global__ void __launch_bounds__(1024)
gemm_naive(const float* A, const float* B, float* C, int M, int N, int K)
{
    naive_gemm<32, false>(A, B, C, M, N, K);
}

// The same blocks and grid, threads mapped the other way: a warp walks down a column of C (chapter 1).
extern "C" __global__ void __launch_bounds__(1024)
gemm_naive_column(const float* A, const float* B, float* C, int M, int N, int K)
{
    naive_gemm<32, true>(A, B, C, M, N, K);
}
