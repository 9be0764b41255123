// C = A·B with T x T tiles of A and B staged in shared memory, one thread per element of C.
// Changed from 01_naive: the block loads each tile from global memory once, cooperatively, and
// every value is then read T times from shared memory - global load requests drop by T.

template <int T>
__device__ __forceinline__ void tiled_gemm(const float* __restrict__ A, const float* __restrict__ B,
                                           float* __restrict__ C, int M, int N, int K)
{
    __shared__ float As[T][T];
    __shared__ float Bs[T][T];
    const int ty = threadIdx.y, tx = threadIdx.x;
    const int row = blockIdx.y * T + ty;
    const int col = blockIdx.x * T + tx;
    float acc = 0.0f;

    // No early return: threads outside C still load (zeros) and reach both barriers.
    for (int k0 = 0; k0 < K; k0 += T) {
        const int ka = k0 + tx;   // this thread's column of the A tile
        const int kb = k0 + ty;   // this thread's row of the B tile
        As[ty][tx] = (row < M && ka < K) ? A[(size_t)row * K + ka] : 0.0f;
        Bs[ty][tx] = (kb < K && col < N) ? B[(size_t)kb * N + col] : 0.0f;
        __syncthreads();          // both tiles complete before anyone reads them

#pragma unroll
        for (int k = 0; k < T; ++k)
            acc += As[ty][k] * Bs[k][tx];
        __syncthreads();          // everyone done reading before the next phase overwrites them
    }
    if (row < M && col < N)       // only the store is guarded
        C[(size_t)row * N + col] = acc;
}

extern "C" {
__global__ void __launch_bounds__(64)   gemm_tiled_8(const float* A, const float* B, float* C, int M, int N, int K)  { tiled_gemm<8>(A, B, C, M, N, K); }
__global__ void __launch_bounds__(256)  gemm_tiled_16(const float* A, const float* B, float* C, int M, int N, int K) { tiled_gemm<16>(A, B, C, M, N, K); }
__global__ void __launch_bounds__(1024) gemm_tiled_32(const float* A, const float* B, float* C, int M, int N, int K) { tiled_gemm<32>(A, B, C, M, N, K); }
}
