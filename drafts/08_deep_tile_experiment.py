# Issue #17: chapter 8's loop spends its time on the copies, by their number (results/copy-path-h200.txt: half as many
# 16-byte copies made the loop 4.5% faster), and on what each 32-deep tile costs besides: a barrier, a wait, a
# commit, the stage indices and the carried pointers' steps. A 64-deep tile issues as many copies per FLOP but those
# per-tile costs half as often. The chapter tried 64-deep tiles once, in three stages, before the inner tiles'
# unchecked copies and carried pointers, and they lost 11.1% to tc_wide (the "tried" table). Here they are tried
# again on top of tc_inner's configuration (INNER: unchecked copies from carried pointers), in three stages (144 KiB
# of shared memory) and in four (192 KiB), and beside them tc_inner's tile turned round (256 x 128, which came within
# 0.5% of tc_wide in the tried table): each checked at awkward sizes, then timed interleaved against tc_inner at
# 8192^3 and 4096^3, FP16 and BF16. Nothing here is in tc_configs.CONFIGS: the entry points are generated per run.
# Compiled here (--compile): registers and spills. On a GPU (about 90 s):
#   timeout 300 python3 drafts/08_deep_tile_experiment.py [--compile]
import argparse, sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gemmlab import compile_units, compiler, gpu, tc_configs, tensor_gemm
from drafts.variants import CHECK_SIZES, TC_INNER, check_and_time

VARIANTS = {
    "deep_s3": replace(TC_INNER, BK=64, STAGES=3),
    "deep_s4": replace(TC_INNER, BK=64, STAGES=4),
    "turned": replace(TC_INNER, BM=256, BN=128),
}
"""tc_inner's configuration (FP16 and BF16) with 64-deep tiles in 3 or 4 stages, or its block tile turned round."""


def unit(config) -> compile_units.CompileUnit:
    """Chapter 8's kernel file with only ``config``'s entry points appended."""
    return compile_units.CompileUnit(ROOT / "kernels" / tc_configs.SOURCE, tc_configs.entry_points((config,)))


def compile_report() -> None:
    for name, config in VARIANTS.items():
        problems = config.problems()
        if problems:
            print(f"{name}: {'; '.join(problems)}")
            continue
        u = unit(config)
        report = {e.function: e for e in compiler.ptxas_report(u.text, "sm_90", u.options)}
        f = f"{config.function}_f16"
        print(f"{name} ({config.function}): {report[f].registers} registers, {report[f].spill_store_bytes} bytes "
              f"spilled, {config.shared_bytes('FP16') // 1024} KiB of shared memory", flush=True)


def main() -> None:
    gpu.cuda()
    from gemmlab import registry
    for p in ("FP16", "BF16"):
        kernels = {"tc_inner": registry.lookup(f"tc_inner_{tc_configs.SUFFIXES[p]}")}
        kernels.update({name: replace(tensor_gemm.mma_kernel(config, p, f"tc_inner_{name}"), source=unit(config))
                        for name, config in VARIANTS.items()})
        check_and_time(kernels, p, CHECK_SIZES + ((1024, 1024, 96),))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--compile", action="store_true", help="registers and spills, no GPU")
    compile_report() if parser.parse_args().compile else main()
