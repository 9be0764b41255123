# Chapter 9 candidate, not yet run on a GPU: the epilogue through the copy engine (drafts/09_tma_store_epilogue.patch applied to
# kernels/09_hopper.cu first). `--probe`: each new kernel once, small, to find a hang fast; otherwise correctness
# against the paired-stores kernel at awkward sizes, then timing against cuBLAS, pairs and cluster at 4 sizes.
import ctypes, dataclasses, sys
from dataclasses import replace
import numpy as np
from gemmlab import bench, hopper, precisions, tensor_gemm, timing, tma, verify

class TmaStoreKernel(tma.HopperGemmKernel):
    def launch(self, a_ptr, b_ptr, c_ptr, M, N, K, extra_shared=0):
        key = (self.config, self.precision, int(a_ptr), int(b_ptr), int(c_ptr), M, N, K)
        c = self.config
        if key not in tma._MAPS:
            stride = tensor_gemm.padded_length(K, self.precision) * 2
            maps = [tma._aligned_copy(tma.encode(hopper.matrix_map(rows, K, self.precision, box, c.BK, "128B", stride), int(p)))
                    for rows, box, p in ((M, c.BM, a_ptr), (N, c.BN // c.cluster, b_ptr))]
            maps.append(tma._aligned_copy(tma.encode(hopper.matrix_map(M, N, "FP32", 64, 32, "128B"), int(c_ptr))))
            tma._MAPS[key] = maps
        (_, a), (_, b), (_, cm) = tma._MAPS[key]
        args = [ctypes.c_uint64(int(c_ptr)), ctypes.c_int(M), ctypes.c_int(N), ctypes.c_int(K)]
        tma._launch(self.compiled().driver_function(self.entry_point, c.shared), self.grid(M, N), c.shared,
                    [a, b, cm, *(ctypes.addressof(x) for x in args)], c.threads, sync=False)

def kernel(cfg, p, cls=tma.HopperGemmKernel):
    k = tma.hopper_kernel(cfg, precision=p)
    return cls(**{f.name: getattr(k, f.name) for f in dataclasses.fields(k)})

SH = tma.GEMM_WS.shared + 2 * 2 * 8192
new = {"tmastore": replace(tma.GEMM_CLUSTER, function="wgmma_gemm_tmastore", shared=SH),
       "tmastore1": replace(tma.GEMM_PAIRS, function="wgmma_gemm_tmastore1", shared=SH)}
P = "BF16"
ks = {"pairs": kernel(tma.GEMM_PAIRS, P), "cluster": kernel(tma.GEMM_CLUSTER, P),
      **{n: kernel(c, P, TmaStoreKernel) for n, c in new.items()}}
if "--probe" in sys.argv:
    A, B = verify.random_operands(300, 520, 256, seed=3)
    for n in new:
        C = ks[n](A, B)
        print(n, "ran; correct:", tensor_gemm.reference(A, B, P).check(C).ok, flush=True)
    sys.exit(0)
for M, N, K in ((1, 4, 1), (33, 20, 9), (300, 520, 1234), (1000, 2000, 777), (2048, 1028, 64)):
    A, B = verify.random_operands(M, N, K, seed=M + N + K)
    ref = tensor_gemm.reference(A, B, P)
    print(f"{M}x{N}x{K}", {n: ref.check(k(A, B)).ok for n, k in ks.items()}, flush=True)
cp = bench.cupy_or_none()
for M, N, K in ((2048,) * 3, (4096,) * 3, (6144, 4096, 2048), (8192,) * 3):
    A, B = verify.random_operands(M, N, K, seed=1)
    run, c = precisions._cublas_call(cp, A, B, P)
    run(); cp.cuda.Device().synchronize()
    fl = 2.0 * M * N * K
    tc = timing.time_gpu(run, warmup=1, repeat=10).median_s
    print(f"{M}x{N}x{K} cuBLAS {fl / tc / 1e12:.1f}", flush=True)
    first = None
    for n, k in ks.items():
        pr = k.on_device(A, B); pr.launch(); C = pr.result()
        first = C if first is None else first
        t = timing.time_gpu(pr.launch, warmup=1, repeat=10).median_s
        print(f"   {n:10s} {fl / t / 1e12:7.1f} {100 * tc / t:5.1f}% same={np.allclose(C, first, rtol=1e-5, atol=1e-3)}", flush=True)
        del pr
