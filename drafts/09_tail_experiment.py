# Chapter 9 at 4096^3 and beyond: the last step (wgmma_gemm_tmastore_*) against its stream-K version
# (wgmma_gemm_streamk_*, the last round shared out) and against itself on 128 SMs instead of 132, timed against
# cuBLAS with the interleaved timing of gemmlab.timing.interleaved (both see the same clocks). Findings:
# drafts/README.md. Run on a Hopper GPU:
#   timeout 300 python3 drafts/09_tail_experiment.py --time
#   ncu --clock-control none --section LaunchStats -k regex:"gemm|nvjet|sm90" python3 drafts/09_tail_experiment.py --cublas
# (--cublas: one cuBLAS call per size, for the names, grids and shared memory of the kernels cuBLAS chooses.)
# Next, for why stream-K loses at 4096^3 (the chapter's working explanation: L2 sharing lost in the shared round):
#   ncu --clock-control none --metrics gpu__time_duration.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum \
#       -k regex:"wgmma_gemm_(tmastore|streamk)_bf16" python3 drafts/09_tail_experiment.py --once
# (--once: the last step and its stream-K version launched once each at 4096^3.)
import dataclasses, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gemmlab import bench, gpu, precisions, streamk, timing, tma, verify
from drafts.variants import cuda_and_cupy, recast

SIZES = ((4096,) * 3, (6144, 4096, 2048), (2048,) * 3, (8192,) * 3)


@dataclasses.dataclass(frozen=True)
class FewerBlocks(tma.HopperGemmKernel):
    blocks: int = 128

    def grid(self, M, N):
        g = super().grid(M, N)
        return (min(g[0], self.blocks), 1, 1)


def timings():
    cp = cuda_and_cupy()
    last = tma.hopper_kernel(tma.GEMM_TMA_STORE)
    kernels = {"tmastore": last, "streamk": tma.hopper_kernel(tma.GEMM_STREAMK),
               "g128": recast(last, FewerBlocks)}
    for M, N, K in SIZES:
        A, B = verify.random_operands(M, N, K, seed=1)
        run, c = precisions._cublas_call(cp, A, B, "BF16")
        problems = {n: k.on_device(A, B) for n, k in kernels.items()}
        times = timing.interleaved({"cuBLAS": run, **{n: p.launch for n, p in problems.items()}})
        expected, flops = cp.asnumpy(c), 2.0 * M * N * K
        b = streamk.balance(M, N, K, last.grid(M, N)[0] // 2)
        print(f"{M}x{N}x{K}: cuBLAS {flops / times.median_s('cuBLAS') / 1e12:.1f} TFLOP/s; {b.tiles} pairs on "
              f"{b.units} clusters, busiest {b.whole_tiles_only} tiles, {b.shared:.2f} with the split", flush=True)
        for n, p in problems.items():
            median, low, high = times.ratio(n, "cuBLAS")
            err = float(abs(p.result() - expected).max() / max(abs(expected).max(), 1e-30))
            print(f"   {n:9s} {flops / times.median_s(n) / 1e12:7.1f} TFLOP/s, of cuBLAS: median "
                  f"{median:.1f}%, quartiles {low:.1f}-{high:.1f}; "
                  f"max|C - cuBLAS|/max|C| {err:.1e} after all launches", flush=True)
        del problems


def cublas_once():
    cp = bench.cupy_or_none()
    for M, N, K in SIZES:
        A, B = verify.random_operands(M, N, K, seed=1)
        run, _ = precisions._cublas_call(cp, A, B, "BF16")
        run()
        cp.cuda.Device().synchronize()
        print(f"cuBLAS {M}x{N}x{K} done", flush=True)


def once(M=4096, N=4096, K=4096):
    A, B = verify.random_operands(M, N, K, seed=1)
    for config in (tma.GEMM_TMA_STORE, tma.GEMM_STREAMK):
        problem = tma.hopper_kernel(config).on_device(A, B)
        problem.launch()
        gpu.cuda().Context.synchronize()
        print(config.function, "launched", flush=True)


if __name__ == "__main__":
    gpu.cuda()
    if "--once" in sys.argv:
        once()
    if "--cublas" in sys.argv:
        cublas_once()
    if "--time" in sys.argv:
        timings()
