# Issue #18: the last step's producer asks the copy engine for each stage in smaller boxes. Nsight Compute's source
# page of cuBLAS's kernel at 4096^3 (drafts/09_cublas_sass.sh, results/cublas-sass-h200.txt) shows its producer
# asking for each K-tile with one box of the operand it keeps and four multicast boxes of the shared one, where the
# last step asks with one box of A (128 rows) and one multicast box of its half of B (128 rows); and its consumers
# find the next stage not yet full less often (a warp's first try_wait fails for 1.6% of its K-tiles against 7.4%).
# Smaller boxes are requests the L2 can serve (and merge with a neighbour's) sooner.
# Variants 'aXbY': A's 128 rows in X boxes, this block's 128 rows of B in Y multicast boxes, each to the same place
# in shared memory as before (a box of 8 rows is one 1 KiB atom of the 128-byte swizzle, so the image is the same;
# the barrier expects the same bytes). A box that lies wholly outside the matrix is zero-filled like any other.
# Run on a Hopper GPU with CuPy:
#   timeout 90 python3 drafts/09_subbox_experiment.py --check     (a wrong byte count would hang: a process of its own)
#   timeout 300 python3 drafts/09_subbox_experiment.py --time
#   ncu ... -k regex:wgmma_gemm_tmastore_bf16 ... python3 drafts/09_subbox_experiment.py --once
import sys, tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gemmlab import gpu, tma, verify
from drafts.variants import (GOAL_SIZES, cuda_and_cupy, last_step_variants, launch_twice, load_draft, print_correct,
                             recast, time_against_cublas)

split = load_draft("09_split_epilogue_experiment")

LOAD_A = "                    tma_load_2d(a_tiles + s * A_STAGE, a_map, kt * WS_BK, m0, &full[s]);\n"
LOAD_B = ("                        tma_load_2d_both(b_tiles + s * B_STAGE + rank * half * 128, bt_map, kt * WS_BK, n0 + rank * half,\n"
          "                                         &full[s]);\n")
PARTS_A = ("                    for (int p = 0; p < A_PARTS; ++p)                // experiment: A in A_PARTS boxes\n"
           "                        tma_load_2d(a_tiles + s * A_STAGE + p * (WS_BM / A_PARTS) * 128, a_map, kt * WS_BK,\n"
           "                                    m0 + p * (WS_BM / A_PARTS), &full[s]);\n")
PARTS_B = ("                        for (int p = 0; p < B_PARTS; ++p)            // experiment: B's half in B_PARTS boxes\n"
           "                            tma_load_2d_both(b_tiles + s * B_STAGE + (rank * half + p * (half / B_PARTS)) * 128,\n"
           "                                             bt_map, kt * WS_BK, n0 + rank * half + p * (half / B_PARTS), &full[s]);\n")
GEMM_WS = "// [gemm_ws]\n"
PARTS = {"a1b2": (1, 2), "a1b4": (1, 4), "a2b2": (2, 2), "a2b4": (2, 4)}


@dataclass(frozen=True)
class SubBoxes(tma.HopperGemmKernel):
    """The last step with tensor maps whose boxes are 1 / a_parts of the tile's rows of A and 1 / b_parts of the
    block's share of B's."""
    a_parts: int = 1
    b_parts: int = 1

    def operand_boxes(self):
        a, b = super().operand_boxes()
        return a // self.a_parts, b // self.b_parts


def kernels(tmp: Path) -> dict:
    edits = {name: [(GEMM_WS, f"#define A_PARTS {a}\n#define B_PARTS {b}\n{GEMM_WS}"), (LOAD_A, PARTS_A), (LOAD_B, PARTS_B)]
             for name, (a, b) in PARTS.items()}
    ks = last_step_variants(tmp, edits)
    for name, (a, b) in PARTS.items():
        ks[name] = recast(ks[name], SubBoxes, a_parts=a, b_parts=b)
    return ks


def main():
    gpu.cuda()
    with tempfile.TemporaryDirectory() as tmp:
        ks = kernels(Path(tmp))
        if "--check" in sys.argv:
            print_correct(ks, split.CHECK)
        if "--once" in sys.argv:
            launch_twice(ks, *verify.random_operands(4096, 4096, 4096, seed=1))
        if "--time" in sys.argv:
            time_against_cublas(cuda_and_cupy(), ks, GOAL_SIZES)


if __name__ == "__main__":
    main()
