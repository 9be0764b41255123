# How many warps per SM sub-partition does the mma.sync ceiling need? Chapter 8's probe (kernels/08_mma_probe.cu,
# gemmlab.probes.mma_probe) fills every SM twice over: 64 warps per SM, 16 per scheduler, each with 8 independent
# chains. tc_inner runs one block of 8 warps per SM, 2 per scheduler, and Nsight Compute finds its warps waiting on
# fixed-latency dependencies, half of the time at the mma.sync themselves (results/ncu-h200-tc-inner-source-4096.csv).
# If the probe itself needs more than 2 warps per scheduler to reach its rate, part of tc_inner's distance to the
# probe is the warp count the design allows (its accumulators take 240 registers a thread), not its other
# instructions. Here the same probe runs as exactly one block per SM of 1, 2, 3 or 4 warps per scheduler (128 to 512
# threads; the block scheduler spreads a grid of one block per SM over all SMs), beside the chapter's probe, FP16 and
# BF16, each timed as gemmlab.probes.mma_ceiling times it. The probe's operands are constants (1.0): its rate is
# that of the instruction stream, not of a GEMM's data. Run on a GPU of sm_80 or later (about 20 s):
#   timeout 120 python3 drafts/08_probe_warps_experiment.py
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gemmlab import compile_units, compiler, device, gpu, mma, probes, timing

WARPS_PER_SCHEDULER = (1, 2, 3, 4)


def rate(fn, threads: int, blocks: int, iters: int, flops_per_chain: int) -> float:
    from pycuda import gpuarray
    out = gpuarray.zeros(blocks * threads, np.float32)
    flops = blocks * threads // 32 * iters * compile_units.MMA_CHAINS * flops_per_chain
    return flops / timing.time_gpu(lambda: fn(out.gpudata, np.int32(iters), block=(threads, 1, 1),
                                              grid=(blocks, 1, 1)), repeat=5).median_s


def main(iters: int = 16384):
    gpu.cuda()
    spec = device.current()
    compiled = compiler.load(probes.MMA_PROBES)
    if compiler.capability(compiled.arch) < (8, 0):
        sys.exit("needs mma.sync m16n8k16 (sm_80 or later)")
    schedulers = 4                                      # SM sub-partitions, each with its own warp scheduler
    for dtype in ("f16", "bf16"):
        fn = compiled.function(f"mma_ceiling_m16n8k16_{dtype}")
        m, n, k = mma.instruction("m16n8k16", dtype).mnk
        chapter = probes.mma_ceiling("m16n8k16", dtype)
        print(f"{dtype}: the chapter's probe (16 warps per scheduler, every SM filled twice over) "
              f"{chapter / 1e12:.1f} TFLOP/s", flush=True)
        for w in WARPS_PER_SCHEDULER:
            r = rate(fn, 32 * schedulers * w, spec.sms, iters, 2 * m * n * k)
            print(f"   {w} warp(s) per scheduler, one block of {32 * schedulers * w} threads per SM: {r / 1e12:6.1f} "
                  f"TFLOP/s, {r / chapter:6.1%} of the chapter's probe", flush=True)


if __name__ == "__main__":
    main()
