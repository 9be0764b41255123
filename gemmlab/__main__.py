"""Command line: ``python -m gemmlab bench`` (the ladder), ``info`` (the device) and ``run`` (one kernel, for profilers)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .runtime import gpu

PRECISION_CHOICES = ("FP32", "TF32", "FP16", "BF16")


def _size(text: str) -> tuple[int, int, int]:
    parts = [int(p) for p in text.lower().replace("x", " ").split()]
    if len(parts) == 1:
        parts *= 3
    if len(parts) != 3 or min(parts) < 1:
        raise argparse.ArgumentTypeError(f"size {text!r} must be N or MxNxK with positive integers")
    M, N, K = parts
    return M, N, K


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive integer")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gemmlab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("bench", help="every course kernel and cuBLAS at several sizes, in one input format or all")
    b.add_argument("--sizes", nargs="+", type=_size, default=None,
                   help="N (for NxNxN) or MxNxK; default 1024 2048 4096 8192 3000x5000x1234")
    b.add_argument("--kernels", nargs="+", default=None,
                   help="only these kernels (names from gemmlab.kernels(), or registry.by_precision(precision))")
    b.add_argument("--precision", choices=[*PRECISION_CHOICES, "all"], default="FP32",
                   help="FP32: chapters 1-7 against cuBLAS FP32 (the default); TF32, FP16, BF16: chapter 8's tensor-core "
                        "kernels (and, for FP16 and BF16 on a Hopper GPU, chapter 9's) against cuBLAS in that format; "
                        "all: each in turn, in one JSON")
    b.add_argument("--repeat", type=_positive, default=5, help="timings per kernel and size, of which the median counts")
    b.add_argument("--interleaved", action="store_true",
                   help="time the kernels and cuBLAS of each size against each other in alternating blocks, so that "
                        "all see the same clocks (a GPU under its power cap moves them); the JSON says which timing")
    b.add_argument("--json", type=Path, default=Path("results/bench.json"), help="where to write the JSON")
    sub.add_parser("info", help="the device's properties, and its tensor cores' measured mma.sync ceilings")
    r = sub.add_parser("run", help="run one GEMM kernel once on random operands and check it (for profilers)")
    r.add_argument("kernel", help="a name from gemmlab.gemm.registry.known()")
    r.add_argument("size", type=_size, help="N or MxNxK")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--extra-shared", type=int, default=0, help="unused dynamic shared memory per block, in bytes")
    args = parser.parse_args(argv)
    if args.command == "bench" and args.sizes:
        from .measure.bench import distinct_sizes     # refused here, before anything touches the GPU
        try:
            distinct_sizes(args.sizes)
        except ValueError as e:
            b.error(str(e))

    from .gemm import registry
    chosen: tuple[str, ...] = ("FP32",)
    if args.command == "bench":
        chosen = PRECISION_CHOICES if args.precision == "all" else (args.precision,)
    if args.command == "run":
        known = registry.known()
    else:
        known = {n: k for p in chosen for n, k in registry.by_precision(p).items()}
    asked = [args.kernel] if args.command == "run" else (args.kernels or []) if args.command == "bench" else []
    unknown = [k for k in asked if k not in known]
    if unknown:                     # a typo is answered before anything looks for a GPU
        what = "GEMM kernel" if args.command == "run" else "course kernel"
        print(f"gemmlab: no {what} named {', '.join(unknown)}; choose from {', '.join(known)}", file=sys.stderr)
        return 2
    try:
        gpu.cuda()
        if args.command == "info":
            from .models import tables
            from .runtime import device
            spec = device.current()
            print(tables.table(device.properties_table(spec), ["property", "value"], ["<", "<"]))
            from .measure import ceilings
            rows = [(c.what, f"{c.measured:,.1f} {c.unit}", f"{c.derived:,.1f}" if c.derived == c.derived else "-", c.detail)
                    for c in ceilings.tensor()]
            if rows:
                print()
                print(tables.table(rows, ["tensor cores (mma.sync)", "measured", "peak from the datasheet rate", "probe"],
                                   ["<", ">", ">", "<"]))
            return 0
        if args.command == "run":
            from .models import verify
            M, N, K = args.size
            A, B = verify.random_operands(M, N, K, args.seed)
            kernel = known[args.kernel]
            verdict = kernel.reference(A, B).check(kernel(A, B, extra_shared=args.extra_shared))
            print(f"{args.kernel} {M}x{N}x{K}: {verdict}")
            return 0 if verdict.ok else 1
        from .measure import bench, ceilings, precisions
        sizes = args.sizes or bench.DEFAULT_SIZES
        results = []
        for p in chosen:
            names = None if args.kernels is None else [n for n in args.kernels if n in registry.by_precision(p)]
            if names == []:
                continue
            results += precisions.ladder(sizes, p, names, args.repeat, progress=lambda line: print(line, file=sys.stderr),
                                         interleave=args.interleaved)
        tensor = [p for p in chosen if p != "FP32"]
        # the ceilings, measured in the ladder's run: the FMA probe's (FP32), mma.sync's
        fp32 = ceilings.fma_throughput()[0] / 1e12 if "FP32" in chosen else None
        data = bench.to_json(results, {c.what.split()[0]: c.measured for c in ceilings.tensor(tensor)} if tensor else None,
                             interleaved=args.interleaved, fp32_ceiling=fp32)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(data, indent=2) + "\n")
        print(f"wrote {args.json}")
        return 0 if all(r.correct for r in results) else 1
    except gpu.GPUUnavailable as exc:
        print(f"gemmlab: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
