# Two questions about chapter 8's last step at 8192^3 (tc_inner: 76% of the mma.sync probe with FP16 inputs, 78%
# with BF16, on the H200 of 2026-12-02; issue #17 asks for 80%):
#
# 1. What does the grid's half-empty last wave cost? 8192^3 is 64 x 32 = 2,048 tiles of 128 x 256 on 132 SMs (one
#    block each), 15.5 waves, the last one 68 tiles. 8448 x 7680 x 8192 is 66 x 30 = 1,980 tiles, exactly 15 waves,
#    of the same tiles with the same K. Timed interleaved with cuBLAS at both sizes, the kernel's share of the probe
#    at the second is about what a perfect tail (a stream-K split, as chapter 9's) could give at 8192^3.
# 2. The order of the tiles: TC_GROUP block rows walked together (8 in kernels/08_tensor_core.cu), here 4, 16 and 32,
#    each built from a copy of the file with that one #define changed and only tc_inner's entry points; timed at
#    8192^3 interleaved against the chapter's 8 (equal clocks), then each alone for 3 s at the board's power limit
#    (scripts/power_under_load.py's measure: TFLOP/s, clock, FLOP per cycle and per joule).
# Correctness first at 1000x2000x777 and 1024x2048x512 (where every block but the edge ones is an inner tile).
# Run on a GPU of sm_80 or later, with CuPy and nvidia-smi (about 2-3 minutes):
#   timeout 300 python3 drafts/08_tail_group_experiment.py [--groups 4 16 32] [--seconds 3]
import argparse, sys, tempfile, time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gemmlab import ceilings, precisions, registry, tc_configs, tensor_gemm, timing, verify
from drafts.variants import TC_INNER, cuda_and_cupy, tc_inner_units

BASE_GROUP = "#define TC_GROUP 8 "
INNER = TC_INNER
SIZES = ((8192, 8192, 8192), (8448, 7680, 8192))       # 15.5 and exactly 15 waves of 132 tiles


def share(times, name, reference):
    median, low, high = times.ratio(name, reference)
    return f"{median:6.1f}% ({low:.1f}-{high:.1f})"


def tail(cp):
    print("1. the last wave: tc_inner interleaved with cuBLAS, % of cuBLAS (quartiles) and of the probe", flush=True)
    for p in ("FP16", "BF16"):
        probe = {c.what.split()[0]: c.measured for c in ceilings.tensor([p])}.get(p)
        kernel = registry.lookup(f"tc_inner_{tc_configs.SUFFIXES[p]}")
        for M, N, K in SIZES:
            A, B = verify.random_operands(M, N, K, seed=M + N)
            run, _ = precisions._cublas_call(cp, A, B, p)
            problem = kernel.on_device(A, B)
            times = timing.interleaved({"cuBLAS": run, "tc_inner": problem.launch})
            rate = 2.0 * M * N * K / times.median_s("tc_inner") / 1e12
            tiles = -(-M // INNER.BM) * -(-N // INNER.BN)
            of_probe = f"{rate / probe:.1%} of the probe ({probe:.1f})" if probe else "no probe"
            print(f"   {p} {M}x{N}x{K} ({tiles} tiles): {rate:6.1f} TFLOP/s, {share(times, 'tc_inner', 'cuBLAS')} "
                  f"of cuBLAS, {of_probe}", flush=True)
            del problem


def groups(cp, chosen, seconds):
    from scripts import power_under_load as power     # scripts/ is a namespace package
    p = "BF16"
    kernels = {"g8": registry.lookup("tc_inner_bf16")}
    with tempfile.TemporaryDirectory() as tmp:
        units = tc_inner_units(Path(tmp), {f"g{g}": [(BASE_GROUP, f"#define TC_GROUP {g} ")] for g in chosen})
        for name, unit in units.items():
            kernels[name] = replace(tensor_gemm.mma_kernel(INNER, p, f"tc_inner_bf16_{name}"), source=unit)
        for M, N, K in ((1000, 2000, 777), (1024, 2048, 512)):
            A, B = verify.random_operands(M, N, K, seed=3)
            ref = tensor_gemm.reference(A, B, p)
            print(f"correct at {M}x{N}x{K}:", {n: ref.check(k(A, B)).ok for n, k in kernels.items()}, flush=True)
        n = 8192
        A, B = verify.random_operands(n, n, n, seed=1)
        run, _ = precisions._cublas_call(cp, A, B, p)
        problems = {name: k.on_device(A, B) for name, k in kernels.items()}
        times = timing.interleaved({"cuBLAS": run, **{name: q.launch for name, q in problems.items()}})
        print(f"2. tile groups, BF16 {n}^3, interleaved: % of cuBLAS (quartiles), % of the chapter's g8", flush=True)
        for name in problems:
            print(f"   {name:4s} {share(times, name, 'cuBLAS')} of cuBLAS, {share(times, name, 'g8')} of g8", flush=True)
        print(f"   alone for {seconds:.0f} s each, at the power limit:", flush=True)
        sampler = power.Sampler()
        time.sleep(1.0)
        flops = 2.0 * n ** 3
        base = power.measure(f"cuBLAS {p} {n}^3", run, flops, seconds, sampler)
        for name, q in problems.items():
            time.sleep(1.0)
            r = power.measure(f"tc_inner {name} {n}^3", q.launch, flops, seconds, sampler)
            if r and base:
                print(f"   {name:4s} of cuBLAS: {r.against(base)}", flush=True)
        sampler.stop()


def main(chosen, seconds):
    cp = cuda_and_cupy()
    tail(cp)
    groups(cp, chosen, seconds)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, nargs="+", default=[4, 16, 32])
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    if 8 in args.groups or min(args.groups) < 1:
        parser.error("groups: positive, and not 8 (the chapter's, always measured)")
    main(args.groups, args.seconds)
