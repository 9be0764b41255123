"""Command line: ``python -m gemmlab bench`` (the ladder), ``info`` (the device) and ``run`` (one kernel, for profilers)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import gpu


def _size(text: str) -> tuple[int, int, int]:
    parts = [int(p) for p in text.lower().replace("x", " ").split()]
    if len(parts) == 1:
        parts *= 3
    if len(parts) != 3 or min(parts) < 1:
        raise argparse.ArgumentTypeError(f"size {text!r} must be N or MxNxK with positive integers")
    return tuple(parts)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gemmlab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("bench", help="every course kernel and cuBLAS FP32 at several sizes")
    b.add_argument("--sizes", nargs="+", type=_size, default=None,
                   help="N (for NxNxN) or MxNxK; default 1024 2048 4096 8192 3000x5000x1234")
    b.add_argument("--kernels", nargs="+", default=None, help="only these kernels (names from gemmlab.kernels())")
    b.add_argument("--repeat", type=int, default=5)
    b.add_argument("--json", type=Path, default=Path("results/bench.json"), help="where to write the JSON")
    sub.add_parser("info", help="the device's properties and derived ceilings")
    r = sub.add_parser("run", help="run one GEMM kernel once on random operands and check it (for profilers)")
    r.add_argument("kernel", help="a name from gemmlab.registry.known()")
    r.add_argument("size", type=_size, help="N or MxNxK")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--extra-shared", type=int, default=0, help="unused dynamic shared memory per block, in bytes")
    args = parser.parse_args(argv)

    from . import registry
    known = registry.known() if args.command == "run" else registry.kernels()
    asked = [args.kernel] if args.command == "run" else (args.kernels or []) if args.command == "bench" else []
    unknown = [k for k in asked if k not in known]
    if unknown:                     # a typo is answered before anything looks for a GPU
        what = "GEMM kernel" if args.command == "run" else "course kernel"
        print(f"gemmlab: no {what} named {', '.join(unknown)}; choose from {', '.join(known)}", file=sys.stderr)
        return 2
    try:
        gpu.cuda()
        if args.command == "info":
            from . import device, tables
            spec = device.current()
            print(tables.table(device.properties_table(spec), ["property", "value"], ["<", "<"]))
            return 0
        if args.command == "run":
            from . import verify
            M, N, K = args.size
            A, B = verify.random_operands(M, N, K, args.seed)
            verdict = verify.check(known[args.kernel](A, B, extra_shared=args.extra_shared), A, B)
            print(f"{args.kernel} {M}x{N}x{K}: {verdict}")
            return 0 if verdict.ok else 1
        from . import bench
        sizes = args.sizes or bench.DEFAULT_SIZES
        results = bench.ladder(sizes, args.kernels, args.repeat)
        data = bench.to_json(results)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(data, indent=2) + "\n")
        print(f"wrote {args.json}")
        return 0 if all(r.correct for r in results) else 1
    except gpu.GPUUnavailable as exc:
        print(f"gemmlab: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
