# Issue #18: how close to the tensor cores' peak does the last step's main loop run? The H200's tensor cores do 4,096
# dense BF16 FLOP per cycle and SM (989.4 TFLOP/s at 1,830 MHz on 132 SMs, NVIDIA's H100 SXM figure; the H200 has the
# same chip), so a 128 x 256 x 64 K-tile needs at least 1,024 cycles. The stamps so far (%globaltimer) gave 612-640 ns
# a K-tile at an unknown clock. Here:
#   1. a wgmma probe: one block of 384 threads per SM, its producer warpgroup idle, one or two consumer warpgroups
#      issuing the last step's m64n256k16 (four per K-tile, commit, wait_group 1, as its main loop does) on a 128 x 64
#      tile of A and a 256 x 64 tile of B fixed in shared memory: no copies, no mbarriers. Cycles by %clock64: the
#      ceiling of the instruction stream;
#   2. the last step stamped as in the stream-K draft, with %clock64 beside %globaltimer at each stamp: cycles per
#      K-tile of the main loop, cycles of the epilogue, and the clock (cycles per ns) of the third launch at 4096^3.
# Run on a Hopper GPU:   timeout 300 python3 drafts/09_main_loop_cycles_experiment.py
import statistics, sys, tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gemmlab import compile_units, compiler, device, gpu, tma, verify
from drafts.variants import device_array, kernel_variant, launched_three_times, load_draft, print_correct

stagger = load_draft("09_stagger_experiment")
phases = stagger.phases
SLOTS = phases.SLOTS

PROBE = """
// experiment: the last step's wgmma stream alone, on fixed shared-memory tiles
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1)
xwgmma_rate(unsigned long long* cycles, float* sink, int k_tiles, int consumers)
{
    __shared__ __align__(1024) unsigned char tiles[(WS_BM + WS_BN) * 128];   // A: 128 rows, B: 256 rows of 128 bytes
    for (int i = threadIdx.x; i < (WS_BM + WS_BN) * 128 / 4; i += blockDim.x)
        reinterpret_cast<unsigned*>(tiles)[i] = 0x3F803F80u ^ (i * 2654435761u & 0x007F007Fu);   // BF16 near 1
    __syncthreads();
    const int group = threadIdx.x / 128;
    if (group == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int c = group - 1;
    if (c >= consumers)
        return;
    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i)
        d[i] = 0.0f;
    const unsigned long long start = clock64();
    for (int kt = 0; kt < k_tiles; ++kt) {
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int kk = 0; kk < WS_BK / 16; ++kk)
            wgmma_64x256x16<false>(d, descriptor_128b(tiles + c * 64 * 128) + 2 * kk,
                                   descriptor_128b(tiles + WS_BM * 128) + 2 * kk);
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    const unsigned long long end = clock64();
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < 128; ++i)
        sum += d[i];
    sink[blockIdx.x * WS_THREADS + threadIdx.x] = sum;
    if (threadIdx.x % 128 == 0)
        cycles[blockIdx.x * WS_CONSUMERS + c] = end - start;
}
"""
# The stagger draft's stamps of the last step, each with the SM's cycle counter beside the timer.
_TIMER = f"xstamps[blockIdx.x * {SLOTS} + (slot)] = now_; }}"
_BOTH = f"xstamps[blockIdx.x * {SLOTS} + (slot)] = now_; xclocks[blockIdx.x * {SLOTS} + (slot)] = clock64(); }}"
_ARRAY = "__device__ int xparts"
_ARRAYS = f"__device__ unsigned long long xclocks[132 * {SLOTS}];\n" + _ARRAY
CLOCKS = [(old, new.replace(_TIMER, _BOTH).replace(_ARRAY, _ARRAYS)) for old, new in stagger.STAMPS]
assert sum(_BOTH in new for _, new in CLOCKS) == 1, "the stream-K draft's stamp macro changed"
END_OF_FILE = "wgmma_gemm_pingpong_f16(GEMM_TMA_STORE_PARAMS) { pingpong_gemm<true>(&a_map, &bt_map, &c_map, M, N, K); }\n"


def probe_rates(tmp: Path, k_tiles: int = 4096) -> None:
    """The wgmma stream alone, one and two consumer warpgroups per SM: FLOP per cycle and SM (median over SMs)."""
    path = tmp / "09_hopper_probe.cu"
    path.write_text(kernel_variant(tma.SOURCE, (END_OF_FILE, END_OF_FILE + PROBE)))
    fn = compiler.load(compile_units.CompileUnit(path, arch_specific="sm_90a")).function("xwgmma_rate")
    from pycuda import gpuarray
    sms = device.current().sms
    for consumers in (1, 2):
        cycles = gpuarray.zeros(sms * 2, np.uint64)
        sink = gpuarray.zeros(sms * 384, np.float32)
        for _ in range(3):                                        # the third launch, clocks warm
            fn(cycles.gpudata, sink.gpudata, np.int32(k_tiles), np.int32(consumers), block=(384, 1, 1), grid=(sms, 1, 1))
        c = cycles.get().reshape(sms, 2)[:, :consumers].max(axis=1).astype(np.float64)
        flops = consumers * k_tiles * 4 * 2 * 64 * 256 * 16
        print(f"wgmma probe, {consumers} consumer(s) per SM, {k_tiles} K-tiles: {np.median(flops / c):.0f} FLOP per "
              f"cycle and SM (min {np.min(flops / c):.0f}, max {np.max(flops / c):.0f}; the peak 4096), "
              f"{np.median(c) / k_tiles:.0f} cycles a K-tile of both", flush=True)


def main_loop_cycles(kernel, n: int = 4096) -> None:
    """Cycles per K-tile of whole tiles and of their epilogues, and the clock, from the stamped third launch."""
    s = device_array(kernel, "xstamps", np.uint64, 132 * SLOTS).reshape(132, SLOTS).astype(np.int64)
    k = device_array(kernel, "xclocks", np.uint64, 132 * SLOTS).reshape(132, SLOTS).astype(np.int64)
    k_tiles, per_tile, epilogue, mhz = n // 64, [], [], []
    for b in range(132):
        for q in range(9):
            if s[b, 4 * q] == 0 or s[b, 4 * q + 1] == 0:
                break
            loop = k[b, 4 * q + 1] - k[b, 4 * q]
            per_tile.append(loop / k_tiles)
            if s[b, 4 * q + 3]:
                epilogue.append(k[b, 4 * q + 3] - k[b, 4 * q + 1])
            mhz.append(1e3 * loop / (s[b, 4 * q + 1] - s[b, 4 * q]))
    print(f"   main loop: median {statistics.median(per_tile):.0f} cycles a K-tile (min {min(per_tile):.0f}, max "
          f"{max(per_tile):.0f}; the peak 1024); epilogue median {statistics.median(epilogue):.0f} cycles (min "
          f"{min(epilogue):.0f}, max {max(epilogue):.0f}); clock median {statistics.median(mhz):.0f} MHz", flush=True)


def main():
    gpu.cuda()
    with tempfile.TemporaryDirectory() as tmp:
        probe_rates(Path(tmp))
        from drafts.variants import last_step_variants
        ks = last_step_variants(Path(tmp), {"clocks": CLOCKS})
        print_correct(ks, ((1000, 2000, 777), (4096, 4096, 4096)))
        for n in (4096, 8192):
            A, B = verify.random_operands(n, n, n, seed=1)
            launched_three_times(ks["clocks"], A, B)
            print(f"clocks, {n}^3, the third launch:", flush=True)
            main_loop_cycles(ks["clocks"], n)


if __name__ == "__main__":
    main()
