# Where chapter 8's last step (tc_inner) waits, by instruction (Nsight Compute's warp-state sampling, 2026-12-02,
# drafts/next_gpu.sh S, tc_inner_bf16 at 4096^3): 8.5% of all samples sit on the one instruction after the tile's
# cp.async copies and their commit, a LOP3 that reuses a register the copies read their shared-memory address from,
# stalled on the long scoreboard until the copies have read it; the HMMA themselves hold 47% of the samples (most of
# them the fixed issue interval between two mma.sync of a warp). The chapter's loop issues the next tile's copies at
# the start of each tile, before its first k-step's mma.sync. Two variants, generated from kernels/08_tensor_core.cu:
#   after  the copies issued after the first k-step's mma.sync (the tensor cores have 32 mma.sync of the warp queued
#          while the copies read their registers)
#   last   the copies issued at the last k-step, just before the wait and the barrier (two tiles ahead, as before)
# each checked at awkward sizes, then timed interleaved against tc_inner at 8192^3 and 4096^3, FP16 and BF16.
# Run on a GPU of sm_80 or later (about a minute):  timeout 200 python3 drafts/08_copy_order_experiment.py
import sys, tempfile
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gemmlab import compile_units, gpu, registry, tc_configs, tensor_gemm, timing, verify
from drafts.variants import kernel_variant

INNER = tc_configs.config("tc_mma_128x256x32_64x64_s4_swz_async_pf_in")
ISSUE = ("                if (SPREAD || kk == 0) {\n"
         "                    if (next < tiles)\n"
         "                        load_tile(next, next % RING, SPREAD ? kk : 0, SPREAD ? KSTEPS : 1);\n"
         "                    if (!SPREAD || kk == KSTEPS - 1)\n"
         "                        copy_commit();\n"
         "                }\n")
MMA = "                mma_all(kk % 2);\n"
WAIT = ("                } else {\n"
        "                    copy_wait<RING - 2>();\n"
        "                    __syncthreads();\n"
        "                    if (kt + 1 < tiles)\n")
COPY = "if (next < tiles) load_tile(next, next % RING, 0, 1); copy_commit();"
VARIANTS = {
    "after": [(ISSUE, ""), (MMA, MMA + f"                if (kk == 0) {{ {COPY} }}\n")],
    "last": [(ISSUE, ""), (WAIT, WAIT.replace("                } else {\n", f"                }} else {{\n                    {COPY}\n"))],
}
CHECK_SIZES = ((1, 1, 1), (300, 520, 1234), (1000, 2000, 777), (1024, 2048, 512), (257, 4096, 96))


def main():
    gpu.cuda()
    with tempfile.TemporaryDirectory() as tmp:
        for p in ("FP16", "BF16"):
            ks = {"tc_inner": registry.lookup(f"tc_inner_{tc_configs.SUFFIXES[p]}")}
            for name, edits in VARIANTS.items():
                path = Path(tmp) / f"08_tensor_core_{name}.cu"
                path.write_text(kernel_variant(tc_configs.SOURCE, *edits))
                unit = compile_units.CompileUnit(path, tc_configs.entry_points((INNER,)))
                ks[name] = replace(tensor_gemm.mma_kernel(INNER, p, f"tc_inner_{name}"), source=unit)
            for name, k in ks.items():
                print(f"{p} {name}: {k.resources().registers} registers, {k.resources().local_bytes} bytes local", flush=True)
            for M, N, K in CHECK_SIZES:
                A, B = verify.random_operands(M, N, K, seed=M + K)
                ref = tensor_gemm.reference(A, B, p)
                bad = [n for n, k in ks.items() if not ref.check(k(A, B)).ok]
                print(f"{p} {M}x{N}x{K}: {'all correct' if not bad else 'WRONG: ' + ', '.join(bad)}", flush=True)
            for n in (8192, 4096):
                A, B = verify.random_operands(n, n, n, seed=n)
                problems = {name: k.on_device(A, B) for name, k in ks.items()}
                times = timing.interleaved({name: q.launch for name, q in problems.items()})
                for name in problems:
                    median, low, high = times.ratio(name, "tc_inner")
                    rate = 2.0 * n ** 3 / times.median_s(name) / 1e12
                    print(f"   {p} {n}^3 {name:9s} {rate:6.1f} TFLOP/s interleaved, {median:6.1f}% of tc_inner "
                          f"({low:.1f}-{high:.1f})", flush=True)
                del problems


if __name__ == "__main__":
    main()
