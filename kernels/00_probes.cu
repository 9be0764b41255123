// Chapter 0 probes: the three smallest kernels that tell us what this GPU is.
//   hello_ids  - every thread writes where it sits (block, thread, global index): the mapping all later kernels use.
//   copy_f32   - streams one buffer into another: the DRAM bandwidth ceiling of the roofline.
//   fma_f32    - independent chains of fused multiply-adds: the FP32 compute ceiling of the roofline,
//                and the SM clock it really ran at.

extern "C" __global__ void hello_ids(int* out, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[3 * i + 0] = blockIdx.x;
        out[3 * i + 1] = threadIdx.x;
        out[3 * i + 2] = i;
    }
}

// Grid-stride loop so any grid covers any n, four 16-byte float4 loads in flight per thread
// before their stores (more bytes in flight hides DRAM latency); the scalar tail takes the last
// n % 4 floats. `passes` > 1 copies back and forth (a -> b, b -> a, ...) so that one launch moves
// enough bytes to time even when both buffers fit in L2; each thread touches the same indices in
// every pass, so no pass reads what another thread is still writing. cudaMalloc'd buffers are
// 256-byte aligned, so the float4 casts are legal.
extern "C" __global__ void copy_f32(float* a, float* b, long long n, int passes)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long n4 = n / 4;
    for (int p = 0; p < passes; ++p) {
        const float* src = (p & 1) ? b : a;
        float* dst = (p & 1) ? a : b;
        const float4* s4 = reinterpret_cast<const float4*>(src);
        float4* d4 = reinterpret_cast<float4*>(dst);
        long long i = first;
        for (; i + 3 * stride < n4; i += 4 * stride) {
            const float4 v0 = s4[i], v1 = s4[i + stride], v2 = s4[i + 2 * stride], v3 = s4[i + 3 * stride];
            d4[i] = v0; d4[i + stride] = v1; d4[i + 2 * stride] = v2; d4[i + 3 * stride] = v3;
        }
        for (; i < n4; i += stride)
            d4[i] = s4[i];
        for (long long j = 4 * n4 + first; j < n; j += stride)
            dst[j] = src[j];
    }
}

// CHAINS independent accumulators per thread: an FMA's result is ready only after a few
// cycles, so one chain alone would leave the FP32 pipes idle between dependent FMAs.
// x <- x*a + b converges to b / (1 - a); with a = 0.5, b = 0.5 every chain ends at 1.0,
// so each thread must write CHAINS * 1.0 and the host can check the work really ran.
// Thread 0 of each block also records the SM cycles (clock64) and nanoseconds (%globaltimer)
// its block took: their ratio is the clock the SM really ran at under this load.
#define CHAINS 8
extern "C" __global__ void fma_f32(float* out, long long* clocks, int iters, float a, float b)
{
    const long long c0 = clock64();
    unsigned long long t0, t1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
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
    if (threadIdx.x == 0) {
        const long long c1 = clock64();
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
        clocks[2 * blockIdx.x] = c1 - c0;
        clocks[2 * blockIdx.x + 1] = (long long)(t1 - t0);
    }
}
