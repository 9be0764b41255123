# Chapter 8's main loop loses 17% to its copies (the steady-state table: 607.4 -> 506.4 TFLOP/s, 78% of the probe),
# and what costs is their number, not their bytes: half as many 16-byte copies made the loop 4.5% faster, 4- and
# 8-byte ones ran as fast as 16 (results/copy-path-h200.txt). A 128 x 256 block moves 24 KiB per tile in 48 warp-wide
# cp.async instructions (6 per warp). On sm_90 the SM's copy engine can take the copies off the warps, in two forms:
#   bulk       cp.async.bulk, no tensor map: thread t < 128 copies row t of the A tile (64 bytes), the next 32 threads
#              a row of the B tile (512 bytes) each: 160 requests, 5 warp instructions per tile. A bulk copy writes its
#              row as it is, so the 16-byte chunks cannot be swizzled: the rows are padded by 16 bytes instead (80
#              and 528 bytes apart), which keeps every ldmatrix free of bank conflicts (eight rows at one chunk fall on
#              eight different 16-byte bank groups: 5r and 33r mod 8 differ for r = 0..7). Each copying thread
#              issues fence.proxy.async first, as the switch did; bulk_lean issues it once, before the loop.
#   tma        cp.async.bulk.tensor, through two tensor maps (gemmlab.tma), thread 0 alone: the A tile as one box of
#              128 rows x 64 bytes in the copy engine's 64-byte swizzle, which is exactly the chapter's swizzle of
#              64-byte rows, and the B tile as four boxes of 32 rows x 128 bytes (64 columns each, the 128-byte
#              swizzle: a box's inner extent may not exceed its swizzle span), so B lies as four panels of 4 KiB,
#              and ldmatrix's addresses follow (8 rows at one chunk: 8 different 16-byte bank groups again). 5
#              requests per tile. The tiles start 1024-byte aligned, where the swizzle pattern starts.
#   tma_ws     the same boxes issued by a warpgroup of its own (warps 8-11, only warp 8's lane 0 copies), as chapter
#              9 issues them: the 8 compute warps never wait for a copy to be issued and meet no __syncthreads; each
#              releases a stage on an "empty" mbarrier (8 arrivals) once it has read it, and the producer waits for
#              that before refilling. 384 threads leave 168 registers each, so the producer gives registers back
#              (setmaxnreg, sm_90a: the whole file is compiled for sm_90a) and the compute warps take 232.
# Every form completes on an mbarrier per stage (thread 0 tells it the tile's bytes) instead of cp.async.wait_group,
# with a prologue that fills the first three stages, since an mbarrier never filled is never complete.
#   steady  chapter 8's steady loop (kernels/08_steady_state.cu) with the parts steady_bulk, steady_bulk_lean,
#           steady_tma and steady_tma_ws, interleaved with steady_barrier (no copies) and steady_copies (cp.async): how far can the
#           loop go when the warps issue no copies?
#   switch  tc_inner's configuration with the BULK switch (inner tiles copied by bulk, edge tiles by the checked
#           cp.async copies into the same padded rows), checked at awkward sizes and timed interleaved against
#           tc_inner at 8192^3 and 4096^3, FP16 and BF16: only where that patch is applied (it is in the history: git
#           show 1119565:drafts/08_bulk_switch_next.patch | git apply; the device takes the working tree as it is)
# Run on the H200 on 2026-12-02 (results/bulk-copy-h200.txt, the bulk part and the switch only): correct, and three
# times slower (the loop at 30% of its speed without copies, tc_inner so built at 33-35% of tc_inner). Not adopted:
# chapter 8 says so. Again the same day with bulk_lean and tma (results/copy-engine-h200.txt): 28.0% and 71.1% of the
# loop without copies, cp.async 83.4%. Later again with tma_ws (the third run in results/copy-engine-h200.txt): 95.3%
# (168 registers at launch, 232 after setmaxnreg, one register spilled once before the loop); chapter 8's Hopper
# step, tc_tma (gemmlab.tc_tma), is this design as a whole GEMM.
# Compiled here (--compile): registers and spills. On an sm_90 GPU (about 30 s without the switch, 70 s with it):
#   timeout 240 python3 drafts/08_copy_engine_experiment.py [--compile]
import argparse, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gemmlab import compile_units, compiler, device, gpu, mma, probes, registry, tc_configs, tensor_gemm, timing
from drafts.variants import CHECK_SIZES, TC_INNER, check_and_time, kernel_variant

STEADY_HELPERS = ("enum SteadyPart { MMA = 0, LDMATRIX = 1, BARRIER = 2, COPIES = 3 };", r"""enum SteadyPart { MMA = 0, LDMATRIX = 1, BARRIER = 2, COPIES = 3, BULK = 4, BULK_LEAN = 5, TMA = 6, TMA_WS = 7 };

#if __CUDA_ARCH__ >= 900
// Tile `tile`'s 24 KiB into stage tile % 4 by the copy engine; thread 0 tells the stage's mbarrier the bytes.
// BULK, BULK_LEAN: thread t < 128 a 64-byte row of A, the next 32 a 512-byte row of B, each into its row padded by
// 16 bytes (BULK with a proxy fence per copying thread). TMA: thread 0 alone, A as one box (128 rows x 64 bytes,
// 64-byte swizzle), B as four boxes of 32 rows x 128 bytes (128-byte swizzle), one after the other.
template <int PART>
__device__ __forceinline__ void steady_engine_tile(unsigned char* smem, uint64_t* bars, const uint4* g,
                                                   const CUtensorMap* a_map, const CUtensorMap* b_map, int tile)
{
    constexpr int STAGE = PART >= TMA ? 128 * 64 + 32 * 512 : 128 * 80 + 32 * 528;
    const int tid = threadIdx.x, s = tile % 4;
    uint64_t* bar = bars + s;
    unsigned char* stage = smem + s * STAGE;
    if (tid == 0 || PART == TMA_WS)
        barrier_expect(bar, 24576);
    if constexpr (PART >= TMA) {
        if (tid == 0 || PART == TMA_WS) {           // TMA_WS: called by the producer warp's lane 0 alone
            tma_load_2d(stage, a_map, 0, tile * 128 % 262144, bar);
#pragma unroll
            for (int j = 0; j < 4; ++j)
                tma_load_2d(stage + 128 * 64 + 4096 * j, b_map, 64 * j, tile * 32 % 32768, bar);
        }
    } else if (tid < 160) {
        const bool a = tid < 128;
        const unsigned bytes = a ? 64 : 512;
        const size_t src = (static_cast<size_t>(tile) * 24576 + (a ? tid * 64 : 8192 + (tid - 128) * 512)) % (16u << 20);
        unsigned char* dst = stage + (a ? tid * 80 : 128 * 80 + (tid - 128) * 528);
        if (PART == BULK)
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     ::"r"(steady_smem(dst)), "l"(reinterpret_cast<const unsigned char*>(g) + src), "r"(bytes),
                       "r"(steady_smem(bar)) : "memory");
    }
}
#endif""")
STEADY_EDITS = [
    # chapter 9's mbarrier and copy-engine helpers (barrier_init_count, barrier_expect, barrier_wait, barrier_arrive,
    # tma_load_2d): the variant is compiled for sm_90a, as that file is
    ("#include <stdint.h>", f'#include "{ROOT / "kernels" / "09_hopper.cu"}"\n#include <stdint.h>'),
    STEADY_HELPERS,
    ("__device__ __forceinline__ void steady(const uint4* __restrict__ g, float* __restrict__ out, int iters)",
     "__device__ __forceinline__ void steady(const uint4* __restrict__ g, float* __restrict__ out, int iters,\n"
     "                                       const CUtensorMap* a_map = nullptr, const CUtensorMap* b_map = nullptr)"),
    ("    extern __shared__ __align__(128) unsigned char smem[];",
     """    // TMA: the tiles start 1024-byte aligned, where the copy engine's swizzle pattern starts (as chapter 9's
    // tma_tile_image relies on; a base computed at run time instead was spilled across setmaxnreg in tma_ws)
    extern __shared__ __align__(1024) unsigned char smem[];"""),
    ("""    __syncthreads();

    int a_off[2], b_off[4];""", """    __syncthreads();
    __shared__ __align__(8) uint64_t bars[RING];
    __shared__ __align__(8) uint64_t empty[RING];  // TMA_WS: each compute warp's release of a stage
    if constexpr (PART == TMA_WS) {      // 8 compute warps and a producer warpgroup (warps 8-11), no __syncthreads in the loop
        if (tid == 0)
            for (int s = 0; s < RING; ++s) {
                barrier_init_count(bars + s, 1);
                barrier_init_count(empty + s, 8);
                asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
            }
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
        if (warp >= 8) {                 // the producer: tiles 0 to iters (the loop reads a part of tile iters)
            // its warpgroup gives registers back, so that the compute warps can have the 208 they need where 384
            // threads would leave each 168 (a scheduler's 16 K registers over its 3 warps): 232 + 232 + 40 <= 512
            asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
            if (warp == 8 && lane == 0)
                for (int t = 0; t <= iters; ++t) {
                    if (t >= RING)       // the stage's tile t - RING released by all 8 compute warps
                        barrier_wait(empty + t % RING, (t / RING - 1) & 1);
                    steady_engine_tile<PART>(smem, bars, g, a_map, b_map, t);
                }
            return;
        }
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        barrier_wait(bars, 0);
    }

    int a_off[2], b_off[4];"""),
    ("    constexpr int A_ROW = 64, B_ROW = 512, STAGE = 128 * A_ROW + 32 * B_ROW, RING = 4;",
     """    constexpr int A_ROW = 64, B_ROW = 512, RING = 4;
    constexpr int PAD = PART == BULK || PART == BULK_LEAN ? 16 : 0, A_P = A_ROW + PAD, B_P = B_ROW + PAD;
    constexpr int STAGE = 128 * A_P + 32 * B_P, B_STEP = PART >= TMA ? 128 : B_P;   // B_STEP: one k-row of B"""),
    ("        a_off[kk] = steady_offset<A_ROW>(wm0 + lane % 16, 2 * kk + lane / 16);",
     """        a_off[kk] = PAD ? (wm0 + lane % 16) * A_P + (2 * kk + lane / 16) * 16
                        : steady_offset<A_ROW>(wm0 + lane % 16, 2 * kk + lane / 16);   // = the 64-byte swizzle"""),
    ("        b_off[t] = 128 * A_ROW + steady_offset<B_ROW>(lane % 8 + 8 * (lane / 8 % 2), (wn0 + 16 * t) / 8 + lane / 16);",
     """        {
            const int row = lane % 8 + 8 * (lane / 8 % 2), chunk = (wn0 + 16 * t) / 8 + lane / 16;
            b_off[t] = 128 * A_P + (PAD ? row * B_P + chunk * 16
                                    : PART >= TMA ? chunk / 8 * 4096 + row * 128 + (chunk % 8 ^ row % 8) * 16
                                                  : steady_offset<B_ROW>(row, chunk));
        }"""),
    ("st + a_off[kk] + 16 * i * A_ROW", "st + a_off[kk] + 16 * i * A_P"),
    ("st + b_off[j] + 16 * kk * B_ROW", "st + b_off[j] + 16 * kk * B_STEP"),
    ("""    // [steady_loop]
    for (int it = 0; it < iters; ++it) {""", """    if constexpr (PART >= BULK && PART != TMA_WS) {        // the first three stages filled before the loop, as the real kernel does
        if (tid == 0)
            for (int s = 0; s < RING; ++s) {
                barrier_init(bars + s);
            }
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");    // the fill above, before the engine writes
        __syncthreads();
        for (int s = 0; s < RING - 1; ++s)
            steady_engine_tile<PART>(smem, bars, g, a_map, b_map, s);
        barrier_wait(bars, 0);
        __syncthreads();
    }
    // [steady_loop]
    for (int it = 0; it < iters; ++it) {"""),
    ("            if (PART >= COPIES && kk == 0) {", """            if (PART >= BULK && PART != TMA_WS && kk == 0)
                steady_engine_tile<PART>(smem, bars, g, a_map, b_map, it + RING - 1);
            if (PART == COPIES && kk == 0) {"""),
    ("""                    fragments(it % RING, 1, 1);""", """                    fragments(it % RING, 1, 1);
                    if (PART == TMA_WS) {        // tile it read to its end: this warp releases its stage
                        __syncwarp();
                        if (threadIdx.x % 32 == 0)   // not `lane`: live across setmaxnreg, it was spilled
                            barrier_arrive(empty + it % RING);
                    }"""),
    ("""                    if (PART >= BARRIER)
                        __syncthreads();""", """                    if (PART >= BARRIER && PART != TMA_WS)
                        __syncthreads();"""),
    ("""                    if (PART >= COPIES)
                        asm volatile("cp.async.wait_group %0;" ::"n"(RING - 2));""",
     """                    if (PART == COPIES)
                        asm volatile("cp.async.wait_group %0;" ::"n"(RING - 2));
                    if (PART >= BULK)
                        barrier_wait(bars + (it + 1) % RING, ((it + 1) / RING) & 1);"""),
    ("""    if (PART >= COPIES)
        asm volatile("cp.async.wait_group 0;");""", """    if (PART == COPIES)
        asm volatile("cp.async.wait_group 0;");
    if constexpr (PART >= BULK && PART != TMA_WS)   // the fills issued for tiles past the last: landed before the block leaves
        for (int tile = iters + 1; tile < iters + RING - 1; ++tile)
            barrier_wait(bars + tile % RING, (tile / RING) & 1);"""),
]
STEADY_SHARED = {"bulk": 4 * (128 * 80 + 32 * 528), "bulk_lean": 4 * (128 * 80 + 32 * 528),
                 "tma": 4 * (128 * 64 + 32 * 512) + 1024, "tma_ws": 4 * (128 * 64 + 32 * 512) + 1024}
"""Dynamic shared memory of the copy-engine parts (padded rows; TMA's aligned tiles and 1 KiB to align them)."""
ENGINE_PARTS = ("bulk", "bulk_lean", "tma", "tma_ws")
THREADS = {"tma_ws": 384}
"""Threads per block: 8 compute warps, and for tma_ws a producer warpgroup beside them (setmaxnreg: sm_90a)."""


def steady_source() -> str:
    """kernels/08_steady_state.cu with the copy-engine parts and their entry points (compile it for sm_90 only)."""
    entry = '\nextern "C" __global__ void __launch_bounds__({4}, 1) steady_{0}({1})\n{{\n    steady<{2}>({3});\n}}\n'
    return (kernel_variant("08_steady_state.cu", *STEADY_EDITS)
            + entry.format("bulk", "const uint4* g, float* out, int iters", "BULK", "g, out, iters", 256)
            + entry.format("bulk_lean", "const uint4* g, float* out, int iters", "BULK_LEAN", "g, out, iters", 256)
            + "".join(entry.format(part.lower(), "const __grid_constant__ CUtensorMap a_map, "
                                   "const __grid_constant__ CUtensorMap b_map, float* out, int iters", part,
                                   "nullptr, out, iters, &a_map, &b_map", THREADS.get(part.lower(), 256))
                      for part in ("TMA", "TMA_WS")))


BULK = "tc_mma_128x256x32_64x64_s4_async_pf_in_bulk"
"""tc_inner's configuration with BULK, in tc_configs once the switch patch (in the history at 1119565) is applied."""


def bulk_config():
    """The BULK configuration, or None where the switch patch is not applied."""
    try:
        return tc_configs.config(BULK)
    except KeyError:
        return None


def compile_report():
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "08_steady_state_engine.cu"
        path.write_text(steady_source())
        units = [(compile_units.CompileUnit(path, arch_specific="sm_90a"), ("steady_copies",) + tuple(f"steady_{p}" for p in ENGINE_PARTS))]
        if bulk_config() is not None:
            units.append((compile_units.unit(tc_configs.SOURCE), (f"{TC_INNER.function}_f16", f"{BULK}_f16")))
        for unit, names in units:
            report = {e.function: e for e in compiler.ptxas_report(unit.text, unit.arch_specific or "sm_90", unit.options)}
            print(", ".join(f"{f}: {report[f].registers} registers, {report[f].spill_store_bytes} bytes spilled"
                            for f in names), flush=True)


def tensor_maps(g):
    """The steady loop's 16 MiB source as A (rows of 64 bytes, boxes of 128 rows, 64-byte swizzle) and as B (rows of
    512 bytes, boxes of 32 rows x 128 bytes, 128-byte swizzle): two encoded maps, each with the buffer that keeps its
    64-byte-aligned copy alive."""
    from gemmlab import hopper, tma
    address = int(g.gpudata)
    a = hopper.matrix_map(probes.STEADY_SOURCE_BYTES // 64, 32, "FP16", 128, 32, "64B", address=address)
    b = hopper.matrix_map(probes.STEADY_SOURCE_BYTES // 512, 256, "FP16", 32, 64, "128B", address=address)
    return [tma._aligned_copy(tma.encode(m, address)) for m in (a, b)]


def steady(spec, iters: int = 4096):
    """The steady loop without copies (steady_barrier), with cp.async (steady_copies) and with the copy engine's
    forms (steady_bulk, steady_bulk_lean, steady_tma, steady_tma_ws) interleaved, one block per SM, as
    gemmlab.probes.steady_state runs them; each as TFLOP/s and as a share of steady_barrier's."""
    import ctypes
    import numpy as np
    from pycuda import gpuarray
    from gemmlab import tma
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "08_steady_state_engine.cu"
        path.write_text(steady_source())
        compiled = compiler.load(compile_units.CompileUnit(path, arch_specific="sm_90a"))   # setmaxnreg
        g = gpuarray.zeros(probes.STEADY_SOURCE_BYTES // 4, np.uint32)
        g.fill(np.uint32(0x3C003C00))                      # FP16 ones: the TMA part's sums stay finite
        maps = tensor_maps(g)
        runs, outs = {}, {}
        for part in ("barrier", "copies") + ENGINE_PARTS:
            shared = STEADY_SHARED.get(part, probes.STEADY_SHARED_BYTES)
            outs[part] = out = gpuarray.zeros(spec.sms * THREADS.get(part, 256), np.float32)   # a sum per thread
            if part.startswith("tma"):
                fn = compiled.driver_function(f"steady_{part}", shared)
                args = [ctypes.c_uint64(int(out.gpudata)), ctypes.c_int(iters)]
                params = [maps[0][1], maps[1][1], *(ctypes.addressof(a) for a in args)]
                runs[part] = (lambda fn=fn, params=params, shared=shared, args=args, threads=THREADS.get(part, 256):
                              tma._launch(fn, (spec.sms, 1, 1), shared, params, threads=threads, sync=False))
            else:
                fn = compiled.function(f"steady_{part}")
                compiled.allow_shared(f"steady_{part}", shared)
                runs[part] = (lambda fn=fn, out=out, shared=shared: fn(
                    g.gpudata, out.gpudata, np.int32(iters), block=(256, 1, 1), grid=(spec.sms, 1, 1), shared=shared))
        for part, run in runs.items():                      # each once alone first: a hang stops here, named
            print(f"   steady_{part}: one launch", end="", flush=True)
            run()
            gpu.cuda().Context.synchronize()
            print(" done", flush=True)
        times = timing.interleaved(runs)
        m, n, k = mma.instruction("m16n8k16", "f16").mnk
        flops = spec.sms * 8 * iters * 2 * 32 * 2 * m * n * k
        for part in runs:
            median, low, high = times.ratio(part, "barrier")
            print(f"   steady_{part:10s} {flops / times.median_s(part) / 1e12:6.1f} TFLOP/s interleaved, {median:6.1f}% of "
                  f"steady_barrier ({low:.1f}-{high:.1f}), sums finite: {bool(np.isfinite(outs[part].get()).all())}",
                  flush=True)
        del maps


def main():
    gpu.cuda()
    spec = device.current()
    if tuple(spec.compute_capability) < (9, 0):
        sys.exit("needs cp.async.bulk (sm_90)")
    steady(spec)
    config = bulk_config()
    if config is None:
        print("tc_inner with BULK left out: its switch is in the history "
              "(git show 1119565:drafts/08_bulk_switch_next.patch | git apply)")
        return
    for p in ("FP16", "BF16"):
        kernels = {"tc_inner": registry.lookup(f"tc_inner_{tc_configs.SUFFIXES[p]}"),
                   "bulk": tensor_gemm.mma_kernel(config, p, "tc_inner_bulk")}
        check_and_time(kernels, p, CHECK_SIZES + ((4096, 4096, 4096), (1024, 1024, 96)))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--compile", action="store_true", help="registers, spills and instructions, no GPU")
    compile_report() if parser.parse_args().compile else main()
