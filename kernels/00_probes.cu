// Chapter 0 probes: the three smallest kernels that tell us what this GPU is.
//   hello_ids  - every thread writes where it sits (block, thread, global index): the mapping all later kernels use.
//   copy_f32   - streams one buffer into another: the DRAM bandwidth ceiling of the roofline;
//                copy_passes_f32 repeats it in one launch to see what L2 delivers to small buffers.
//   fma_f32    - independent chains of fused multiply-adds: the FP32 compute ceiling of the roofline.

extern "C" __global__ void hello_ids(int* out, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[3 * i + 0] = blockIdx.x;
        out[3 * i + 1] = threadIdx.x;
        out[3 * i + 2] = i;
    }
}

// One 16-byte float4 per thread, the simplest and (measured on the H200) fastest way to stream
// a large buffer: many short-lived blocks, nothing but a load and a store in each thread. The last
// n % 4 floats go to the threads just past the last float4. __restrict__: src and dst never overlap,
// so loads may take the read-only path. cudaMalloc'd buffers are 256-byte aligned, so the float4
// casts are legal.
extern "C" __global__ void copy_f32(const float* __restrict__ src, float* __restrict__ dst, long long n)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long n4 = n / 4;
    if (i < n4)
        reinterpret_cast<float4*>(dst)[i] = reinterpret_cast<const float4*>(src)[i];
    else if (i - n4 < n % 4)
        dst[4 * n4 + (i - n4)] = src[4 * n4 + (i - n4)];
}

// The same copy repeated `passes` times in one launch, so that the bytes a launch moves can be
// timed even when the buffers are small enough to stay in L2. The grid is one resident wave that
// strides over the whole buffer in every pass, so a pass finds the previous pass's data in a cache
// only if the whole buffer fits there. The empty asm with a "memory" clobber stops the compiler
// from merging the identical passes into one.
extern "C" __global__ void copy_passes_f32(const float* __restrict__ src, float* __restrict__ dst,
                                           long long n, int passes)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long n4 = n / 4;
    const float4* s4 = reinterpret_cast<const float4*>(src);
    float4* d4 = reinterpret_cast<float4*>(dst);
    for (int p = 0; p < passes; ++p) {
        for (long long i = first; i < n4; i += stride)
            d4[i] = s4[i];
        for (long long j = 4 * n4 + first; j < n; j += stride)
            dst[j] = src[j];
        asm volatile("" ::: "memory");
    }
}

// FMA_CHAINS independent accumulators per thread: an FMA's result is ready only after a few
// cycles, so one chain alone would leave the FP32 pipes idle between dependent FMAs.
// The loop is unrolled 16 times so that its counter, compare and branch take a small share of
// the instructions issued. x <- x*a + b converges to b / (1 - a); with a = b = 0.5 every chain
// ends at 1.0, so each thread must write FMA_CHAINS * 1.0 and the host can check the work ran.
// The host counts FLOPs with the same number: gemmlab passes it (-DFMA_CHAINS, gemmlab/compile_units.py).
#ifndef FMA_CHAINS
#error "compile with -DFMA_CHAINS=<chains per thread>, as gemmlab does (gemmlab/compile_units.py)"
#endif
extern "C" __global__ void fma_f32(float* out, int iters, float a, float b)
{
    float x[FMA_CHAINS];
#pragma unroll
    for (int c = 0; c < FMA_CHAINS; ++c)
        x[c] = (float)(threadIdx.x + c);
#pragma unroll 16
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int c = 0; c < FMA_CHAINS; ++c)
            x[c] = fmaf(x[c], a, b);
    }
    float sum = 0.0f;
#pragma unroll
    for (int c = 0; c < FMA_CHAINS; ++c)
        sum += x[c];
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
