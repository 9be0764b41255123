# Chapter 8's best kernel (tc_mma_128x256x32_64x64_s4_swz_async_pf, "tc_wide") at 71% of the mma.sync probe, while its
# main loop with the copies (08_steady_state.cu's steady_copies) runs at 81%: the chapter puts the 10 points on the
# prologue, the epilogue, the edges and DRAM. The SASS (compiled here, drafts/README.md) shows one more difference:
# per tile and thread, tc_wide's loop issues 132 instructions besides its 64 HMMA, steady_copies' 74, because every
# one of its 6 copies checks its row and column against M, N and K, recomputes its address from lda or ldb, and
# reloads the matrix's base pointer from the constant bank. Here is a variant of tc_gemm generated from
# kernels/08_tensor_core.cu itself (no copy of the kernel is kept) whose blocks check once whether their tile lies
# wholly inside C and a K-tile wholly inside K; such tiles copy from per-thread pointers that move by a constant per
# tile, with no predicate. Edge tiles take the kernel's own path. Timed against tc_wide and cuBLAS with
# gemmlab.timing.interleaved, beside the probe. Run on a GPU of sm_80 or later:
#   timeout 300 python3 drafts/08_fastpath_experiment.py
#   python3 drafts/08_fastpath_experiment.py --sass     (no GPU: the instruction counts of both loops, needs cuobjdump)
import re, subprocess, sys, tempfile
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gemmlab import bench, compile_units, precisions, registry, tc_configs, tensor_gemm, timing, verify

BEST = tc_configs.config("tc_mma_128x256x32_64x64_s4_swz_async_pf")
FAST = "tc_fast_128x256x32"

# The copies of an inner tile: the same chunks as load_tile's, from pointers that only move along K.
FAST_COPIES = """
        if (inner && k0 + BK <= K) {                  // the whole tile is inside A and B: no predicate, no edge
            const unsigned char* pa = a_src + static_cast<size_t>(k0) * ELEM;
            const unsigned char* pb = B_KMAJOR ? b_src + static_cast<size_t>(k0) * ELEM : b_src + static_cast<size_t>(k0) * b_row_bytes;
#pragma unroll
            for (int q = 0; q < A_PER + B_PER; ++q) {
                if (q % parts != part)
                    continue;
                if (q < A_PER)
                    copy16<ASYNC>(as + a_dst + q * A_STEP * A_ROW, pa + q * a_step_bytes, true);
                else
                    copy16<ASYNC>(bs + b_dst + (q - A_PER) * B_STEP * B_ROW, pb + (q - A_PER) * b_step_bytes, true);
            }
            return;
        }
"""


def generated_source() -> str:
    """kernels/08_tensor_core.cu, then tc_gemm again as tc_gemm_fast (the inner-tile copies added), then its entry
    points for the best configuration in FP16 and BF16."""
    text = (ROOT / "kernels" / tc_configs.SOURCE).read_text()
    body = text[text.index("// [tc_gemm]"):text.index("// [/tc_gemm]")]
    edits = [
        ("__device__ __forceinline__ void tc_gemm(", "__device__ __forceinline__ void tc_gemm_fast("),
        ("    auto load_tile = [&](int kt, int stage, int part, int parts) {\n"
         "        unsigned char* as = smem + stage * STAGE;\n"
         "        unsigned char* bs = as + BM * A_ROW;\n"
         "        const int k0 = kt * BK;\n",
         "    const bool inner = m0 + BM <= M && (B_KMAJOR ? n0 + BN <= N : n0 + BN <= ldb);\n"
         "    const size_t a_step_bytes = static_cast<size_t>(A_STEP) * lda * ELEM;\n"
         "    const size_t b_row_bytes = static_cast<size_t>(ldb) * ELEM, b_step_bytes = B_STEP * b_row_bytes;\n"
         "    auto load_tile = [&](int kt, int stage, int part, int parts) {\n"
         "        unsigned char* as = smem + stage * STAGE;\n"
         "        unsigned char* bs = as + BM * A_ROW;\n"
         "        const int k0 = kt * BK;\n" + FAST_COPIES),
    ]
    for old, new in edits:
        assert body.count(old) == 1, f"kernels/08_tensor_core.cu changed: cannot find {old[:60]!r}"
        body = body.replace(old, new)
    c = BEST
    entries = "".join(
        f'extern "C" __global__ void __launch_bounds__({c.threads}, 1)\n'
        f"{FAST}_{tc_configs.SUFFIXES[p]}(const void* A, const void* B, float* C, int M, int N, int K)\n"
        f"{{\n    tc_gemm_fast<{c.BM}, {c.BN}, {c.BK}, {c.WM}, {c.WN}, {c.STAGES}, true, true, true, false, "
        f"{tc_configs.KINDS[p]}>(static_cast<const unsigned char*>(A), static_cast<const unsigned char*>(B), C, M, N, K);\n}}\n"
        for p in c.precisions)
    return f'#include "{ROOT / "kernels" / tc_configs.SOURCE}"\n\n{body}\n{entries}'


def loop_mix(sass: str) -> dict:
    """Instruction counts, opcode -> count, of the main loop: from the first to the last instruction of the loops
    (backward branches) that hold HMMA or LDGSTS, so that copies the compiler moved into a loop of their own count."""
    lines = [(int(m[1], 16), m[2]) for m in re.finditer(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", sass)]
    loops = []
    for m in re.finditer(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?BRA\s+(?:`\(\.L_x_\d+\)|0x([0-9a-f]+))", sass):
        if m[2] and int(m[2], 16) < int(m[1], 16):
            loops.append((int(m[2], 16), int(m[1], 16)))
    work = [addr for addr, op in lines if op.startswith(("HMMA", "LDGSTS"))]
    spans = [(s, e) for s, e in loops if any(s <= a <= e for a in work)]
    if not spans:
        return {}
    start, end = min(s for s, _ in spans), max(e for _, e in spans)
    mix = {}
    for addr, op in lines:
        if start <= addr <= end:
            mix[op.split(".")[0]] = mix.get(op.split(".")[0], 0) + 1
    return mix


def sass_counts():
    """Compile for sm_90 with nvcc and count the main loops' instructions (no GPU): tc_wide's, where every tile
    takes the predicated copies, and the inner-tile path alone (the variant with ``inner`` forced true, so that the
    compiler drops the edge path: what an inner tile executes; never launched)."""
    only = generated_source().replace("    const bool inner = m0 + BM <= M", "    const bool inner = true || m0 + BM <= M")
    only = only.replace("if (inner && k0 + BK <= K) {", "if (inner) {").replace(FAST, "tc_inner_only")
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "fast.cu"
        src.write_text(only + "\n" + tc_configs.entry_points((BEST,)))
        cubin = Path(tmp) / "fast.cubin"
        subprocess.run(["nvcc", "-std=c++17", "-lineinfo", "-arch=sm_90", "-cubin", "-o", str(cubin), str(src)], check=True)
        for name in (f"{BEST.function}_f16", "tc_inner_only_f16"):
            sass = subprocess.run(["cuobjdump", "-sass", "-fun", name, str(cubin)], capture_output=True, text=True,
                                  check=True).stdout
            mix = loop_mix(sass)
            print(f"{name}: main loop {sum(mix.values())} instructions, {mix.get('HMMA', 0)} HMMA; "
                  f"{dict(sorted(mix.items(), key=lambda kv: -kv[1]))}")


def main():
    from gemmlab import ceilings, gpu
    gpu.cuda()
    cp = bench.cupy_or_none()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "08_fastpath.cu"
        path.write_text(generated_source())
        unit = compile_units.CompileUnit(path)
        for p in BEST.precisions:
            best = registry.lookup(f"tc_wide_{tc_configs.SUFFIXES[p]}")
            fast = replace(tensor_gemm.mma_kernel(BEST, p), name=f"{FAST}_{tc_configs.SUFFIXES[p]}", source=unit,
                           function=FAST)
            for M, N, K in ((1, 1, 1), (17, 33, 9), (300, 520, 1234), (1000, 2000, 777), (256, 512, 96)):
                A, B = verify.random_operands(M, N, K, seed=M + N + K)
                ok = tensor_gemm.reference(A, B, p).check(fast(A, B)).ok
                print(f"{fast.name} {M}x{N}x{K}: {'correct' if ok else 'WRONG'}", flush=True)
            probe = {c.what.split()[0]: c.measured for c in ceilings.tensor([p])}.get(p)
            for n in (4096, 8192):
                A, B = verify.random_operands(n, n, n, seed=n)
                runs = {"tc_wide": best.on_device(A, B).launch, "fast": fast.on_device(A, B).launch}
                if cp is not None:
                    runs["cuBLAS"] = precisions._cublas_call(cp, A, B, p)[0]
                times = timing.interleaved(runs)
                flops = 2.0 * n ** 3
                line = ", ".join(f"{k} {flops / times.median_s(k) / 1e12:.1f} TFLOP/s" for k in runs)
                median, low, high = times.ratio("fast", "tc_wide")
                beside = f"; the probe {probe:.1f} TFLOP/s" if probe else ""
                print(f"{p} {n}^3: {line}; fast / tc_wide {median:.1f}% ({low:.1f}-{high:.1f}){beside}", flush=True)


if __name__ == "__main__":
    if "--sass" in sys.argv:
        sass_counts()
    else:
        main()
