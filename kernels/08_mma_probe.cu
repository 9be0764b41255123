// Chapter 8 probes (tensor cores): one warp runs one mma.sync or one ldmatrix, and each lane writes its registers back raw.
// New since chapter 7: inline PTX for the tensor cores. The kernels know no layout: the host packs what each lane
// holds (gemmlab.mma) and checks what comes back.
//
//   mma_probe_<shape>_<type>(a, b, c, d) - lane l loads its A, B and C registers from a[l][.], b[l][.], c[l][.]
//       (32-bit words, packed on the host), runs one mma.sync and writes its four D registers to d[l][0..3]
//       as raw FP32 bits. If the host placed each element where gemmlab.mma says the lane holds it, then
//       D = A·B + C element by element where the same model says D sits; a wrong layout breaks the product.
//       The sm_80 forms write MMA_PROBE_SENTINEL instead where they are compiled for an older GPU (a T4).
//   ldmatrix_probe(image, words, offsets, out, num, trans) - copies a shared-memory image (words 32-bit
//       words) into shared memory, runs ldmatrix.x<num>{.trans} with lane l's row address at byte offset
//       offsets[l] of it, and writes the destination registers to out[l][0..num-1] (the rest: the sentinel).
//       With an image whose entries are their own indices, out says which element each lane receives.
//
// Launch each with one block of one warp: block (32, 1, 1), grid (1, 1, 1).

#define MMA_PROBE_SENTINEL 0xFFFFFFFFu
#define LDMATRIX_IMAGE_BYTES 8192

__device__ __forceinline__ void store_d(unsigned* __restrict__ d, int lane, float d0, float d1, float d2, float d3)
{
    d[4 * lane + 0] = __float_as_uint(d0);
    d[4 * lane + 1] = __float_as_uint(d1);
    d[4 * lane + 2] = __float_as_uint(d2);
    d[4 * lane + 3] = __float_as_uint(d3);
}

__device__ __forceinline__ void store_sentinel(unsigned* __restrict__ d, int lane)
{
    for (int i = 0; i < 4; ++i)
        d[4 * lane + i] = MMA_PROBE_SENTINEL;
}

// m16n8k16 with FP32 accumulators (sm_80): A 4 registers (8 halves), B 2 (4 halves), C and D 4 floats.
// BF16 picks .bf16 operands instead of .f16; the layout is the same.
template <bool BF16>
__device__ __forceinline__ void mma_m16n8k16(const unsigned* __restrict__ a, const unsigned* __restrict__ b,
                                             const float* __restrict__ c, unsigned* __restrict__ d, int lane)
{
#if __CUDA_ARCH__ >= 800
    float d0, d1, d2, d3;
    if constexpr (BF16)
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
            "{%10, %11, %12, %13};"
            : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
            : "r"(a[4 * lane + 0]), "r"(a[4 * lane + 1]), "r"(a[4 * lane + 2]), "r"(a[4 * lane + 3]),
              "r"(b[2 * lane + 0]), "r"(b[2 * lane + 1]),
              "f"(c[4 * lane + 0]), "f"(c[4 * lane + 1]), "f"(c[4 * lane + 2]), "f"(c[4 * lane + 3]));
    else
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
            "{%10, %11, %12, %13};"
            : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
            : "r"(a[4 * lane + 0]), "r"(a[4 * lane + 1]), "r"(a[4 * lane + 2]), "r"(a[4 * lane + 3]),
              "r"(b[2 * lane + 0]), "r"(b[2 * lane + 1]),
              "f"(c[4 * lane + 0]), "f"(c[4 * lane + 1]), "f"(c[4 * lane + 2]), "f"(c[4 * lane + 3]));
    store_d(d, lane, d0, d1, d2, d3);
#else
    store_sentinel(d, lane);
#endif
}

extern "C" __global__ void __launch_bounds__(32)
mma_probe_m16n8k16_f16(const unsigned* __restrict__ a, const unsigned* __restrict__ b, const float* __restrict__ c,
                       unsigned* __restrict__ d)
{
    mma_m16n8k16<false>(a, b, c, d, threadIdx.x);
}

extern "C" __global__ void __launch_bounds__(32)
mma_probe_m16n8k16_bf16(const unsigned* __restrict__ a, const unsigned* __restrict__ b, const float* __restrict__ c,
                        unsigned* __restrict__ d)
{
    mma_m16n8k16<true>(a, b, c, d, threadIdx.x);
}

// m16n8k8 .f16 (sm_75, the T4's tensor-core instruction): A 2 registers (4 halves), B 1 (2 halves).
extern "C" __global__ void __launch_bounds__(32)
mma_probe_m16n8k8_f16(const unsigned* __restrict__ a, const unsigned* __restrict__ b, const float* __restrict__ c,
                      unsigned* __restrict__ d)
{
    const int lane = threadIdx.x;
    float d0, d1, d2, d3;
    asm("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %8, %9, %10};"
        : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
        : "r"(a[2 * lane + 0]), "r"(a[2 * lane + 1]), "r"(b[lane]),
          "f"(c[4 * lane + 0]), "f"(c[4 * lane + 1]), "f"(c[4 * lane + 2]), "f"(c[4 * lane + 3]));
    store_d(d, lane, d0, d1, d2, d3);
}

// m16n8k8 .tf32 (sm_80): one TF32 value (FP32 bits, 10 mantissa bits used) per register: A 4, B 2.
extern "C" __global__ void __launch_bounds__(32)
mma_probe_m16n8k8_tf32(const unsigned* __restrict__ a, const unsigned* __restrict__ b, const float* __restrict__ c,
                       unsigned* __restrict__ d)
{
    const int lane = threadIdx.x;
#if __CUDA_ARCH__ >= 800
    float d0, d1, d2, d3;
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%10, %11, %12, %13};"
        : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
        : "r"(a[4 * lane + 0]), "r"(a[4 * lane + 1]), "r"(a[4 * lane + 2]), "r"(a[4 * lane + 3]),
          "r"(b[2 * lane + 0]), "r"(b[2 * lane + 1]),
          "f"(c[4 * lane + 0]), "f"(c[4 * lane + 1]), "f"(c[4 * lane + 2]), "f"(c[4 * lane + 3]));
    store_d(d, lane, d0, d1, d2, d3);
#else
    store_sentinel(d, lane);
#endif
}

// ldmatrix (sm_75): .num and .trans are part of the instruction, so each combination is its own asm;
// num and trans are the same for the whole warp, as ldmatrix requires. "memory": the asm reads the
// shared memory written before the barrier.
extern "C" __global__ void __launch_bounds__(32)
ldmatrix_probe(const unsigned* __restrict__ image, int words, const unsigned* __restrict__ offsets,
               unsigned* __restrict__ out, int num, int trans)
{
    __shared__ __align__(16) unsigned tile[LDMATRIX_IMAGE_BYTES / 4];
    const int lane = threadIdx.x;
    for (int i = lane; i < words && i < LDMATRIX_IMAGE_BYTES / 4; i += 32)
        tile[i] = image[i];
    __syncthreads();
    const unsigned p = static_cast<unsigned>(__cvta_generic_to_shared(tile)) + offsets[lane];
    unsigned r0 = MMA_PROBE_SENTINEL, r1 = MMA_PROBE_SENTINEL, r2 = MMA_PROBE_SENTINEL, r3 = MMA_PROBE_SENTINEL;
    if (num == 1 && !trans)
        asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r0) : "r"(p) : "memory");
    else if (num == 1)
        asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];" : "=r"(r0) : "r"(p) : "memory");
    else if (num == 2 && !trans)
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(p) : "memory");
    else if (num == 2)
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(p)
                     : "memory");
    else if (num == 4 && !trans)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(p) : "memory");
    else if (num == 4)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(p) : "memory");
    out[4 * lane + 0] = r0;
    out[4 * lane + 1] = r1;
    out[4 * lane + 2] = r2;
    out[4 * lane + 3] = r3;
}

// [ceiling]
// The tensor cores' ceiling for one instruction, as chapter 0's fma_f32 measures the FP32 one: each warp runs
// MMA_CHAINS independent accumulators through `iters` rounds of mma.sync, so no instruction waits for the one
// before it, and writes one sum per lane so that nothing is optimised away. FLOPs per mma: 2 x M x N x K.
// Every chain has operand registers of its own, holding 1.0 with a few random low mantissa bits, computed at run
// time. Both matter. One register of 1.0 for every operand (this probe until 2026-12-02) made the compiler copy it
// into the consecutive registers each mma.sync takes, 13 moves per 40 mma.sync, which cost 3.3% of the rate on the
// H200; distinct constants it rebuilds inside the loop, a move per register. And values near 1.0 barely change
// from one mma.sync to the next, so the probe keeps the top clock: with random numbers, as a GEMM multiplies, the
// bare instruction meets the H200's 700 W cap when it runs for seconds, and its rate then says more about the
// board's power than about the tensor cores (results/probe-data-h200.txt).
#ifndef MMA_CHAINS
#error "compile through gemmlab, which passes -DMMA_CHAINS (gemmlab.compile_units.MMA_CHAINS)"
#endif

#if __CUDA_ARCH__ >= 800
#define MMA_SM80 true
#else
#define MMA_SM80 false
#endif

__device__ __forceinline__ unsigned probe_hash(unsigned x)     // neighbouring seeds, unrelated bits
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

// Each warp: `iters` rounds of MMA_CHAINS independent mma.sync of form F (F::run adds A.B into c). F::A_REGS and
// F::B_REGS: A's and B's registers per lane; F::ONE: 1.0 in each value a register holds; F::LOW: the mantissa bits
// that may differ from it.
template <typename F>
__device__ __forceinline__ void mma_ceiling(float* __restrict__ out, int iters)
{
    float c[MMA_CHAINS][4] = {};
    unsigned a[MMA_CHAINS][F::A_REGS], b[MMA_CHAINS][F::B_REGS];
    const unsigned seed = (blockIdx.x * blockDim.x + threadIdx.x) * 8u * MMA_CHAINS;
#pragma unroll
    for (int ch = 0; ch < MMA_CHAINS; ++ch) {
#pragma unroll
        for (int r = 0; r < F::A_REGS; ++r)
            a[ch][r] = F::ONE ^ (probe_hash(seed + 8 * ch + r) & F::LOW);
#pragma unroll
        for (int r = 0; r < F::B_REGS; ++r)
            b[ch][r] = F::ONE ^ (probe_hash(seed + 8 * ch + 4 + r) & F::LOW);
    }
    if (F::supported) {
        for (int i = 0; i < iters; ++i) {
#pragma unroll
            for (int ch = 0; ch < MMA_CHAINS; ++ch)
                F::run(c[ch], a[ch], b[ch]);
        }
    }
    float s = 0.0f;
#pragma unroll
    for (int ch = 0; ch < MMA_CHAINS; ++ch)
        s += c[ch][0] + c[ch][1] + c[ch][2] + c[ch][3];
    out[blockIdx.x * blockDim.x + threadIdx.x] = F::supported ? s : -1.0f;
}

// The forms. `supported` is false where the form needs a newer GPU than the code is compiled for; run is empty there.
template <bool BF16>
struct K16 {                         // m16n8k16, two 16-bit values per register: 1.0 is 0x3C00 (FP16), 0x3F80 (BF16)
    static constexpr bool supported = MMA_SM80;
    static constexpr int A_REGS = 4, B_REGS = 2;
    static constexpr unsigned ONE = BF16 ? 0x3F803F80u : 0x3C003C00u, LOW = 0x000F000Fu;
    __device__ static void run(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2])
    {
#if __CUDA_ARCH__ >= 800
        if constexpr (BF16)
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                         "{%8, %9}, {%0, %1, %2, %3};"
                         : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
        else
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                         "{%8, %9}, {%0, %1, %2, %3};"
                         : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
    }
};
struct K8TF32 {                      // one TF32 value per register, FP32 bits: the tensor cores read mantissa bits 13-22
    static constexpr bool supported = MMA_SM80;
    static constexpr int A_REGS = 4, B_REGS = 2;
    static constexpr unsigned ONE = 0x3F800000u, LOW = 0x0001E000u;
    __device__ static void run(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2])
    {
#if __CUDA_ARCH__ >= 800
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                     "{%8, %9}, {%0, %1, %2, %3};"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
    }
};
struct K8F16 {                       // sm_75's form: A 2 registers, B 1
    static constexpr bool supported = true;
    static constexpr int A_REGS = 2, B_REGS = 1;
    static constexpr unsigned ONE = 0x3C003C00u, LOW = 0x000F000Fu;
    __device__ static void run(float (&c)[4], const unsigned (&a)[2], const unsigned (&b)[1])
    {
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, "
                     "{%0, %1, %2, %3};"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(b[0]));
    }
};

extern "C" __global__ void mma_ceiling_m16n8k16_f16(float* __restrict__ out, int iters)
{
    mma_ceiling<K16<false>>(out, iters);
}

extern "C" __global__ void mma_ceiling_m16n8k16_bf16(float* __restrict__ out, int iters)
{
    mma_ceiling<K16<true>>(out, iters);
}

extern "C" __global__ void mma_ceiling_m16n8k8_tf32(float* __restrict__ out, int iters)
{
    mma_ceiling<K8TF32>(out, iters);
}

extern "C" __global__ void mma_ceiling_m16n8k8_f16(float* __restrict__ out, int iters)
{
    mma_ceiling<K8F16>(out, iters);
}
// [/ceiling]
