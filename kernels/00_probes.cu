// Chapter 0 probes: the three smallest kernels that tell us what this GPU is.
//   hello_ids  - every thread writes where it sits (block, thread, global index): the mapping all later kernels use.
//   copy_f32   - streams one buffer into another: the DRAM bandwidth ceiling of the roofline.
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

// Grid-stride loop so any grid covers any n. The body moves float4s (16-byte loads and
// stores, fewer instructions per byte); the scalar tail takes the last n % 4 floats.
// cudaMalloc'd buffers are 256-byte aligned, so the float4 casts are legal.
extern "C" __global__ void copy_f32(const float* __restrict__ src, float* __restrict__ dst, long long n)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long n4 = n / 4;
    const float4* __restrict__ s4 = reinterpret_cast<const float4*>(src);
    float4* __restrict__ d4 = reinterpret_cast<float4*>(dst);
    for (long long i = first; i < n4; i += stride)
        d4[i] = s4[i];
    for (long long i = 4 * n4 + first; i < n; i += stride)
        dst[i] = src[i];
}

// CHAINS independent accumulators per thread: an FMA's result is ready only after a few
// cycles, so one chain alone would leave the FP32 pipes idle between dependent FMAs.
// x <- x*a + b converges to b / (1 - a); with a = 0.5, b = 0.5 every chain ends at 1.0,
// so each thread must write CHAINS * 1.0 and the host can check the work really ran.
#define CHAINS 8
extern "C" __global__ void fma_f32(float* out, int iters, float a, float b)
{
    float x[CHAINS];
#pragma unroll
    for (int c = 0; c < CHAINS; ++c)
        x[c] = (float)(threadIdx.x + c);
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int c = 0; c < CHAINS; ++c)
            x[c] = fmaf(x[c], a, b);
    }
    float sum = 0.0f;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c)
        sum += x[c];
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
