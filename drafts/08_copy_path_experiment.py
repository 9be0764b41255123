# Chapter 8's steady loop (kernels/08_steady_state.cu) loses 17% when each tile's cp.async copies are added (605.1 ->
# 504.7 TFLOP/s on the H200, 2026-12-02), yet Nsight Compute finds the shared-memory pipe half busy. Is the cost the
# bytes (the L2's bandwidth: 24 KiB per 2.1 MFLOP tile is 5.9 TB/s at that rate), the path through the L2 (latency),
# or the instructions? Each variant below is the file with only its copies changed, timed interleaved (equal clocks)
# beside the chapter's own `steady_barrier` (no copies) and `steady_copies`:
#   ca16   cp.async.ca, 16 bytes: the same copies through L1 (the baseline of the next two)
#   ca8    cp.async.ca, 8 bytes, as many copies: half the bytes, the same instructions
#   ca4    cp.async.ca, 4 bytes: a quarter of the bytes
#   half   cp.async.cg, 16 bytes, 3 copies a thread instead of 6: half the bytes and half the instructions
#   l1     cp.async.ca, 16 bytes, from 24 KiB that every tile reads again, so the copies hit in L1 and the L2 sees
#          almost nothing
# If ca8 and ca4 run like half, the bytes cost (bandwidth); if like ca16, the instructions or their waits; if l1 runs
# near steady_barrier, the L2 path is what the copies pay for. The data in the ring is meaningless in every variant
# (the loop's sums are not checked, only finite). Run on a GPU of sm_80 or later (about a minute):
#   timeout 200 python3 drafts/08_copy_path_experiment.py [--iters 4096]
import argparse, sys, tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gemmlab import compiler, device, gpu, mma, probes, timing
from drafts.variants import kernel_variant

COPY = ('                    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;"\n'
        '                                 :: "r"(steady_smem(dst + 16 * (tid + 256 * q))), "l"(g + chunk));\n')
LOOP = "                for (int q = 0; q < 6; ++q) {\n"
SOURCE_INDEX = "% STEADY_SOURCE_CHUNKS;"


def copy(kind: str, size: int) -> str:
    return COPY.replace("cp.async.cg", f"cp.async.{kind}").replace(", 16;", f", {size};")


VARIANTS = {
    "ca16": [(COPY, copy("ca", 16))],
    "ca8": [(COPY, copy("ca", 8))],
    "ca4": [(COPY, copy("ca", 4))],
    "half": [(LOOP, LOOP.replace("q < 6", "q < 3"))],
    "l1": [(COPY, copy("ca", 16)), (SOURCE_INDEX, "% 1536;")],
}


def variant_source(name: str) -> str:
    return kernel_variant(probes.STEADY, *VARIANTS[name])


def launcher(compiled, function: str, spec, iters: int):
    from pycuda import gpuarray

    fn = compiled.function(function)
    compiled.allow_shared(function, probes.STEADY_SHARED_BYTES)
    g = gpuarray.zeros(probes.STEADY_SOURCE_BYTES // 4, np.uint32)
    out = gpuarray.zeros(spec.sms * 256, np.float32)
    run = lambda: fn(g.gpudata, out.gpudata, np.int32(iters), block=(256, 1, 1), grid=(spec.sms, 1, 1),
                     shared=probes.STEADY_SHARED_BYTES)
    return run, out, g


def main(iters: int):
    gpu.cuda()
    spec = device.current()
    if spec.shared_per_block_optin < probes.STEADY_SHARED_BYTES:
        sys.exit(f"{spec.name}: a block cannot have {probes.STEADY_SHARED_BYTES} bytes of shared memory")
    runs, keep = {}, []
    own = compiler.load(probes.STEADY)
    if compiler.capability(own.arch) < (8, 0):
        sys.exit(f"needs mma.sync m16n8k16 (sm_80), compiled for {own.arch}")
    for part in ("barrier", "copies"):
        run, out, g = launcher(own, f"steady_{part}", spec, iters)
        runs[part], keep = run, keep + [(part, out, g)]
    with tempfile.TemporaryDirectory() as tmp:
        for name in VARIANTS:
            path = Path(tmp) / f"08_steady_{name}.cu"
            path.write_text(variant_source(name))
            run, out, g = launcher(compiler.load(path), "steady_copies", spec, iters)
            runs[name], keep = run, keep + [(name, out, g)]
        for run in runs.values():
            run()
        bad = [name for name, out, _ in keep if not np.isfinite(out.get()).all()]
        if bad:
            sys.exit(f"non-finite sums from {', '.join(bad)}: their timings would be meaningless")
        times = timing.interleaved(runs)
    m, n, k = mma.instruction("m16n8k16", "f16").mnk
    flops = spec.sms * 8 * iters * 2 * 32 * 2 * m * n * k
    tiles_per_s = lambda s: spec.sms * iters / s
    copied = {"barrier": 0, "copies": 24576, "ca16": 24576, "ca8": 12288, "ca4": 6144, "half": 12288, "l1": 24576}
    print(f"{'loop':10s} {'TFLOP/s':>8s} {'speed, % of copies (quartiles)':>31s} {'bytes per tile':>15s} "
          f"{'copied TB/s':>12s}")
    for name in runs:
        s = times.median_s(name)
        median, low, high = times.ratio(name, "copies")       # per round: both saw the same clock
        print(f"{name:10s} {flops / s / 1e12:8.1f} {median:14.1f} ({low:5.1f}-{high:5.1f}){'':7s} {copied[name]:15,d} "
              f"{tiles_per_s(s) * copied[name] / 1e12:12.2f}")
    print(f"{iters} tiles per block, {spec.sms} blocks; medians of {len(times.seconds['copies'])} interleaved rounds")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=4096)
    main(parser.parse_args().iters)
