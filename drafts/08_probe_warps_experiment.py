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
from gemmlab import compiler, device, gpu, occupancy, probes, timing

WARPS_PER_SCHEDULER = (1, 2, 3, 4)


def main(iters: int = 16384):
    gpu.cuda()
    spec = device.current()
    compiled = compiler.load(probes.MMA_PROBES)
    if compiler.capability(compiled.arch) < (8, 0):
        sys.exit("needs mma.sync m16n8k16 (sm_80 or later)")
    from pycuda import gpuarray
    for dtype in ("f16", "bf16"):
        # the chapter's probe, timed as mma_ceiling times it; its blocks of 256 threads fill every SM twice over
        launch, flops = probes.mma_probe("m16n8k16", dtype, iters, threads=256)
        chapter = flops / timing.time_gpu(launch, repeat=5).median_s
        warps = probes.probe_grid(256, spec, waves=2)[0] * 256 // 32
        print(f"{dtype}: the chapter's probe (every SM filled twice over) {chapter / 1e12:.1f} TFLOP/s", flush=True)
        fn = compiled.function(f"mma_ceiling_m16n8k16_{dtype}")
        for w in WARPS_PER_SCHEDULER:
            threads = 32 * occupancy.SUB_PARTITIONS * w
            out = gpuarray.zeros(spec.sms * threads, np.float32)
            t = timing.time_gpu(lambda: fn(out.gpudata, np.int32(iters), block=(threads, 1, 1), grid=(spec.sms, 1, 1)),
                                repeat=5).median_s
            r = flops / warps * (spec.sms * threads // 32) / t             # the same work per warp as the probe's
            print(f"   {w} warp(s) per scheduler, one block of {threads} threads per SM: {r / 1e12:6.1f} TFLOP/s, "
                  f"{r / chapter:6.1%} of the chapter's probe", flush=True)


if __name__ == "__main__":
    main()
