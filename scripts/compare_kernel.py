"""Time a registry kernel against another version of its source in one process, rounds interleaved.

For "no speed lost" claims: the old version of a kernel file (e.g. `git show HEAD~1:kernels/07_fast.cu`)
and the current one, same operands, same reference, alternating (and swapping who goes first) so that
clock and thermal drift hit both alike. Prints a table and writes JSON.

    python scripts/compare_kernel.py fast /tmp/07_fast_old.cu --sizes 4096 8192 --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import replace
from pathlib import Path

from gemmlab.gemm import registry
from gemmlab.measure import bench
from gemmlab.models import tables, verify
from gemmlab.runtime import device
from gemmlab.runtime.compiler import CompileUnit


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("kernel", help="a name gemmlab.gemm.registry.lookup knows")
    p.add_argument("old_source", type=Path, help="the other version of the kernel's .cu file (entry points included)")
    p.add_argument("--function", help="its entry point in old_source (default: the kernel's own)")
    p.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)

    new = registry.lookup(args.kernel)
    old = replace(new, name=f"{args.kernel} (old)", source=CompileUnit(args.old_source.resolve()),
                  function=args.function or new.function)
    rows, data = [], []
    for n in args.sizes:
        A, B = verify.random_operands(n, n, n, seed=n)
        ref = verify.Reference(A, B)
        times: dict[str, list[float]] = {new.name: [], old.name: []}
        for i in range(args.rounds):
            for k in ((new, old) if i % 2 == 0 else (old, new)):      # alternate who goes first
                r = bench.time_gemm(k, A, B, args.repeat, ref)
                assert r.correct, f"{k.name} is wrong at {n}^3"
                times[k.name].append(r.tflops)
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append((f"{n}^3", f"{med[new.name]:.2f}", f"{med[old.name]:.2f}", f"{med[new.name] / med[old.name] - 1:+.2%}",
                     " ".join(f"{t:.2f}" for t in times[new.name]), " ".join(f"{t:.2f}" for t in times[old.name])))
        data.append({"size": n, "new_tflops": times[new.name], "old_tflops": times[old.name]})
    print(tables.table(rows, ["size", "new TFLOP/s", "old TFLOP/s", "new vs old", "new, each round", "old, each round"]))
    if args.json:
        args.json.write_text(json.dumps({"device": device.current().name, "kernel": args.kernel,
                                         "function": new.function, "rounds": data}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
