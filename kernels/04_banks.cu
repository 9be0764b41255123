// C = A·B with 32x32 shared-memory tiles, in two layouts of the B tile that chapter 4 compares
// with chapter 2's kernel (02_tiled.cu): stored transposed, and transposed with one column of padding.
// Changed from 02_tiled: only where Bs[.][.] is written and read; the arithmetic is the same.

// Bs stored transposed, Bs[col][k]: a warp (32 neighbouring tx) reads a *column* of the array,
// 32 words 32 floats apart, all in one bank - a 32-way bank conflict on every read.
// PAD = 1 makes the rows 33 floats long, so those 32 words fall in 32 different banks.
template <int T, int PAD>
__device__ __forceinline__ void tiled_gemm_bt(const float* __restrict__ A, const float* __restrict__ B,
                                              float* __restrict__ C, int M, int N, int K)
{
    __shared__ float As[T][T];
    __shared__ float Bs[T][T + PAD];
    const int ty = threadIdx.y, tx = threadIdx.x;
    const int row = blockIdx.y * T + ty;
    const int col = blockIdx.x * T + tx;
    float acc = 0.0f;

    for (int k0 = 0; k0 < K; k0 += T) {
        const int ka = k0 + tx;
        const int kb = k0 + ty;
        As[ty][tx] = (row < M && ka < K) ? A[(size_t)row * K + ka] : 0.0f;
        Bs[tx][ty] = (kb < K && col < N) ? B[(size_t)kb * N + col] : 0.0f;   // transposed store
        __syncthreads();

#pragma unroll
        for (int k = 0; k < T; ++k)
            acc += As[ty][k] * Bs[tx][k];                                     // column read across the warp
        __syncthreads();
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = acc;
}

extern "C" {
__global__ void __launch_bounds__(1024) gemm_banks_transposed_32(const float* A, const float* B, float* C, int M, int N, int K) { tiled_gemm_bt<32, 0>(A, B, C, M, N, K); }
__global__ void __launch_bounds__(1024) gemm_banks_padded_32(const float* A, const float* B, float* C, int M, int N, int K)     { tiled_gemm_bt<32, 1>(A, B, C, M, N, K); }
}

// A probe for the profiler's counters, not a GEMM: conflict-free shared-memory stores and loads in a
// loop, optionally with global loads in flight at the same time. Chapter 4 uses it to ask where the
// few "bank conflicts" Nsight Compute reports for conflict-free kernels come from.
extern "C" __global__ void __launch_bounds__(1024)
bank_probe(float* out, const float* __restrict__ in, int iters, int with_global_loads)
{
    __shared__ float s[1024];
    const int t = threadIdx.x;
    float v = (float)t;
    for (int i = 0; i < iters; ++i) {
        if (with_global_loads)    // one coalesced float per thread, through L1
            v += in[((size_t)i * gridDim.x + blockIdx.x) * 1024 + t];
        s[t] = v;                 // 32 consecutive words per warp: one wavefront
        __syncthreads();
        v += s[t ^ 1];            // the neighbour's word: still 32 words in 32 banks
        __syncthreads();
    }
    out[(size_t)blockIdx.x * 1024 + t] = v;
}
