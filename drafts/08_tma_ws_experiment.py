# Issue #17: chapter 8's best kernel, tc_inner, with its copies taken off the warps that multiply. On sm_90 the
# SM's copy engine moves each 128 x 256 x 32 tile as five tensor-map boxes (A: 128 rows x 64 bytes in the engine's
# 64-byte swizzle, which is exactly the chapter's swizzle of 64-byte rows; B: four boxes of 32 rows x 128 bytes in
# the 128-byte swizzle, so B lies as four panels of 4 KiB, and ldmatrix's addresses follow), issued by one thread
# of a producer warpgroup of its own, as chapter 9's kernels issue them. The 8 warps that multiply, in the same
# 64 x 64 warp tiles, fragments prefetched a k-step ahead, as tc_inner, never issue a copy, never meet a
# __syncthreads(): each waits on a stage's "full" mbarrier and releases it on an "empty" one (8 arrivals) once it
# has read it. 384 threads leave 168 registers each, so the producer gives registers back (setmaxnreg: the file is
# compiled for sm_90a) and the multiplying warps take 232. The copy engine fills what lies outside A or B with
# zeros, so every tile, edges included, takes one path (the launcher pads rows to 16 bytes, as a tensor map needs).
# FP16 and BF16 only (TF32's B is K-major: not written).
#   32-deep tiles as tc_inner's in rings of 4 and 6 stages, and 64-deep tiles (A's rows then 128 bytes, in the
#   128-byte swizzle; four k-steps per tile) in rings of 3 and 4, each checked at awkward sizes, then timed
#   interleaved against tc_inner and tc_tail at 8192^3 and 4096^3, FP16 and BF16.
# Why: the steady loop with its copies is at 78% of the probe, without them at 94%; row copies by the engine were
# three times slower, boxes issued by a multiplying warp 71% of the loop without copies (results/bulk-copy-h200.txt,
# results/copy-engine-h200.txt). drafts/08_copy_engine_experiment.py's steady_tma_ws is this design's loop alone.
# Compiled here (--compile): registers and spills. On an H200 (about 2 minutes):
#   timeout 300 python3 drafts/08_tma_ws_experiment.py [--compile]
import argparse, ctypes, sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gemmlab import compile_units, compiler, gpu, hopper, registry, tc_configs, tensor_gemm, tma
from drafts.variants import CHECK_SIZES, check_and_time

VARIANTS = ((32, 4), (32, 6), (64, 3), (64, 4))
"""(BK, stages): 32-deep tiles as tc_inner's in rings of 4 and 6 (97 and 145 KiB), 64-deep in 3 and 4 (145, 193 KiB)."""
THREADS = 384


def stage_bytes(bk: int) -> int:
    return (128 + 256) * bk * 2

CODE = r"""
// ---- drafts/08_tma_ws_experiment.py: tc_inner's tile fed by the copy engine from a producer warpgroup (sm_90a)
// Chapter 9's mbarrier and copy-engine helpers (barrier_init_count, barrier_expect, barrier_wait, barrier_arrive,
// tma_load_2d), from its kernel file: this unit is compiled for sm_90a as that file is.
#include "09_hopper.cu"

// BK = 32: A's rows are 64 bytes (the engine's 64-byte swizzle), two k-steps per tile; BK = 64: 128-byte rows and
// swizzle, four k-steps. B: four panels of BK rows x 128 bytes (64 columns) in the 128-byte swizzle.
template <int BK, int STAGES, int KIND>
__device__ __forceinline__ void tc_tma_ws(const CUtensorMap* a_map, const CUtensorMap* b_map, float* __restrict__ C,
                                          int M, int N, int K)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int BM = 128, BN = 256, A_ROW = BK * 2, A_BYTES = BM * A_ROW, PANEL = BK * 128, KSTEPS = BK / 16;
    constexpr int STAGE = A_BYTES + 4 * PANEL, MI = 4, NI = 8;
    static_assert((BK == 32 || BK == 64) && KSTEPS % 2 == 0, "two fragment sets alternate over the k-steps");
    extern __shared__ __align__(128) unsigned char raw[];
    // the tiles start 1024-byte aligned, where the engine's swizzle pattern starts (1 KiB more is asked for)
    unsigned char* const smem = raw + (1024 - smem_u32(raw) % 1024) % 1024;
    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    // the tile's place and length, computed after setmaxnreg on each side: a value live across it was spilled
    auto tile = [&](int& m0, int& n0) {
        int bm, bn;
        block_coords(M, N, BM, BN, bm, bn);
        m0 = bm * BM;
        n0 = bn * BN;
        return k_tiles<BK, KIND>(K);
    };
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            barrier_init_count(full + s, 1);
            barrier_init_count(empty + s, 8);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (warp >= 8) {                     // the producer warpgroup: one thread copies, all give registers back
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        int m0, n0;
        const int tiles = tile(m0, n0);
        if (warp == 8 && lane == 0)
            for (int kt = 0; kt < tiles; ++kt) {
                const int s = kt % STAGES;
                if (kt >= STAGES)        // tile kt - STAGES released by all 8 warps
                    barrier_wait(empty + s, (kt / STAGES - 1) & 1);
                barrier_expect(full + s, STAGE);
                unsigned char* st = smem + s * STAGE;
                tma_load_2d(st, a_map, kt * BK, m0, full + s);
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    tma_load_2d(st + A_BYTES + j * PANEL, b_map, n0 + 64 * j, kt * BK, full + s);
            }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    int m0, n0;
    const int tiles = tile(m0, n0);
    const int wm0 = warp / 4 * 64, wn0 = warp % 4 * 64;
    int a_off[KSTEPS], b_off[4];
#pragma unroll
    for (int kk = 0; kk < KSTEPS; ++kk)  // the engine's 64- and 128-byte swizzles are the chapter's for such rows
        a_off[kk] = chunk_offset<A_ROW, true>(wm0 + lane % 16, 2 * kk + lane / 16);
#pragma unroll
    for (int t = 0; t < 4; ++t) {        // B: panel chunk / 8, its 128-byte swizzle
        const int row = lane % 8 + 8 * (lane / 8 % 2), chunk = (wn0 + 16 * t) / 8 + lane / 16;
        b_off[t] = A_BYTES + chunk / 8 * PANEL + row * 128 + ((chunk % 8) ^ (row % 8)) * 16;
    }
    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e)
                acc[i][j][e] = 0.0f;
    unsigned a[2][MI][4], b[2][NI][2];
    auto load_fragments = [&](int stage, int kk, int set) {
        const unsigned char* st = smem + stage * STAGE;
#pragma unroll
        for (int i = 0; i < MI; ++i)
            ldmatrix_x4(a[set][i], st + a_off[kk] + 16 * i * A_ROW);
#pragma unroll
        for (int j = 0; j < NI / 2; ++j)
            ldmatrix_x4_trans(b[set][2 * j][0], b[set][2 * j][1], b[set][2 * j + 1][0], b[set][2 * j + 1][1],
                              st + b_off[j] + 16 * kk * 128);
    };
    auto mma_all = [&](int set) {
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
            for (int j = 0; j < NI; ++j)
                mma_step<KIND>(acc[i][j], a[set][i], b[set][j]);
    };
    if (tiles > 0) {
        barrier_wait(full, 0);
        load_fragments(0, 0, 0);
    }
    for (int kt = 0; kt < tiles; ++kt) {
        const int s = kt % STAGES;
#pragma unroll
        for (int kk = 0; kk < KSTEPS; ++kk) {
            if (kk < KSTEPS - 1) {
                load_fragments(s, kk + 1, (kk + 1) % 2);
            } else if (kt + 1 < tiles) {
                const int next = (kt + 1) % STAGES;
                barrier_wait(full + next, ((kt + 1) / STAGES) & 1);
                load_fragments(next, 0, 0);
            }
            mma_all(kk % 2);
            if (kk == KSTEPS - 2) {      // the tile's last fragments are loaded: this warp releases the stage
                __syncwarp();
                if (lane == 0)
                    barrier_arrive(empty + s);
            }
        }
    }
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j) {
            const int r = m0 + wm0 + 16 * i + lane / 4, c = n0 + wn0 + 8 * j + 2 * (lane % 4);
            store_pair(C, M, N, r, c, acc[i][j][0], acc[i][j][1]);
            store_pair(C, M, N, r + 8, c, acc[i][j][2], acc[i][j][3]);
        }
#endif
}
"""


def entry_points() -> str:
    kinds = {"f16": "F16", "bf16": "BF16"}
    return CODE + "".join(
        f'\nextern "C" __global__ void __launch_bounds__({THREADS}, 1)\n'
        f"tc_tma_ws_k{bk}_s{s}_{suffix}(const __grid_constant__ CUtensorMap a_map, "
        f"const __grid_constant__ CUtensorMap b_map, float* C, int M, int N, int K)\n"
        f"{{\n    tc_tma_ws<{bk}, {s}, {kind}>(&a_map, &b_map, C, M, N, K);\n}}\n"
        for bk, s in VARIANTS for suffix, kind in kinds.items())


UNIT = compile_units.CompileUnit(ROOT / "kernels" / tc_configs.SOURCE, entry_points(), arch_specific="sm_90a")
_MAPS: dict = {}
"""Encoded tensor maps per (A, B, M, N, K, format), with the buffers that keep their aligned copies alive."""


@dataclass(frozen=True)
class TmaWsKernel(tensor_gemm.TensorGemmKernel):
    """tc_tma_ws: launched through the driver, with A's and B's tensor maps as parameters."""

    bk: int = 32

    def maps(self, a_ptr: int, b_ptr: int, M: int, N: int, K: int):
        key = (a_ptr, b_ptr, M, N, K, self.precision, self.bk)
        if key not in _MAPS:
            lda, ldb = (tensor_gemm.padded_length(n, self.precision) for n in (K, N))
            a = hopper.matrix_map(M, lda, self.precision, 128, self.bk, f"{self.bk * 2}B", address=a_ptr)
            b = hopper.matrix_map(K, ldb, self.precision, self.bk, 64, "128B", address=b_ptr)
            _MAPS[key] = [tma._aligned_copy(tma.encode(m, m.address)) for m in (a, b)]
        return _MAPS[key]

    def launch(self, a_ptr, b_ptr, c_ptr, M: int, N: int, K: int, extra_shared: int = 0) -> None:
        fn = self.compiled().driver_function(self.entry_point, self.dynamic_shared)
        (_, a_map), (_, b_map) = self.maps(int(a_ptr), int(b_ptr), M, N, K)
        args = [ctypes.c_uint64(int(c_ptr)), ctypes.c_int(M), ctypes.c_int(N), ctypes.c_int(K)]
        tma._launch(fn, self.grid(M, N), self.dynamic_shared, [a_map, b_map, *(ctypes.addressof(x) for x in args)],
                    threads=THREADS, sync=False)


def kernel(bk: int, stages: int, precision: str) -> TmaWsKernel:
    return TmaWsKernel(f"tma_k{bk}_s{stages}", 8, UNIT, f"tc_tma_ws_k{bk}_s{stages}", (THREADS, 1, 1), (128, 256),
                       "mma.sync fed by the copy engine", precision=precision,
                       dynamic_shared=stages * stage_bytes(bk) + 1024, bk=bk)


def compile_report() -> None:
    report = {e.function: e for e in compiler.ptxas_report(UNIT.text, "sm_90a", UNIT.options)}
    for bk, s in VARIANTS:
        for suffix in ("f16", "bf16"):
            e = report[f"tc_tma_ws_k{bk}_s{s}_{suffix}"]
            print(f"tc_tma_ws_k{bk}_s{s}_{suffix}: {e.registers} registers at launch (232 after setmaxnreg), "
                  f"{e.spill_store_bytes} bytes spilled, {(s * stage_bytes(bk) + 1024) // 1024} KiB of shared memory")


def main() -> None:
    gpu.cuda()
    from gemmlab import device
    if tuple(device.current().compute_capability) != (9, 0):
        sys.exit("needs an sm_90 GPU (compiled for sm_90a)")
    for p in ("FP16", "BF16"):
        suffix = tc_configs.SUFFIXES[p]
        kernels = {"tc_inner": registry.lookup(f"tc_inner_{suffix}"), "tc_tail": registry.lookup(f"tc_tail_{suffix}")}
        kernels.update({f"tma_k{bk}_s{s}": kernel(bk, s, p) for bk, s in VARIANTS})
        check_and_time(kernels, p, CHECK_SIZES + ((4096, 4096, 4096), (1024, 1024, 96), (4096, 4100, 4104)))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--compile", action="store_true", help="registers and spills, no GPU")
    compile_report() if parser.parse_args().compile else main()
