# Issue #18: what cuBLAS's kernel and chapter 9's last step execute, from Nsight Compute's source pages
# (drafts/09_cublas_sass.sh writes them: the SASS of one launch at 4096^3 with each instruction's executions and warp
# samples). Prints, per kernel, the instructions that say how it multiplies, waits and stores: how many sit in the
# code, how often warps executed them per tile of C, and their share of the warps' stall samples; then how often a
# consumer's first try_wait for a full stage failed (the retry loops after it). Only counts are printed, no code.
#   python3 drafts/09_sass_summary.py nvjet-4096-sass.csv tmastore-4096-sass.csv
import collections, csv, re, sys

TILES = 512                       # 4096^3 in tiles of 128 x 256 (cuBLAS's 256 x 128 in its column-major terms)
KEEP = re.compile(r"^(HGMMA|WARPGROUP|STS|STSM|STG|UTMASTG|UTMALDG|UTMACMDFLUSH|FENCE|MEMBAR|BAR|SYNCS|NANOSLEEP|"
                  r"DEPBAR|UCGABAR|LDS)")


def rows(path):
    table = list(csv.reader(open(path, newline="")))
    name, header = table[0][1], table[1]
    return name, [dict(zip(header, r)) for r in table[2:] if len(r) >= len(header)]


def opcode(source: str) -> str:
    text = re.sub(r"^@!?U?P\w+\s+", "", source.strip())
    op = text.split()[0] if text else ""
    if op.startswith("HGMMA"):                            # the shape, not the operands
        return op
    return op.rstrip(",")


def summary(path) -> None:
    name, table = rows(path)
    static, executed, samples = collections.Counter(), collections.Counter(), collections.Counter()
    for r in table:
        op = opcode(r["Source"])
        static[op] += 1
        executed[op] += int(r["Instructions Executed"] or 0)
        samples[op] += int(r["Warp Stall Sampling (All Samples)"] or 0)
    total = sum(samples.values())
    print(f"{name}: {len(table)} instructions, {total} warp samples")
    print(f"   {'instruction':42s} {'in code':>7s} {'per tile':>9s} {'samples':>8s}")
    for op in sorted((o for o in static if KEEP.match(o)), key=lambda o: -executed[o]):
        print(f"   {op:42s} {static[op]:7d} {executed[op] / TILES:9.1f} {100 * samples[op] / total:7.2f}%")
    # A consumer's wait for a full stage: the first try_wait of each K-tile, then a loop of retries that only runs
    # when it failed. Retry loops are the try_waits executed less often than once per K-tile and warp.
    waits = [(int(r["Instructions Executed"] or 0), r["Source"].strip()) for r in table if "TRYWAIT" in r["Source"]]
    print("   try_wait executions (each line one try_wait in the code):", ", ".join(f"{n:,}" for n, _ in waits))
    print()


if __name__ == "__main__":
    for p in sys.argv[1:]:
        summary(p)
