# Chapter 8's tuned kernels all use 64 x 64 warp tiles, so a 128 x 256 block has 8 warps and each SM sub-partition
# two: too few to hide a stall. Nsight Compute on tc_inner_bf16 (2026-12-02, results/ncu-h200-tensor-core-sections-
# 4096.csv): an instruction issued every 3.4 cycles per scheduler, 0.39 of its 2 warps eligible, the top stall a
# fixed-latency dependency; drafts/08_copy_path_experiment.py: the copies cost by their count, not their bytes. So the
# question is latency, and the levers are more warps per scheduler or independent blocks sharing an SM:
#   64x32 warps   128 x 256 tiles in 16 warps (512 threads, 128 registers: no spill on sm_90)
#   32x64 warps   the same, warp tile turned around
#   2 blocks      128 x 128 tiles, 64 x 64 warps, 2 blocks of 4 warps per SM (a barrier stalls half the SM)
#   2 blocks 64x32  128 x 128 tiles of 8 warps, 2 blocks per SM (16 warps)
#   256x128 64x32   the tile turned around, 16 warps
# Each is tc_gemm with INNER, the chapter's last step's switches, compiled from kernels/08_tensor_core.cu as it is;
# checked at awkward sizes, then timed interleaved (equal clocks) against tc_inner at 8192^3 and 4096^3, FP16 and BF16,
# and one after the other as the bench times (for the share of the probe). Run on a GPU of sm_80 or later:
#   timeout 400 python3 drafts/08_warp_tile_experiment.py
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gemmlab import ceilings, compile_units, gpu, tc_configs, tensor_gemm, timing, verify
from drafts.variants import TC_INNER, check_variants, tc_inner_variants

CANDIDATES = {                                          # tc_inner's switches and depth, other shapes
    "64x32 warps": replace(TC_INNER, BM=128, BN=256, WM=64, WN=32),
    "32x64 warps": replace(TC_INNER, BM=128, BN=256, WM=32, WN=64),
    "2 blocks": replace(TC_INNER, BM=128, BN=128, WM=64, WN=64, MIN_BLOCKS=2),
    "2 blocks 64x32": replace(TC_INNER, BM=128, BN=128, WM=64, WN=32, MIN_BLOCKS=2),
    "256x128 64x32": replace(TC_INNER, BM=256, BN=128, WM=64, WN=32),
}
TIMED_SIZES = (8192, 4096)


def kernels(precision: str) -> dict:
    unit = replace(compile_units.unit(tc_configs.SOURCE), generated=tc_configs.entry_points(tuple(CANDIDATES.values())),
                   custom=True)
    out = tc_inner_variants({}, precision)
    for label, c in CANDIDATES.items():
        out[label] = replace(tensor_gemm.mma_kernel(c, precision), source=unit)
    return out


def main():
    gpu.cuda()
    for p in ("FP16", "BF16"):
        ks = kernels(p)
        check_variants(ks, p)
        probe = {c.what.split()[0]: c.measured for c in ceilings.tensor([p])}.get(p)
        for n in TIMED_SIZES:
            A, B = verify.random_operands(n, n, n, seed=n)
            problems = {name: k.on_device(A, B) for name, k in ks.items()}
            flops = 2.0 * n ** 3
            alone = {name: flops / timing.time_gpu(q.launch, repeat=5).median_s / 1e12 for name, q in problems.items()}
            times = timing.interleaved({name: q.launch for name, q in problems.items()})
            print(f"{p} {n}^3: one after the other (TFLOP/s, % of the probe {probe:.1f}); interleaved, % of tc_inner "
                  f"(quartiles)", flush=True)
            for name in problems:
                median, low, high = times.ratio(name, "tc_inner")
                print(f"   {name:16s} {alone[name]:6.1f}  {alone[name] / probe:6.1%}   {median:6.1f}% ({low:.1f}-{high:.1f})",
                      flush=True)
            del problems


if __name__ == "__main__":
    main()
