# Does the tensor cores' ceiling depend on the numbers they multiply? Chapter 8's probe (kernels/08_mma_probe.cu,
# gemmlab.probes.mma_probe: "near" below) gives each chain operand registers of its own, holding 1.0 with 4 random
# low mantissa bits. Until 2026-12-02 it fed every mma.sync one register of 1.0 ("ones"), and the compiler copied
# it into the consecutive registers each mma.sync takes (13 moves per 40 mma.sync). Here the same loop (the same
# grid, warps, chains and instruction count) runs with the old operands and with random ones:
#   ones    1.0 in every operand, as the probe had it: the multipliers' inputs never change
#   random  random signs and mantissas in [0.5, 2), so that consecutive mma.sync see different inputs as a GEMM's do
# The two are checked for finite sums; all three timed as gemmlab.probes.mma_ceiling times the chapter's probe, then each probe
# (and, with --kernels, chapter 8's last step at 8192^3) runs alone for SECONDS while nvidia-smi samples clock and
# power (scripts/power_under_load.py's sampler), FP16 and BF16. Run on a GPU of sm_80 or later with nvidia-smi
# (about 60 s on the H200):
#   timeout 200 python3 drafts/08_probe_data_experiment.py [--seconds 3] [--kernels]
import argparse, importlib.util, sys, time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gemmlab import compile_units, compiler, device, gpu, mma, probes, registry, timing, verify

# Appended to the probe's file: one kernel per format and kind of operands, the chapter's loop with an operand set
# per chain.
OPERAND_PROBES = r"""
// probe_hash: the probe's own (kernels/08_mma_probe.cu).
// Two 16-bit values in [0.5, 2), random sign and mantissa: exponent 14 or 15 (FP16), 126 or 127 (BF16).
template <bool BF16>
__device__ __forceinline__ unsigned probe_pair(unsigned h)
{
    const unsigned lo = h & 0xFFFFu, hi = h >> 16;
    const unsigned a = BF16 ? ((lo & 0x80FFu) | 0x3F00u) : ((lo & 0x87FFu) | 0x3800u);
    const unsigned b = BF16 ? ((hi & 0x80FFu) | 0x3F00u) : ((hi & 0x87FFu) | 0x3800u);
    return a | (b << 16);
}

// RANDOM: probe_pair of hashed bits; otherwise 1.0 in every register (the compiler keeps it in one and copies it).
template <bool BF16, bool RANDOM>
__device__ __forceinline__ void mma_ceiling_operands(float* __restrict__ out, int iters)
{
#if __CUDA_ARCH__ >= 800
    float c[MMA_CHAINS][4] = {};
    unsigned a[MMA_CHAINS][4], b[MMA_CHAINS][2];
    const unsigned seed = (blockIdx.x * blockDim.x + threadIdx.x) * 8u * MMA_CHAINS;
    const unsigned one = BF16 ? 0x3F803F80u : 0x3C003C00u;
#pragma unroll
    for (int ch = 0; ch < MMA_CHAINS; ++ch) {
#pragma unroll
        for (int r = 0; r < 4; ++r)
            a[ch][r] = RANDOM ? probe_pair<BF16>(probe_hash(seed + 8 * ch + r)) : one;
#pragma unroll
        for (int r = 0; r < 2; ++r)
            b[ch][r] = RANDOM ? probe_pair<BF16>(probe_hash(seed + 8 * ch + 4 + r)) : one;
    }
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int ch = 0; ch < MMA_CHAINS; ++ch) {
            if constexpr (BF16)
                asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                             "{%8, %9}, {%0, %1, %2, %3};"
                             : "+f"(c[ch][0]), "+f"(c[ch][1]), "+f"(c[ch][2]), "+f"(c[ch][3])
                             : "r"(a[ch][0]), "r"(a[ch][1]), "r"(a[ch][2]), "r"(a[ch][3]), "r"(b[ch][0]), "r"(b[ch][1]));
            else
                asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                             "{%8, %9}, {%0, %1, %2, %3};"
                             : "+f"(c[ch][0]), "+f"(c[ch][1]), "+f"(c[ch][2]), "+f"(c[ch][3])
                             : "r"(a[ch][0]), "r"(a[ch][1]), "r"(a[ch][2]), "r"(a[ch][3]), "r"(b[ch][0]), "r"(b[ch][1]));
        }
    }
    float s = 0.0f;
#pragma unroll
    for (int ch = 0; ch < MMA_CHAINS; ++ch)
        s += c[ch][0] + c[ch][1] + c[ch][2] + c[ch][3];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
#endif
}

extern "C" __global__ void mma_random_m16n8k16_f16(float* __restrict__ out, int iters) { mma_ceiling_operands<false, true>(out, iters); }
extern "C" __global__ void mma_random_m16n8k16_bf16(float* __restrict__ out, int iters) { mma_ceiling_operands<true, true>(out, iters); }
extern "C" __global__ void mma_ones_m16n8k16_f16(float* __restrict__ out, int iters) { mma_ceiling_operands<false, false>(out, iters); }
extern "C" __global__ void mma_ones_m16n8k16_bf16(float* __restrict__ out, int iters) { mma_ceiling_operands<true, false>(out, iters); }
"""
KINDS = ("ones", "random")


def power_script():
    """scripts/power_under_load.py as a module (its sampler and sustained runs)."""
    spec = importlib.util.spec_from_file_location("power_under_load", ROOT / "scripts" / "power_under_load.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def operand_probe(kind: str, dtype: str, iters: int = 4096, threads: int = 256):
    """``(launch, flops, out)`` of the probe with ``kind`` operands, with the chapter's probe's grid and work."""
    spec = device.current()
    unit = compile_units.unit(probes.MMA_PROBES)
    compiled = compiler.load(compile_units.CompileUnit(unit.path, unit.generated + OPERAND_PROBES, unit.defines))
    from pycuda import gpuarray
    fn = compiled.function(f"mma_{kind}_m16n8k16_{dtype}")
    grid = probes.probe_grid(threads, spec, waves=2)
    out = gpuarray.zeros(grid[0] * threads, np.float32)
    m, n, k = mma.instruction("m16n8k16", dtype).mnk
    flops = grid[0] * threads // 32 * iters * compile_units.MMA_CHAINS * 2 * m * n * k
    return (lambda: fn(out.gpudata, np.int32(iters), block=(threads, 1, 1), grid=grid)), flops, out


def main(seconds: float, kernels: bool, size: int = 8192):
    gpu.cuda()
    if compiler.capability(compiler.load(probes.MMA_PROBES).arch) < (8, 0):
        sys.exit("needs mma.sync m16n8k16 (sm_80 or later)")
    pul = power_script()
    sampler = pul.Sampler()
    time.sleep(1.0)
    for dtype in ("f16", "bf16"):
        launches = {}
        for kind in KINDS:
            launch, flops, out = operand_probe(kind, dtype)
            launch()
            s = out.get()
            print(f"{dtype} {kind}: sums finite: {bool(np.isfinite(s).all())}, spread {float(np.std(s)):.1f}", flush=True)
            launches[kind] = launch, flops
        launches["near"] = probes.mma_probe("m16n8k16", dtype)            # the chapter's probe
        for name, (launch, flops) in launches.items():      # short timings first, each after a pause
            time.sleep(2.0)
            rate = flops / timing.time_gpu(launch, repeat=5).median_s
            print(f"   {dtype} probe, operands {name:6s}: {rate / 1e12:6.1f} TFLOP/s (timed as mma_ceiling)", flush=True)
        for name, (launch, flops) in launches.items():
            time.sleep(1.0)
            pul.measure(f"probe {dtype} {name}", launch, flops, seconds, sampler)
        if kernels:
            A, B = verify.random_operands(size, size, size, seed=1)
            problem = registry.lookup(f"tc_tail_{dtype}").on_device(A, B)
            time.sleep(1.0)
            pul.measure(f"tc_tail_{dtype} {size}^3", problem.launch, 2.0 * size ** 3, seconds, sampler)
            del problem
    sampler.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--kernels", action="store_true", help="chapter 8's last step too, at 8192^3")
    args = parser.parse_args()
    main(args.seconds, args.kernels)
