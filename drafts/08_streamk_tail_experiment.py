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
import argparse, subprocess, sys, tempfile
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


def generated_source() -> str:
    path = ROOT / "kernels" / tc_configs.SOURCE
    text = path.read_text()
    body = replace_once(text[text.index("// [tc_gemm]"):text.index("// [/tc_gemm]")], EDITS, f"kernels/{tc_configs.SOURCE}")
    return f'#include "{path}"\n{HELPERS}\n{body}\n{ENTRIES}'


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
        src = Path(tmp) / "sk.cu"
        src.write_text(generated_source())
        for arch in ("sm_80", "sm_90"):
            r = subprocess.run(["nvcc", "-std=c++17", "-arch=" + arch, "-cubin", "-Xptxas", "-v", "-o",
                                str(Path(tmp) / f"sk_{arch}.cubin"), str(src)], capture_output=True, text=True)
            if r.returncode:
                sys.exit(r.stderr)
            report = r.stderr.splitlines()
            for i, line in enumerate(report):
                if "Compiling entry function 'tc_sk_" in line:
                    used = next((l for l in report[i:i + 4] if "Used" in l), "")
                    spill = next((l for l in report[i:i + 4] if "spill" in l), "")
                    print(arch, line.split("'")[1], used.split(":")[-1].strip(), "|", spill.strip())


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


def main():
    from gemmlab import bench, ceilings, compiler, device, gpu, precisions, registry, tensor_gemm, timing, verify

    gpu.cuda()
    spec = device.current()
    cp = bench.cupy_or_none()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "08_streamk_tail.cu"
        path.write_text(generated_source())
        compiled = compiler.load(path)
        for p in ("FP16", "BF16"):
            compiled.allow_shared(f"tc_sk_{tc_configs.SUFFIXES[p]}", INNER.shared_bytes(p))
            for (M, N, K), force in (((1, 1, 1), None), ((300, 520, 1234), 1), ((300, 520, 1234), 0),
                                     ((1000, 2000, 777), 40), ((1024, 2048, 512), 50), ((2048, 2048, 96), 7)):
                A, B = verify.random_operands(M, N, K, seed=M + N + K)
                C = StreamK(compiled, p, spec.sms, force)(A, B)
                ok = tensor_gemm.reference(A, B, p).check(C).ok
                print(f"tc_sk_{p} {M}x{N}x{K}, {split(M, N, spec.sms, force)} (whole tiles, units): "
                      f"{'correct' if ok else 'WRONG'}", flush=True)
        if cp is None:
            sys.exit("no CuPy: no timing against cuBLAS")
        for p in ("FP16", "BF16"):
            probe = {c.what.split()[0]: c.measured for c in ceilings.tensor([p])}.get(p)
            inner = registry.lookup(f"tc_inner_{tc_configs.SUFFIXES[p]}")
            sk = StreamK(compiled, p, spec.sms)
            for M, N, K in ((8192, 8192, 8192), (4096, 4096, 4096), (6144, 4096, 2048)):
                A, B = verify.random_operands(M, N, K, seed=1)
                run, _ = precisions._cublas_call(cp, A, B, p)
                problems = {"tc_inner": inner.on_device(A, B), "stream-K": sk.on_device(A, B)}
                for q in problems.values():
                    q.launch()
                got = problems["stream-K"].c.get()
                same = np.allclose(got, problems["tc_inner"].result(), rtol=1e-5, atol=1e-3)
                times = timing.interleaved({"cuBLAS": run, **{n: q.launch for n, q in problems.items()}})
                full, units = split(M, N, spec.sms)
                print(f"{p} {M}x{N}x{K} ({full} whole tiles, {units} units; stream-K agrees with tc_inner: {same})")
                for name in problems:
                    rate = 2.0 * M * N * K / times.median_s(name) / 1e12
                    median, low, high = times.ratio(name, "cuBLAS")
                    of_probe = f", {rate / probe:.1%} of the probe" if probe else ""
                    print(f"   {name:9s} {rate:6.1f} TFLOP/s, {median:.1f}% of cuBLAS ({low:.1f}-{high:.1f}){of_probe}",
                          flush=True)
                del problems


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--compile", action="store_true", help="compile for sm_80 and sm_90 and print ptxas's report")
    if parser.parse_args().compile:
        compile_only()
    else:
        main()
