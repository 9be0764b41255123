// The chapter 2 tiled kernel with one change, the bug chapter 3 is about: threads whose element
// lies outside C return at the top, before the tile loop and its two __syncthreads().
// Wrong on purpose; it is not in gemmlab.kernels(). The correct kernel is 02_tiled.cu.

template <int T>
__device__ __forceinline__ void tiled_gemm_early_return(const float* __restrict__ A, const float* __restrict__ B,
                                                        float* __restrict__ C, int M, int N, int K)
{
    __shared__ float As[T][T];
    __shared__ float Bs[T][T];
    const int ty = threadIdx.y, tx = threadIdx.x;
    const int row = blockIdx.y * T + ty;
    const int col = blockIdx.x * T + tx;
    if (row >= M || col >= N)
        return;                   // THE BUG: these threads never load their tile elements nor reach the barriers
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += T) {
        const int ka = k0 + tx;
        const int kb = k0 + ty;
        As[ty][tx] = (ka < K) ? A[(size_t)row * K + ka] : 0.0f;
        Bs[ty][tx] = (kb < K) ? B[(size_t)kb * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < T; ++k)
            acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    C[(size_t)row * N + col] = acc;
}

extern "C" __global__ void __launch_bounds__(1024)
gemm_tiled_early_return_32(const float* A, const float* B, float* C, int M, int N, int K)
{
    tiled_gemm_early_return<32>(A, B, C, M, N, K);
}
