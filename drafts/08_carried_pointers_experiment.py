# Chapter 8's last step (tc_inner) spent 8.5% of its warp-stall samples on one instruction: the LOP3 just after a
# tile's cp.async copies, which overwrote a register a copy still had to read its address from (long scoreboard;
# results/ncu-h200-tc-inner-source-4096.csv). The copies' addresses were temporaries, recomputed per tile from k0 and
# the stage. Three variants were measured on 2026-12-02 (results/carried-pointers-h200.txt):
#   global  the two source pointers (A's and B's) advance by one K-tile per issued tile: 102.5-102.9% of tc_inner,
#           and since then the kernel itself (kernels/08_tensor_core.cu, pa_k and pb_k); this draft no longer builds it
#   both    and the two shared-memory destinations rotate through the ring's stages: 102.7-103.2%, within the
#           quartiles of global; generated here on top of the kernel as it is now
#   split   a block inside C runs the K-tiles whose next copy is a whole inner K-tile in a loop of their own, compiled
#           without the bounds check and the checked copies (the tile step a generic lambda instantiated twice), then
#           the rest in the chapter's loop: 95.7-95.9%
# Each checked at awkward sizes, then timed interleaved against tc_inner at 8192^3 and 4096^3, FP16 and BF16.
# Compiled here: registers and spills (--compile), and in the SASS of the main loop the distance from each copy to
# the next instruction that overwrites one of its address registers. Run on a GPU of sm_80 or later:
#   timeout 200 python3 drafts/08_carried_pointers_experiment.py [--compile]
import argparse, re, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gemmlab import compile_units, compiler, gpu, tc_configs
from drafts.variants import CHECK_SIZES, TC_INNER, check_and_time, tc_inner_units, tc_inner_variants

LAMBDA = "    auto load_tile = [&](int kt, int stage, int part, int parts) {\n"
CARRIED_SHARED = ("    unsigned char* a_sm = smem + a_dst;    // carried: the next tile's destinations in the ring\n"
                  "    unsigned char* b_sm = smem + BM * A_ROW + b_dst;\n")
A_COPY = "copy16<ASYNC>(as + a_dst + q * A_STEP * A_ROW, pa + q * a_step, true);"
B_COPY = "copy16<ASYNC>(bs + b_dst + (q - A_PER) * B_STEP * B_ROW, pb + (q - A_PER) * b_step, true);"
RETURN = ("            }\n"
          "            return;\n")
ROTATE = ("            }\n"
          "            if (part == parts - 1) {\n"
          "                const bool wrap = a_sm + STAGE >= smem + RING * STAGE;\n"
          "                a_sm = wrap ? a_sm + STAGE - RING * STAGE : a_sm + STAGE;\n"
          "                b_sm = wrap ? b_sm + STAGE - RING * STAGE : b_sm + STAGE;\n"
          "            }\n"
          "            return;\n")
SPLIT = [
    ("#include <stdint.h>\n", "#include <stdint.h>\n#include <type_traits>\n"),
    ("    auto load_tile = [&](int kt, int stage, int part, int parts) {\n",
     "    auto load_tile = [&](int kt, int stage, int part, int parts, auto fast) {\n"),
    ("if (inner && k0 + BK <= K) {\n", "if (decltype(fast)::value || (inner && k0 + BK <= K)) {\n"),
    ("            load_tile(s, s, 0, 1);\n", "            load_tile(s, s, 0, 1, std::false_type{});\n"),
    ("                load_tile(next, next % RING, 0, 1);\n", "                load_tile(next, next % RING, 0, 1, std::false_type{});\n"),
    ("        for (int kt = 0; kt < tiles; ++kt) {\n"
     "            const int next = kt + RING - 1;\n"
     "#pragma unroll\n"
     "            for (int kk = 0; kk < KSTEPS; ++kk) {\n"
     "                if (SPREAD || kk == 0) {\n"
     "                    if (next < tiles)\n"
     "                        load_tile(next, next % RING, SPREAD ? kk : 0, SPREAD ? KSTEPS : 1);\n",
     "        auto tile_step = [&](int kt, auto fast) {\n"
     "            const int next = kt + RING - 1;\n"
     "#pragma unroll\n"
     "            for (int kk = 0; kk < KSTEPS; ++kk) {\n"
     "                if (SPREAD || kk == 0) {\n"
     "                    if (decltype(fast)::value || next < tiles)\n"
     "                        load_tile(next, next % RING, SPREAD ? kk : 0, SPREAD ? KSTEPS : 1, fast);\n"),
    ("                mma_all(kk % 2);\n            }\n        }\n    }\n    // [/pipeline]\n",
     "                mma_all(kk % 2);\n            }\n        };\n"
     "        const int fast_end = inner ? max(0, K / BK - (RING - 1)) : 0;   // the next copy a whole inner K-tile\n"
     "        int kt = 0;\n"
     "        for (; kt < fast_end; ++kt)\n"
     "            tile_step(kt, std::true_type{});\n"
     "        for (; kt < tiles; ++kt)\n"
     "            tile_step(kt, std::false_type{});\n"
     "    }\n    // [/pipeline]\n"),
]
VARIANTS = {
    "both": [(LAMBDA, CARRIED_SHARED + LAMBDA), (A_COPY, A_COPY.replace("as + a_dst", "a_sm")),
             (B_COPY, B_COPY.replace("bs + b_dst", "b_sm")), (RETURN, ROTATE)],
    "split": SPLIT,
}


def reuse_distances(sass: str) -> list[tuple[int, list]]:
    """For each main loop (the body of a backward branch with 32 or more HMMA): its length in instructions, and for
    each LDGSTS the number of instructions executed until one overwrites a register its addresses are read from
    (None where none does before the loop ends). A branch under the copy's own predicate is followed, as the copy's
    path takes it (the unchecked copies jump over the checked ones)."""
    lines = [ln for ln in sass.splitlines() if re.search(r"/\*[0-9a-f]{4}\*/", ln)]
    addr = [int(re.search(r"/\*([0-9a-f]+)\*/", ln).group(1), 16) for ln in lines]
    code = [re.sub(r"^\s*/\*[0-9a-f]+\*/\s*", "", ln).split(";")[0].strip() for ln in lines]
    loops = []
    for back, c in enumerate(code):
        if "BRA" not in c or int(c.split("0x")[-1], 16) >= addr[back]:
            continue
        start = addr.index(int(c.split("0x")[-1], 16))
        if sum("HMMA" in x for x in code[start:back + 1]) < 32:
            continue
        out = []
        for i in range(start, back + 1):
            if "LDGSTS" not in code[i]:
                continue
            pred = re.match(r"(@!?P\d)\s", code[i])
            regs = set(re.findall(r"\bR(\d+)", code[i].split("LDGSTS", 1)[1]))
            regs |= {str(int(r) + 1) for r in re.findall(r"\bR(\d+)\.64", code[i])}
            dist, j, steps = None, i + 1, 0
            while j <= back and dist is None:
                steps += 1
                op = code[j]
                if "BRA" in op and pred and op.startswith(pred.group(1) + " "):
                    j = addr.index(int(op.split("0x")[-1], 16))
                    continue
                bare = re.sub(r"^@!?U?P\w+\s+", "", op)
                dest = re.match(r"[A-Z0-9_.]+\s+R(\d+)", bare)
                if dest and not bare.startswith(("LDGSTS", "STG", "STS", "BRA")) and dest.group(1) in regs:
                    dist = steps
                j += 1
            out.append(dist)
        loops.append((back - start + 1, out))
    return loops


def compile_report():
    with tempfile.TemporaryDirectory() as tmp:
        us = {"tc_inner": compile_units.unit(tc_configs.SOURCE), **tc_inner_units(Path(tmp), VARIANTS)}
        for name, unit in us.items():
            fns = [f"{TC_INNER.function}_{tc_configs.SUFFIXES[p]}" for p in ("FP16", "BF16")]
            report = {e.function: e for e in compiler.ptxas_report(unit.text, "sm_90", unit.options)}
            sass = compiler.offline_sass(unit, "sm_90", fns[1:])[fns[1]]
            print(f"{name:9s} " + ", ".join(f"{f[-4:]}: {report[f].registers} registers, {report[f].spill_store_bytes} "
                                             f"bytes spilled" for f in fns)
                  + "; main loops (BF16): " + "; ".join(f"{n} instructions, copies to the next overwrite of an "
                                                       f"address register {d}" for n, d in reuse_distances(sass)))


def main():
    gpu.cuda()
    with tempfile.TemporaryDirectory() as tmp:
        us = tc_inner_units(Path(tmp), VARIANTS)
        for p in ("FP16", "BF16"):
            check_and_time(tc_inner_variants(us, p), p, CHECK_SIZES + ((4096, 4096, 4096),))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--compile", action="store_true", help="registers, spills and SASS address reuse, no GPU")
    compile_report() if parser.parse_args().compile else main()
