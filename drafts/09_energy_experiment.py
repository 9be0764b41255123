# Can chapter 9's kernels win at 4096^3 at equal *power*, not only at equal clocks? Under a sustained load the H200 sits
# at its 700 W limit (results/power-h200.txt), so a kernel that moves fewer bytes through DRAM and the L2 per FLOP
# gets a higher clock. At 4096^3 the last step does 99.6% of cuBLAS's work per cycle but 99.1% per joule, ping-pong
# 101.2% per cycle but 94.7% per joule. The order of the tiles decides how often A and B come from DRAM: A and B
# are 32 MiB each in BF16 at 4096^3, against an L2 of about 50 MiB. This draft builds the last step and ping-pong
# with other group sizes of the persistent tile order (WS_GROUP rows of tiles walked column by column; 8 in the
# chapter; 32 rows of tiles at 4096^3, so 32 means column-major over the whole matrix), each from a copy of
# kernels/09_hopper.cu with that one #define changed, and measures every variant two ways: interleaved with cuBLAS
# (equal clocks), and alone for 4 s with nvidia-smi watching (equal power: TFLOP/s, clock, watts, per cycle, per
# joule; scripts/power_under_load.py's measure). Correctness first, at 1000x2000x777 and at the timed size.
# Run on a Hopper GPU with CuPy and nvidia-smi (about 4-5 minutes, most of it compiling five copies of the file):
#   timeout 420 python3 drafts/09_energy_experiment.py [--sizes 4096] [--groups 2 4 16 32]
# With --once, each variant of the last step is only launched twice at the first size, for Nsight Compute
# (drafts/next_gpu.sh F: the L2's sectors by source for each tile order).
import argparse, sys, tempfile
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gemmlab import compile_units, gpu, tma, verify
from drafts.variants import correct_at, cuda_and_cupy, interleaved_then_alone, kernel_variant, launch_twice

BASE_GROUP = "#define WS_GROUP 8\n"
KERNELS = {"last": tma.GEMM_TMA_STORE, "pingpong": tma.GEMM_PINGPONG}


def variant_source(group: int) -> str:
    return kernel_variant(tma.SOURCE, (BASE_GROUP, f"#define WS_GROUP {group}\n"))


def group_kernels(groups, tmp: Path) -> dict:
    """The last step and ping-pong as in the chapter (group 8) and built with each of ``groups``, from copies of the
    kernel file written under ``tmp``: ``{"last_g8": kernel, ...}``."""
    kernels = {f"{k}_g8": tma.hopper_kernel(c) for k, c in KERNELS.items()}
    for g in groups:
        path = tmp / f"09_hopper_g{g}.cu"
        path.write_text(variant_source(g))
        unit = compile_units.CompileUnit(path, arch_specific="sm_90a")
        kernels.update({f"{k}_g{g}": replace(tma.hopper_kernel(c), source=unit) for k, c in KERNELS.items()})
    return kernels


def once(n, groups):
    """The last step of each group launched twice at n^3 BF16, in the order printed, for Nsight Compute: where do the
    L2's sectors come from with each tile order (drafts/next_gpu.sh F profiles the second launch of each)?"""
    gpu.cuda()
    with tempfile.TemporaryDirectory() as tmp:
        kernels = {name: k for name, k in group_kernels(groups, Path(tmp)).items() if name.startswith("last_")}
        launch_twice(kernels, *verify.random_operands(n, n, n, seed=1))


def main(sizes, groups, seconds):
    cp = cuda_and_cupy()
    with tempfile.TemporaryDirectory() as tmp:
        kernels = group_kernels(groups, Path(tmp))
        A, B = verify.random_operands(1000, 2000, 777, seed=3)
        print("correct at 1000x2000x777:", correct_at(kernels, A, B), flush=True)
        interleaved_then_alone(cp, kernels, sizes, seconds)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096])
    parser.add_argument("--groups", type=int, nargs="+", default=[2, 4, 16, 32])
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--once", action="store_true", help="each last-step variant launched twice, for ncu")
    args = parser.parse_args()
    if 8 in args.groups or min(args.groups) < 1:
        parser.error("groups: positive, and not 8 (the chapter's, always measured)")
    once(args.sizes[0], args.groups) if args.once else main(args.sizes, args.groups, args.seconds)
