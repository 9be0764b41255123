// Occupancy probes for chapter 5: kernels that do almost nothing but hold R values live in
// registers, so that the compiler gives them about R registers per thread.
// They let the chapter sweep registers, block size and (dynamic) shared memory independently and
// compare gemmlab.models.occupancy with the driver's answer. Each writes one value per thread.

template <int R>
__device__ __forceinline__ void hold_registers(float* out, float seed, int iters)
{
    extern __shared__ float scratch[];   // sized at launch: the shared-memory axis of the sweep
    float v[R];
#pragma unroll
    for (int i = 0; i < R; ++i)
        v[i] = seed * (i + 1) + threadIdx.x;
    for (int it = 0; it < iters; ++it)   // every v[i] feeds the next round, so all R stay live
#pragma unroll
        for (int i = 0; i < R; ++i)
            v[i] = fmaf(v[i], 0.5f, v[(i + 1) % R]);
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < R; ++i)
        s += v[i];
    if (s == -1.0f)                      // never true for the seeds used; keeps scratch referenced
        scratch[threadIdx.x] = s;
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

extern "C" {
__global__ void occupancy_probe_r16(float* out, float seed, int iters)  { hold_registers<16>(out, seed, iters); }
__global__ void occupancy_probe_r40(float* out, float seed, int iters)  { hold_registers<40>(out, seed, iters); }
__global__ void occupancy_probe_r64(float* out, float seed, int iters)  { hold_registers<64>(out, seed, iters); }
__global__ void __launch_bounds__(512) occupancy_probe_r100(float* out, float seed, int iters) { hold_registers<100>(out, seed, iters); }
__global__ void __launch_bounds__(256) occupancy_probe_r160(float* out, float seed, int iters) { hold_registers<160>(out, seed, iters); }
__global__ void __launch_bounds__(256) occupancy_probe_r240(float* out, float seed, int iters) { hold_registers<240>(out, seed, iters); }
}
