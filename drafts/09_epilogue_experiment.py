# What the epilogue of chapter 9's last step (wgmma_gemm_tmastore_*) costs, and what did not help at 4096^3: variants
# of ws_gemm generated from kernels/09_hopper.cu itself (no copy of the kernel is kept in the repository), timed
# against cuBLAS with an interleaved, sustained timing (gemmlab.timing.interleaved). Findings: drafts/README.md.
# Run on a Hopper GPU:
#   timeout 300 python3 drafts/09_epilogue_experiment.py [variant ...]
# Variants (BF16, clusters of two, the copy-engine epilogue):
#   base     ws_gemm as chapter 9 compiles it, from the generated file (must time like hopper_tmastore)
#   nostore  the results written into the store buffers, but the copy engine never stores them (wrong C, timing only)
#   s3b4     3 ring stages and 4 store buffers per consumer;  s2b8: 2 stages and 8 buffers (a whole tile's results)
#   d175     consumer 1 starts 175 ns late, so that the two consumers' epilogues need not coincide
#   ef       the stores of C with an L2 evict-first hint
#   mix_aa   every other box of 32 columns stored by the threads (8-byte stores, as the paired-stores step) instead of
#            the copy engine, so that the engine has a box's time to read each buffer before it is needed again;
#   mix_cc   two boxes by the engine, two by the threads, ...;  mix_88: every fourth box by the threads
#   warp     each warp stores its own 16 rows in boxes of 16 x 32 through two 2 KiB buffers of its own, with no
#            barrier but __syncwarp: the same 32 KiB, but 8 boxes in flight per consumer instead of 2, and none of
#            the 16 warpgroup barriers per tile (C's tensor map in boxes of 16 rows, HopperGemm.c_box_rows)
import re, sys, tempfile
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gemmlab import compile_units, precisions, tensor_gemm, timing, tma, verify
from drafts.variants import cuda_and_cupy

# name: (stages, buffers per consumer, issue the stores, consumer 1's delay in ns, evict-first hint, boxes the threads
# store themselves: bit j for box j, each warp its own boxes)
VARIANTS = {"base": (4, 2, True, 0, False, 0, False), "nostore": (4, 2, False, 0, False, 0, False),
            "s3b4": (3, 4, True, 0, False, 0, False), "s2b8": (2, 8, True, 0, False, 0, False),
            "d175": (4, 2, True, 175, False, 0, False), "ef": (4, 2, True, 0, True, 0, False),
            "mix_aa": (4, 2, True, 0, False, 0xAA, False), "mix_cc": (4, 2, True, 0, False, 0xCC, False),
            "mix_88": (4, 2, True, 0, False, 0x88, False), "warp": (4, 2, True, 0, False, 0, True)}
WARP_BOX_ROWS = 16

# The per-warp epilogue (variant "warp"): warp w of a consumer holds rows 16w .. 16w + 15 of its 64 (wgmma's layout),
# so it can store them alone. Two 2 KiB buffers per warp, 1 KiB-aligned (the 128-byte swizzle's atom).
STORE_PER_WARP = r"""
template <int REGS>
__device__ __forceinline__ void store_d_tma_w(const float (&d)[REGS], const CUtensorMap* c_map, unsigned char* buffers,
                                              int row0, int col0)
{
    const int warp = threadIdx.x % 128 / 32, lane = threadIdx.x % 32;
    unsigned char* mine = buffers + warp * 2 * 2048;
#pragma unroll
    for (int j = 0; j < REGS / 16; ++j) {
        unsigned char* buf = mine + (j % 2) * 2048;
        if (lane == 0)                                              // this warp's store before last has been read
            asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
        __syncwarp();
#pragma unroll
        for (int i = 16 * j; i < 16 * j + 16; i += 2) {
            const int r = lane / 4 + 8 * (i % 4 / 2), col = 8 * (i / 4 - 4 * j) + 2 * (lane % 4);
            *reinterpret_cast<float2*>(buf + r * 128 + (((col / 4) ^ (r % 8)) * 16) + (col % 4) * 4) = make_float2(d[i], d[i + 1]);
        }
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncwarp();
        if (lane == 0) {
            asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                         ::"l"(reinterpret_cast<uint64_t>(c_map)), "r"(col0 + 32 * j), "r"(row0 + 16 * warp), "r"(tma_smem(buf))
                         : "memory");
            asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        }
    }
}
"""
STAGE_BYTES, BOX_BYTES = (128 + 256) * 64 * 2, tma.C_BOX[0] * tma.C_BOX[1] * 4


def generated_source() -> str:
    """kernels/09_hopper.cu, then ws_gemm and store_d_tma again with the experiment's switches, then one entry point
    per variant."""
    text = (ROOT / "kernels" / tma.SOURCE).read_text()
    gemm = text[text.index("template <bool OVERLAP, bool PERSISTENT, int STORE, bool F16, int CLUSTER = 1, bool STREAMK = false>"):
                text.index("// [/gemm_ws]")]
    store = text[text.index("template <int REGS, bool ADD = false>\n__device__ __forceinline__ void store_d_tma("):text.index("// [/store_d_tma]")]
    edits = [
        (gemm, "template <bool OVERLAP, bool PERSISTENT, int STORE, bool F16, int CLUSTER = 1, bool STREAMK = false>\n__device__ __forceinline__ void ws_gemm(",
         "template <bool OVERLAP, bool PERSISTENT, int STORE, bool F16, int CLUSTER, int STAGES_, int NBUF, bool ISSUE, int DELAY, bool EF, int DIRECT, bool PER_WARP, bool STREAMK = false>\n"
         "__device__ __forceinline__ void ws_gemm_x("),
        (gemm, "        const int c = group - 1;\n", "        const int c = group - 1;\n        if (DELAY > 0 && c == 1) __nanosleep(DELAY);\n"),
        (gemm, "unsigned char* buffers = b_tiles + WS_STAGES * B_STAGE + c * 2 * C_BOX_BYTES;",
         "unsigned char* buffers = b_tiles + WS_STAGES * B_STAGE + c * NBUF * C_BOX_BYTES;"),
        (gemm, "                store_d_tma(d, c_map, buffers, c, m0 + 64 * c, n0);\n",
         "                if (PER_WARP) store_d_tma_w(d, c_map, buffers, m0 + 64 * c, n0);\n"
         "                else store_d_tma_x<NBUF, ISSUE, EF, DIRECT>(d, c_map, buffers, c, m0 + 64 * c, n0, C, M, (N + 3) / 4 * 4);\n"),
        (gemm, "        if (STORE == 0 && threadIdx.x % 128 == 0)", "        if (STORE == 0 && threadIdx.x % (PER_WARP ? 32 : 128) == 0)"),
        (store, "template <int REGS, bool ADD = false>\n__device__ __forceinline__ void store_d_tma(",
         "template <int NBUF, bool ISSUE, bool EF, int DIRECT, int REGS, bool ADD = false>\n__device__ __forceinline__ void store_d_tma_x("),
        (store, "int consumer, int row0, int col0)", "int consumer, int row0, int col0, float* C, int M, int ldc)"),
        (store, "        unsigned char* buf = buffers + (j % 2) * C_BOX_BYTES;\n",
         "        if ((DIRECT >> j) & 1) {                   // this box by the threads, 8 bytes per store\n"
         "#pragma unroll\n"
         "            for (int i = 16 * j; i < 16 * j + 16; i += 2) {\n"
         "                const int r = row0 + 16 * warp + lane / 4 + 8 * (i % 4 / 2), col = col0 + 8 * (i / 4) + 2 * (lane % 4);\n"
         "                if (r < M && col < ldc)\n"
         "                    *reinterpret_cast<float2*>(C + static_cast<size_t>(r) * ldc + col) = make_float2(d[i], d[i + 1]);\n"
         "            }\n"
         "            continue;\n"
         "        }\n"
         "        unsigned char* buf = buffers + ((j - __popc(DIRECT & ((1 << j) - 1))) % NBUF) * C_BOX_BYTES;\n"),
        (store, '"cp.async.bulk.wait_group.read 1;" ::: "memory"', '"cp.async.bulk.wait_group.read %0;" ::"n"(NBUF - 1) : "memory"'),
        (store, "        if (issuer) {\n            if (ADD)", "        if (ISSUE && issuer) {\n            if (ADD)"),
        (store, "            else\n                asm volatile(\"cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\"\n",
         "            else if (EF) {\n            uint64_t policy;\n"
         "            asm volatile(\"createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\" : \"=l\"(policy));\n"
         "            asm volatile(\"cp.async.bulk.tensor.2d.global.shared::cta.bulk_group.L2::cache_hint [%0, {%1, %2}], [%3], %4;\"\n"
         "                         ::\"l\"(reinterpret_cast<uint64_t>(c_map)), \"r\"(col0 + 32 * j), \"r\"(row0), \"r\"(tma_smem(buf)), \"l\"(policy)\n"
         "                         : \"memory\");\n            } else\n"
         "                asm volatile(\"cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\"\n"),
    ]
    parts = {"gemm": gemm, "store": store}
    for part, old, new in edits:
        key = "gemm" if part is gemm else "store"
        assert old in parts[key], f"kernels/09_hopper.cu changed: cannot find {old[:60]!r}"
        parts[key] = parts[key].replace(old, new)
    gemm = re.sub(r"\bWS_STAGES\b", "STAGES_", parts["gemm"])
    entries = "".join(
        f'extern "C" __global__ void __launch_bounds__(WS_THREADS, 1) __cluster_dims__(2, 1, 1)\n'
        f"x_{name}_bf16(GEMM_TMA_STORE_PARAMS) {{ ws_gemm_x<true, true, 0, false, 2, {s}, {b}, {str(i).lower()}, {d}, "
        f"{str(e).lower()}, {x}, {str(w).lower()}>(&a_map, &bt_map, C, M, N, K, &c_map); }}\n"
        for name, (s, b, i, d, e, x, w) in VARIANTS.items())
    return f'#include "{ROOT / "kernels" / tma.SOURCE}"\n\n{parts["store"]}\n{STORE_PER_WARP}\n{gemm}\n{entries}'


def variant_kernel(unit, name):
    stages, buffers, per_warp = VARIANTS[name][0], VARIANTS[name][1], VARIANTS[name][6]
    config = replace(tma.GEMM_TMA_STORE, function=f"x_{name}", shared=1024 + stages * STAGE_BYTES + 2 * buffers * BOX_BYTES,
                     c_box_rows=WARP_BOX_ROWS if per_warp else tma.C_BOX[0])
    return replace(tma.hopper_kernel(config), source=unit)


def main(names):
    cp = cuda_and_cupy()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "09_epilogue_variants.cu"
        path.write_text(generated_source())
        unit = compile_units.CompileUnit(path, arch_specific="sm_90a")
        kernels = {"hopper_tmastore": tma.hopper_kernel(tma.GEMM_TMA_STORE), **{n: variant_kernel(unit, n) for n in names}}
        A, B = verify.random_operands(1000, 2000, 777, seed=3)
        ref = tensor_gemm.reference(A, B, "BF16")
        print("correct at 1000x2000x777:", {n: ref.check(k(A, B)).ok for n, k in kernels.items() if n != "nostore"}, flush=True)
        for M, N, K in ((4096,) * 3, (6144, 4096, 2048), (2048,) * 3, (8192,) * 3):
            A, B = verify.random_operands(M, N, K, seed=1)
            run, _ = precisions._cublas_call(cp, A, B, "BF16")
            problems = {n: k.on_device(A, B) for n, k in kernels.items()}
            times = timing.interleaved({"cuBLAS": run, **{n: p.launch for n, p in problems.items()}})
            flops = 2.0 * M * N * K
            print(f"{M}x{N}x{K}: cuBLAS {flops / times.median_s('cuBLAS') / 1e12:.1f} TFLOP/s", flush=True)
            for n in problems:
                median, low, high = times.ratio(n, "cuBLAS")
                print(f"   {n:16s} {flops / times.median_s(n) / 1e12:7.1f} TFLOP/s, of cuBLAS: median "
                      f"{median:.1f}%, quartiles {low:.1f}-{high:.1f}", flush=True)
            del problems


if __name__ == "__main__":
    chosen = sys.argv[1:] or list(VARIANTS)
    unknown = set(chosen) - set(VARIANTS)
    if unknown:
        sys.exit(f"unknown variant(s) {sorted(unknown)}; choose from {list(VARIANTS)}")
    main(chosen)
