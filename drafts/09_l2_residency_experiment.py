# Issue #18 at 4096^3: can chapter 9's last step win at the 700 W limit by moving fewer bytes through DRAM?
# Alone, the last step and cuBLAS do the same work per joule (results/energy-h200-tile-groups.txt: 100.0%), and both
# read about 149 MB from DRAM per 4096^3 product (results/ncu-h200-hopper-4096.csv), 2.2 times A and B (64 MiB). A
# and B together are larger than the L2 (about 50 MiB), and C (64 MiB in FP32) passes through it as well. The copy engine takes an L2 eviction priority per copy (.L2::cache_hint with a createpolicy): this draft builds
# the last step with priorities on the loads of A, of B and on the stores of C, with the chapter's tile order (groups
# of 8 rows of pair tiles) and with groups of 16 (at 4096^3 one group: all of A is used by every column of B), each a
# copy of kernels/09_hopper.cu with a few lines changed (drafts/variants.py), and measures each variant
#   - correct at 1000x2000x777 and at the timed sizes,
#   - interleaved with cuBLAS (equal clocks) at 4096^3 and 8192^3,
#   - alone for a few seconds with nvidia-smi watching (at the power limit: rate, clock, watts, per joule),
# and, with --once, launches each variant twice at 4096^3 for Nsight Compute (DRAM bytes, L2 hit rate, sectors).
# Variants (hint on A loads / B loads / C stores: - none, L evict_last, F evict_first; group of rows of pair tiles):
#   base  - - - g8 (chapter 9's)     ef    - - F g8      el    L L F g8
#   g16   - - - g16                  g16el L - F g16     g16lf L F F g16
# Run on a Hopper GPU with CuPy and nvidia-smi (about 2-3 minutes):
#   timeout 300 python3 drafts/09_l2_residency_experiment.py [--sizes 4096 8192] [--seconds 3] [--once]
import argparse, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gemmlab import gpu, tma, verify
from drafts.variants import (correct_at, cuda_and_cupy, interleaved_then_alone, kernel_variant, last_step_kernels,
                             launch_twice)

# Copies that carry an L2 priority: 0 none, 1 evict_last, 2 evict_first (the copy engine's cache hint, PTX ISA
# "cp.async.bulk.tensor": .L2::cache_hint with a 64-bit policy from createpolicy).
HINTED_COPIES = r"""
template <int H>
__device__ __forceinline__ uint64_t l2_policy()
{
    uint64_t policy;
    if (H == 1)
        asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    else
        asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    return policy;
}

template <int H>
__device__ __forceinline__ void tma_load_2d_h(void* dst, const CUtensorMap* map, int x, int y, uint64_t* bar)
{
    if (H == 0) {
        tma_load_2d(dst, map, x, y, bar);
        return;
    }
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
                 " [%0], [%1, {%2, %3}], [%4], %5;"
                 ::"r"(tma_smem(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(tma_smem(bar)),
                   "l"(l2_policy<H>())
                 : "memory");
}

template <int H>
__device__ __forceinline__ void tma_load_2d_both_h(void* dst, const CUtensorMap* map, int x, int y, uint64_t* bar)
{
    if (H == 0) {
        tma_load_2d_both(dst, map, x, y, bar);
        return;
    }
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 ".L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5, %6;"
                 ::"r"(tma_smem(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(tma_smem(bar)),
                   "h"(static_cast<unsigned short>(0b11)), "l"(l2_policy<H>())
                 : "memory");
}

template <int H>
__device__ __forceinline__ void tma_store_2d_h(const CUtensorMap* map, int x, int y, const void* src)
{
    if (H == 0)
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                     ::"l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(tma_smem(src)) : "memory");
    else
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group.L2::cache_hint [%0, {%1, %2}], [%3], %4;"
                     ::"l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(tma_smem(src)), "l"(l2_policy<H>())
                     : "memory");
}
"""

VARIANTS = {"ef": (0, 0, 2, 8), "el": (1, 1, 2, 8), "g16": (0, 0, 0, 16), "g16el": (1, 0, 2, 16),
            "g16lf": (1, 2, 2, 16)}
"""name: (hint on A's loads, on B's loads, on C's stores, rows of pair tiles per group)."""

PLAIN_STORE = ('                asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"\n'
               '                             ::"l"(reinterpret_cast<uint64_t>(c_map)), "r"(col0 + 32 * j), "r"(row0), "r"(tma_smem(buf))\n'
               '                             : "memory");\n')


def variant_source(a: int, b: int, c: int, group: int) -> str:
    """kernels/09_hopper.cu with the copies of ws_gemm and store_d_tma given these hints, and WS_GROUP ``group``."""
    return kernel_variant(
        tma.SOURCE,
        ("// [store_d_tma]\n", HINTED_COPIES + "\n// [store_d_tma]\n"),
        ("tma_load_2d(a_tiles + s * A_STAGE, a_map, kt * WS_BK, m0, &full[s]);",
         f"tma_load_2d_h<{a}>(a_tiles + s * A_STAGE, a_map, kt * WS_BK, m0, &full[s]);"),
        ("tma_load_2d_both(b_tiles + s * B_STAGE + rank * half * 128, bt_map,",
         f"tma_load_2d_both_h<{b}>(b_tiles + s * B_STAGE + rank * half * 128, bt_map,"),
        (PLAIN_STORE, f"                tma_store_2d_h<{c}>(c_map, col0 + 32 * j, row0, buf);\n"),
        ("#define WS_GROUP 8\n", f"#define WS_GROUP {group}\n"))


def variant_kernels(tmp: Path, names) -> dict:
    """The last step as chapter 9 builds it ("base") and each variant of ``names``, BF16: ``{name: kernel}``."""
    return last_step_kernels(tmp, {name: variant_source(*VARIANTS[name]) for name in names})


def once(n, names):
    """Each kernel launched twice at n^3 BF16, in the order printed, for Nsight Compute (the second is the one to read)."""
    gpu.cuda()
    with tempfile.TemporaryDirectory() as tmp:
        launch_twice(variant_kernels(Path(tmp), names), *verify.random_operands(n, n, n, seed=1))


def main(sizes, names, seconds):
    cp = cuda_and_cupy()
    with tempfile.TemporaryDirectory() as tmp:
        kernels = variant_kernels(Path(tmp), names)
        for M, N, K in ((1000, 2000, 777), (1, 1, 1), (300, 520, 1234)):
            print(f"correct at {M}x{N}x{K}:", correct_at(kernels, *verify.random_operands(M, N, K, seed=3)),
                  flush=True)
        interleaved_then_alone(cp, kernels, sizes, seconds, cublas_twice=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--once", action="store_true", help="each kernel launched twice at the first size, for ncu")
    args = parser.parse_args()
    once(args.sizes[0], args.variants) if args.once else main(args.sizes, args.variants, args.seconds)
