# Chapter 8's last step with a stream-K tail (issue #17): at 8192^3 tc_inner has 2,048 tiles of 128 x 256 for 132
# SMs, 15 full waves and a last one of 68 tiles, so about half of the SMs idle through the last 1/16 of the time
# (08_tail_group_experiment.py measures what that costs). Here the first 15 x 132 tiles run as in the chapter, one
# block each, and the K-tiles of the remaining 68 are shared out evenly over 132 more blocks, as chapter 9's
# stream-K does: each block runs 68 x 256 / 132 = 131.9 K-tiles, through at most two tiles, and adds its partial
# sums into C with atomicAdd (C's tail tiles are zeroed by a small kernel launched first). The order of the adds
# varies from launch to launch, so the last bits of those tiles may too (chapter 7's split-K says the same); every
# result stays within the FP32 bound.
#
# The kernel is generated from kernels/08_tensor_core.cu itself (nothing is copied by hand): tc_gemm again as
# tc_gemm_sk, whose block coordinates and range of K-tiles are parameters and whose epilogue can add instead of
# store. Correctness first (awkward sizes, forced splits), then tc_inner and the stream-K version timed interleaved
# with cuBLAS at 8192^3, 4096^3 and 6144 x 4096 x 2048, beside the probe. Run on a GPU of sm_80 or later with CuPy:
#   timeout 300 python3 drafts/08_streamk_tail_experiment.py
#   python3 drafts/08_streamk_tail_experiment.py --compile     (no GPU: nvcc for sm_80 and sm_90, ptxas's report)
import argparse, importlib, subprocess, sys, tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gemmlab import tc_configs
from drafts.variants import TC_INNER, replace_once

INNER = TC_INNER
EDITS = [
    ("__device__ __forceinline__ void tc_gemm(const unsigned char* __restrict__ A, const unsigned char* __restrict__ B,\n"
     "                                        float* __restrict__ C, int M, int N, int K)\n",
     "__device__ __forceinline__ void tc_gemm_sk(const unsigned char* __restrict__ A, const unsigned char* __restrict__ B,\n"
     "                                           float* __restrict__ C, int M, int N, int K, int bm, int bn, int kt_lo,\n"
     "                                           int kt_hi, bool add)\n"),
    ("    int bm, bn;\n    block_coords(M, N, BM, BN, bm, bn);\n", ""),
    ("        const int k0 = kt * BK;\n", "        const int k0 = (kt_lo + kt) * BK;           // kt counts from this part's first K-tile\n"),
    ("    const int tiles = (lda + BK - 1) / BK;\n", "    const int tiles = kt_hi - kt_lo;\n"),
    # the carried source pointers start at this part's first K-tile, not at K-tile 0
    ("    const unsigned char* pa_k = a_src;\n"
     "    const unsigned char* pb_k = b_src;\n"
     "    const size_t b_kstep = static_cast<size_t>(BK) * (B_KMAJOR ? 1 : ldb) * ELEM;\n",
     "    const size_t b_kstep = static_cast<size_t>(BK) * (B_KMAJOR ? 1 : ldb) * ELEM;\n"
     "    const unsigned char* pa_k = a_src + static_cast<size_t>(kt_lo) * BK * ELEM;\n"
     "    const unsigned char* pb_k = b_src + kt_lo * b_kstep;\n"),
    ("            store_pair(C, M, N, r, c, acc[i][j][0], acc[i][j][1]);\n"
     "            store_pair(C, M, N, r + 8, c, acc[i][j][2], acc[i][j][3]);\n",
     "            if (add) {\n"
     "                sk_add_pair(C, M, N, r, c, acc[i][j][0], acc[i][j][1]);\n"
     "                sk_add_pair(C, M, N, r + 8, c, acc[i][j][2], acc[i][j][3]);\n"
     "            } else {\n"
     "                store_pair(C, M, N, r, c, acc[i][j][0], acc[i][j][1]);\n"
     "                store_pair(C, M, N, r + 8, c, acc[i][j][2], acc[i][j][3]);\n"
     "            }\n"),
]

HELPERS = r"""
// Tile `id` of the chapter's order (TC_GROUP block rows at a time, column by column), as block_coords for blockIdx.
__device__ __forceinline__ void sk_coords(int grid_m, int grid_n, int id, int& bm, int& bn)
{
    const int first = id / (TC_GROUP * grid_n) * TC_GROUP;
    const int rows = min(grid_m - first, TC_GROUP);
    const int in_group = id % (TC_GROUP * grid_n);
    bm = first + in_group % rows;
    bn = in_group / rows;
}

// A part's two sums of row r, columns c and c + 1, added into C (zeroed first).
__device__ __forceinline__ void sk_add_pair(float* C, int M, int N, int r, int c, float v0, float v1)
{
    if (r >= M)
        return;
    float* p = C + static_cast<size_t>(r) * N + c;
    if (c < N)
        atomicAdd(p, v0);
    if (c + 1 < N)
        atomicAdd(p + 1, v1);
}
"""

ENTRIES = r"""
// Blocks 0 .. full_tiles - 1: one whole tile each, stored. Blocks full_tiles .. full_tiles + units - 1: an equal
// share of the remaining tiles' K-tiles each, added into C.
template <int KIND>
__device__ __forceinline__ void tc_sk(const void* A, const void* B, float* C, int M, int N, int K, int full_tiles, int units)
{
    constexpr int BM = 128, BN = 256, BK = 32, PER = 8;          // 16-bit inputs: 8 elements per 16 bytes
    const int lda = (K + PER - 1) / PER * PER, kpt = (lda + BK - 1) / BK;
    const int grid_m = (M + BM - 1) / BM, grid_n = (N + BN - 1) / BN, total = grid_m * grid_n;
    const auto* a = static_cast<const unsigned char*>(A);
    const auto* b = static_cast<const unsigned char*>(B);
    int bm, bn;
    if (static_cast<int>(blockIdx.x) < full_tiles) {
        sk_coords(grid_m, grid_n, blockIdx.x, bm, bn);
        tc_gemm_sk<BM, BN, BK, 64, 64, 4, true, true, true, false, true, KIND>(a, b, C, M, N, K, bm, bn, 0, kpt, false);
        return;
    }
    const long long u = blockIdx.x - full_tiles, work = static_cast<long long>(total - full_tiles) * kpt;
    long long lo = u * work / units;
    const long long hi = (u + 1) * work / units;
    while (lo < hi) {
        const int t = static_cast<int>(lo / kpt), kt = static_cast<int>(lo % kpt);
        const long long end = min(hi, static_cast<long long>(t + 1) * kpt);
        sk_coords(grid_m, grid_n, full_tiles + t, bm, bn);
        tc_gemm_sk<BM, BN, BK, 64, 64, 4, true, true, true, false, true, KIND>(a, b, C, M, N, K, bm, bn, kt,
                                                                              kt + static_cast<int>(end - lo), true);
        lo = end;
        __syncthreads();        // the next part's copies reuse the ring that this part's last fragments came from
    }
}

extern "C" __global__ void __launch_bounds__(256, 1) tc_sk_f16(const void* A, const void* B, float* C, int M, int N, int K,
                                                              int full_tiles, int units)
{
    tc_sk<F16>(A, B, C, M, N, K, full_tiles, units);
}

extern "C" __global__ void __launch_bounds__(256, 1) tc_sk_bf16(const void* A, const void* B, float* C, int M, int N, int K,
                                                               int full_tiles, int units)
{
    tc_sk<BF16>(A, B, C, M, N, K, full_tiles, units);
}

// One block per tile from full_tiles on: its part of C set to zero, for the adds.
extern "C" __global__ void __launch_bounds__(256) tc_sk_zero(float* C, int M, int N, int full_tiles)
{
    const int grid_m = (M + 127) / 128, grid_n = (N + 255) / 256;
    int bm, bn;
    sk_coords(grid_m, grid_n, full_tiles + blockIdx.x, bm, bn);
    for (int e = threadIdx.x; e < 128 * 256; e += blockDim.x) {
        const int r = bm * 128 + e / 256, c = bn * 256 + e % 256;
        if (r < M && c < N)
            C[static_cast<size_t>(r) * N + c] = 0.0f;
    }
}
"""


# serp: odd rows of fragments walked right to left, so that consecutive mma.sync share an operand register more
# often (62 .reuse flags on the HMMA instead of 56, compiled here; results bitwise the same)
SERPENTINE = [("            for (int j = 0; j < NI; ++j)\n"
               "                mma_step<KIND>(acc[i][j], a[set][i], b[set][j]);\n",
               "            for (int jj = 0; jj < NI; ++jj) {\n"
               "                const int j = i % 2 ? NI - 1 - jj : jj;\n"
               "                mma_step<KIND>(acc[i][j], a[set][i], b[set][j]);\n"
               "            }\n")]


def generated_source(extra=()) -> str:
    """The stream-K kernel file: tc_gemm rewritten as tc_gemm_sk (``extra``: more edits of its body, e.g. ``both``)."""
    path = ROOT / "kernels" / tc_configs.SOURCE
    text = path.read_text()
    body = replace_once(text[text.index("// [tc_gemm]"):text.index("// [/tc_gemm]")], [*EDITS, *extra],
                        f"kernels/{tc_configs.SOURCE}")
    return f'#include "{path}"\n{HELPERS}\n{body}\n{ENTRIES}'


def both_edits():
    """The ``both`` variant's edits (shared destinations carried too), from the carried-pointers draft."""
    return importlib.import_module("drafts.08_carried_pointers_experiment").VARIANTS["both"]


def split(M: int, N: int, sms: int, force_full: int | None = None) -> tuple[int, int]:
    """(full_tiles, units): whole waves of tiles run as in the chapter, the rest shared out over one wave of units
    (none where the tiles fill whole waves). ``force_full`` chooses another split, for the tests of odd cases."""
    total = -(-M // INNER.BM) * -(-N // INNER.BN)
    if force_full is not None:
        return min(force_full, total), sms
    full = total // sms * sms
    return (total, 0) if full == total else (full, sms)


def compile_only():
    with tempfile.TemporaryDirectory() as tmp:
        for name, extra in (("sk", ()), ("sk_both", both_edits())):
            src = Path(tmp) / f"{name}.cu"
            src.write_text(generated_source(extra))
            for arch in ("sm_80", "sm_90"):
                r = subprocess.run(["nvcc", "-std=c++17", "-arch=" + arch, "-cubin", "-Xptxas", "-v", "-o",
                                    str(Path(tmp) / f"{name}_{arch}.cubin"), str(src)], capture_output=True, text=True)
                if r.returncode:
                    sys.exit(r.stderr)
                report = r.stderr.splitlines()
                for i, line in enumerate(report):
                    if "Compiling entry function 'tc_sk_" in line:
                        used = next((l for l in report[i:i + 4] if "Used" in l), "")
                        spill = next((l for l in report[i:i + 4] if "spill" in l), "")
                        print(name, arch, line.split("'")[1], used.split(":")[-1].strip(), "|", spill.strip())


class StreamK:
    """The stream-K tail kernel for one input format, launched as gemmlab launches the chapter's kernels."""

    def __init__(self, compiled, precision: str, sms: int, force_full: int | None = None):
        self.precision, self.sms, self.force_full = precision, sms, force_full
        self.compiled = compiled
        self.shared = INNER.shared_bytes(precision)
        self.fn = compiled.prepared(f"tc_sk_{tc_configs.SUFFIXES[precision]}", "PPPiiiii", self.shared)
        self.zero = compiled.prepared("tc_sk_zero", "Piii", 0)

    def on_device(self, A, B):
        from pycuda import gpuarray
        from gemmlab import tensor_gemm

        a, b = tensor_gemm.device_operands(A, B, self.precision)
        M, K = A.shape
        N = B.shape[1]
        return Problem(self, M, N, K, gpuarray.to_gpu(a), gpuarray.to_gpu(b), gpuarray.empty((M, N), np.float32))

    def __call__(self, A, B):
        p = self.on_device(A, B)
        p.launch()
        return p.c.get()


class Problem:
    def __init__(self, kernel, M, N, K, a, b, c):
        self.kernel, self.M, self.N, self.K, self.a, self.b, self.c = kernel, M, N, K, a, b, c
        self.full, self.units = split(M, N, kernel.sms, kernel.force_full)
        self.total = -(-M // INNER.BM) * -(-N // INNER.BN)

    def launch(self):
        k = self.kernel
        if self.total > self.full:
            k.zero.prepared_call((self.total - self.full, 1, 1), (256, 1, 1), self.c.gpudata, self.M, self.N, self.full)
        k.fn.prepared_call((self.full + self.units, 1, 1), (INNER.threads, 1, 1), self.a.gpudata, self.b.gpudata,
                           self.c.gpudata, self.M, self.N, self.K, self.full, self.units, shared_size=k.shared)


def main(sizes):
    from gemmlab import ceilings, compiler, device, precisions, tensor_gemm, timing, verify
    from drafts.variants import cuda_and_cupy, tc_inner_units, tc_inner_variants

    cp = cuda_and_cupy()
    spec = device.current()
    with tempfile.TemporaryDirectory() as tmp:
        sk_units = {}
        for name, extra in (("sk", ()), ("sk_both", both_edits())):
            path = Path(tmp) / f"08_streamk_tail_{name}.cu"
            path.write_text(generated_source(extra))
            sk_units[name] = compiler.load(path)
        both_unit = tc_inner_units(Path(tmp), {"both": both_edits(), "serp": SERPENTINE})
        for p in ("FP16", "BF16"):
            for compiled in sk_units.values():
                compiled.allow_shared(f"tc_sk_{tc_configs.SUFFIXES[p]}", INNER.shared_bytes(p))
            for name, compiled in sk_units.items():
                for (M, N, K), force in (((1, 1, 1), None), ((300, 520, 1234), 1), ((300, 520, 1234), 0),
                                         ((1000, 2000, 777), 40), ((1024, 2048, 512), 50), ((2048, 2048, 96), 7),
                                         ((257, 4096, 96), 3)):
                    A, B = verify.random_operands(M, N, K, seed=M + N + K)
                    C = StreamK(compiled, p, spec.sms, force)(A, B)
                    ok = tensor_gemm.reference(A, B, p).check(C).ok
                    print(f"{name}_{p} {M}x{N}x{K}, {split(M, N, spec.sms, force)} (whole tiles, units): "
                          f"{'correct' if ok else 'WRONG'}", flush=True)
        for p in ("FP16", "BF16"):
            probe = {c.what.split()[0]: c.measured for c in ceilings.tensor([p])}.get(p)
            print(f"{p} probe (measured now): {probe:.1f} TFLOP/s", flush=True)
            kernels = tc_inner_variants(both_unit, p)               # tc_inner, both and serp
            for M, N, K in sizes:
                A, B = verify.random_operands(M, N, K, seed=1)
                run, _ = precisions._cublas_call(cp, A, B, p)
                problems = {name: k.on_device(A, B) for name, k in kernels.items()}
                problems.update({name: StreamK(c, p, spec.sms).on_device(A, B) for name, c in sk_units.items()})
                ref = None
                for name, q in problems.items():
                    q.launch()
                    got = q.c.get() if hasattr(q, "total") else q.result()
                    ref = got if ref is None else ref
                    print(f"   {name} agrees with tc_inner: {np.allclose(got, ref, rtol=1e-5, atol=1e-3)}")
                full, units = split(M, N, spec.sms)
                times = timing.interleaved({"cuBLAS": run, **{n: q.launch for n, q in problems.items()}})
                print(f"{p} {M}x{N}x{K} ({full} whole tiles, {units} units), interleaved")
                for name in problems:
                    rate = 2.0 * M * N * K / times.median_s(name) / 1e12
                    median, low, high = times.ratio(name, "cuBLAS")
                    print(f"   {name:9s} {rate:6.1f} TFLOP/s, {median:.1f}% of cuBLAS ({low:.1f}-{high:.1f}), "
                          f"{rate / probe:.1%} of the probe", flush=True)
                # as `python -m gemmlab bench` times a row (one warm-up, the median of 5), three times in turn
                print(f"{p} {M}x{N}x{K}, timed as the bench times (three turns)")
                for turn in range(3):
                    cub = 2.0 * M * N * K / timing.time_gpu(run, warmup=1, repeat=5).median_s / 1e12
                    rates = {name: 2.0 * M * N * K / timing.time_gpu(q.launch, warmup=1, repeat=5).median_s / 1e12
                             for name, q in problems.items()}
                    print(f"   turn {turn}: cuBLAS {cub:.1f}; " + "; ".join(
                        f"{n} {r:.1f} ({r / probe:.1%} of the probe)" for n, r in rates.items()), flush=True)
                del problems


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--compile", action="store_true", help="compile for sm_80 and sm_90 and print ptxas's report")
    parser.add_argument("--sizes", default="8192x8192x8192,3000x5000x1234", help="timed sizes, MxNxK,...")
    args = parser.parse_args()
    if args.compile:
        compile_only()
    else:
        main([tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")])
