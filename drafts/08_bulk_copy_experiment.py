# Chapter 8's main loop loses 17% to its copies (the steady-state table: 611.5 -> 508.7 TFLOP/s), 78.7% of the
# probe without moves (results/probe-data-h200.txt), and what costs is their number, not their bytes: half as many
# 16-byte copies made the loop 4.5% faster, 4- and 8-byte ones ran as fast as 16 (results/copy-path-h200.txt). A
# 128 x 256 block moves 24 KiB per tile in 48 warp-wide cp.async instructions (6 per warp). On sm_90 one thread can
# copy a whole row with cp.async.bulk (the copy engine's plain form, no tensor map): here thread t < 128 copies row
# t of the A tile (64 bytes) and the next 32 threads a row of the B tile (512 bytes) each, 5 warp instructions per
# tile, completing on an mbarrier per stage (thread 0 tells it the tile's bytes) instead of cp.async.wait_group.
# A bulk copy writes its row as it is, so the 16-byte chunks cannot be swizzled: the rows are padded by 16 bytes
# instead (80 and 528 bytes apart), which keeps every ldmatrix free of bank conflicts, as chapter 4's padding did
# (eight rows at one chunk fall on eight different 16-byte bank groups: 5r and 33r mod 8 differ for r = 0..7).
#   steady  chapter 8's steady loop (kernels/08_steady_state.cu) with a fifth part, steady_bulk: the same loop with its
#           copies made so (and a prologue that fills the first three stages, since an mbarrier never filled is
#           never complete), timed interleaved with steady_barrier and steady_copies: how far can the loop go?
#   bulk    tc_inner's configuration with the BULK switch of drafts/08_bulk_switch_next.patch (inner tiles copied
#           so, edge tiles by the checked cp.async copies into the same padded rows), checked at awkward sizes and
#           timed interleaved against tc_inner at 8192^3 and 4096^3, FP16 and BF16: only where that patch is applied
#           (the patch is in the history: git show 1119565:drafts/08_bulk_switch_next.patch | git apply; the device
#           takes the working tree as it is)
# Run on the H200 on 2026-12-02 (results/bulk-copy-h200.txt): correct, and three times slower (the loop at 30% of its
# speed without copies, tc_inner so built at 33-35% of tc_inner). Not adopted: chapter 8 says so.
# Compiled here (--compile): registers and spills. On an sm_90 GPU (about 70 s):
#   timeout 240 python3 drafts/08_bulk_copy_experiment.py [--compile]
import argparse, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gemmlab import compile_units, compiler, device, gpu, mma, probes, registry, tc_configs, tensor_gemm, timing
from drafts.variants import CHECK_SIZES, TC_INNER, check_and_time, kernel_variant

STEADY_HELPERS = ("enum SteadyPart { MMA = 0, LDMATRIX = 1, BARRIER = 2, COPIES = 3 };", r"""enum SteadyPart { MMA = 0, LDMATRIX = 1, BARRIER = 2, COPIES = 3, BULK = 4 };

#if __CUDA_ARCH__ >= 900
__device__ __forceinline__ void steady_bar_wait(uint64_t* bar, unsigned parity)
{
    unsigned done = 0;
    while (!done)
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                     : "=r"(done) : "r"(steady_smem(bar)), "r"(parity) : "memory");
}

// BULK: tile `tile`'s bytes into stage tile % 4: thread t < 128 a 64-byte row of A, the next 32 a 512-byte row of B,
// each into its row padded by 16 bytes, from the L2-resident source; thread 0 tells the stage's mbarrier the bytes.
__device__ __forceinline__ void steady_bulk_tile(unsigned char* smem, uint64_t* bars, const uint4* g, int tile)
{
    constexpr int STAGE = 128 * 80 + 32 * 528;
    const int tid = threadIdx.x, s = tile % 4;
    uint64_t* bar = bars + s;
    if (tid == 0)
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(steady_smem(bar)), "r"(24576) : "memory");
    if (tid < 160) {
        const bool a = tid < 128;
        const unsigned bytes = a ? 64 : 512;
        const size_t src = (static_cast<size_t>(tile) * 24576 + (a ? tid * 64 : 8192 + (tid - 128) * 512)) % (16u << 20);
        unsigned char* dst = smem + s * STAGE + (a ? tid * 80 : 128 * 80 + (tid - 128) * 528);
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     ::"r"(steady_smem(dst)), "l"(reinterpret_cast<const unsigned char*>(g) + src), "r"(bytes),
                       "r"(steady_smem(bar)) : "memory");
    }
}
#endif""")
STEADY_EDITS = [
    STEADY_HELPERS,
    ("    constexpr int A_ROW = 64, B_ROW = 512, STAGE = 128 * A_ROW + 32 * B_ROW, RING = 4;",
     """    constexpr int A_ROW = 64, B_ROW = 512, RING = 4;
    constexpr int PAD = PART == BULK ? 16 : 0, A_P = A_ROW + PAD, B_P = B_ROW + PAD, STAGE = 128 * A_P + 32 * B_P;"""),
    ("        a_off[kk] = steady_offset<A_ROW>(wm0 + lane % 16, 2 * kk + lane / 16);",
     """        a_off[kk] = PART == BULK ? (wm0 + lane % 16) * A_P + (2 * kk + lane / 16) * 16
                                 : steady_offset<A_ROW>(wm0 + lane % 16, 2 * kk + lane / 16);"""),
    ("        b_off[t] = 128 * A_ROW + steady_offset<B_ROW>(lane % 8 + 8 * (lane / 8 % 2), (wn0 + 16 * t) / 8 + lane / 16);",
     """        b_off[t] = 128 * A_P + (PART == BULK ? (lane % 8 + 8 * (lane / 8 % 2)) * B_P + ((wn0 + 16 * t) / 8 + lane / 16) * 16
                                            : steady_offset<B_ROW>(lane % 8 + 8 * (lane / 8 % 2), (wn0 + 16 * t) / 8 + lane / 16));"""),
    ("st + a_off[kk] + 16 * i * A_ROW", "st + a_off[kk] + 16 * i * A_P"),
    ("st + b_off[j] + 16 * kk * B_ROW", "st + b_off[j] + 16 * kk * B_P"),
    ("""    // [steady_loop]
    for (int it = 0; it < iters; ++it) {""", """    __shared__ __align__(8) uint64_t bars[RING];
    if constexpr (PART == BULK) {        // the first three stages filled before the loop, as the real kernel does
        if (tid == 0)
            for (int s = 0; s < RING; ++s) {
                asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(steady_smem(bars + s)));
                asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
            }
        __syncthreads();
        for (int s = 0; s < RING - 1; ++s)
            steady_bulk_tile(smem, bars, g, s);
        steady_bar_wait(bars, 0);
        __syncthreads();
    }
    // [steady_loop]
    for (int it = 0; it < iters; ++it) {"""),
    ("            if (PART >= COPIES && kk == 0) {", """            if (PART == BULK && kk == 0)
                steady_bulk_tile(smem, bars, g, it + RING - 1);
            if (PART == COPIES && kk == 0) {"""),
    ("""                    if (PART >= COPIES)
                        asm volatile("cp.async.wait_group %0;" ::"n"(RING - 2));""",
     """                    if (PART == COPIES)
                        asm volatile("cp.async.wait_group %0;" ::"n"(RING - 2));
                    if (PART == BULK)
                        steady_bar_wait(bars + (it + 1) % RING, ((it + 1) / RING) & 1);"""),
    ("""    if (PART >= COPIES)
        asm volatile("cp.async.wait_group 0;");""", """    if (PART == COPIES)
        asm volatile("cp.async.wait_group 0;");
    if constexpr (PART == BULK)          // the fills issued for tiles past the last: landed before the block leaves
        for (int tile = iters + 1; tile < iters + RING - 1; ++tile)
            steady_bar_wait(bars + tile % RING, (tile / RING) & 1);"""),
]
STEADY_BULK_BYTES = 4 * (128 * 80 + 32 * 528)


def steady_source() -> str:
    """kernels/08_steady_state.cu with the BULK part and its entry point steady_bulk (compile it for sm_90 only)."""
    return kernel_variant("08_steady_state.cu", *STEADY_EDITS) + (
        '\nextern "C" __global__ void __launch_bounds__(256, 1) steady_bulk(const uint4* g, float* out, int iters)\n'
        "{\n    steady<BULK>(g, out, iters);\n}\n")


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
        path = Path(tmp) / "08_steady_state_bulk.cu"
        path.write_text(steady_source())
        units = [(compile_units.CompileUnit(path), ("steady_copies", "steady_bulk"))]
        if bulk_config() is not None:
            units.append((compile_units.unit(tc_configs.SOURCE), (f"{TC_INNER.function}_f16", f"{BULK}_f16")))
        for unit, names in units:
            report = {e.function: e for e in compiler.ptxas_report(unit.text, "sm_90", unit.options)}
            print(", ".join(f"{f}: {report[f].registers} registers, {report[f].spill_store_bytes} bytes spilled"
                            for f in names), flush=True)


def steady(spec, iters: int = 4096):
    """The steady loop's last three parts (steady_barrier, steady_copies, steady_bulk) interleaved, one block per SM,
    as gemmlab.probes.steady_state runs them; each as TFLOP/s and as a share of steady_barrier's."""
    import numpy as np
    from pycuda import gpuarray
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "08_steady_state_bulk.cu"
        path.write_text(steady_source())
        compiled = compiler.load(compile_units.CompileUnit(path))
        g = gpuarray.zeros(probes.STEADY_SOURCE_BYTES // 4, np.uint32)
        runs, outs = {}, {}
        for part, shared in (("barrier", probes.STEADY_SHARED_BYTES), ("copies", probes.STEADY_SHARED_BYTES),
                             ("bulk", STEADY_BULK_BYTES)):
            fn = compiled.function(f"steady_{part}")
            compiled.allow_shared(f"steady_{part}", shared)
            outs[part] = out = gpuarray.zeros(spec.sms * 256, np.float32)
            runs[part] = (lambda fn=fn, out=out, shared=shared: fn(
                g.gpudata, out.gpudata, np.int32(iters), block=(256, 1, 1), grid=(spec.sms, 1, 1), shared=shared))
        times = timing.interleaved(runs)
        m, n, k = mma.instruction("m16n8k16", "f16").mnk
        flops = spec.sms * 8 * iters * 2 * 32 * 2 * m * n * k
        for part in runs:
            median, low, high = times.ratio(part, "barrier")
            print(f"   steady_{part:8s} {flops / times.median_s(part) / 1e12:6.1f} TFLOP/s interleaved, {median:6.1f}% of "
                  f"steady_barrier ({low:.1f}-{high:.1f}), sums finite: {bool(np.isfinite(outs[part].get()).all())}",
                  flush=True)


def main():
    gpu.cuda()
    spec = device.current()
    if tuple(spec.compute_capability) < (9, 0):
        sys.exit("needs cp.async.bulk (sm_90)")
    steady(spec)
    config = bulk_config()
    if config is None:
        sys.exit("tc_inner with BULK: apply the switch first (git show 1119565:drafts/08_bulk_switch_next.patch | git apply)")
    for p in ("FP16", "BF16"):
        kernels = {"tc_inner": registry.lookup(f"tc_inner_{tc_configs.SUFFIXES[p]}"),
                   "bulk": tensor_gemm.mma_kernel(config, p, "tc_inner_bulk")}
        check_and_time(kernels, p, CHECK_SIZES + ((4096, 4096, 4096), (1024, 1024, 96)))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--compile", action="store_true", help="registers, spills and instructions, no GPU")
    compile_report() if parser.parse_args().compile else main()
