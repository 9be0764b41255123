"""The GEMM ladder: every course kernel against cuBLAS FP32, checked, then timed.

``python -m gemmlab bench`` prints the ladder (every kernel and cuBLAS FP32 at several sizes)
and writes it as JSON. Kernels are timed with CUDA events (:mod:`gemmlab.runtime.timing`) on device
buffers (:meth:`gemmlab.gemm.base.GemmKernel.on_device`, the same path as a call), so host copies are
not in the times. Each result is checked against the reference first; a wrong one is marked
``correct: false`` in the ladder and makes the command exit 1.
"""

from __future__ import annotations

import os
import time
from datetime import datetime, timezone
from dataclasses import asdict, dataclass, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from ..gemm import registry
from ..gemm.base import GemmKernel
from ..models import traffic, verify
from ..runtime import device, environment, gpu, timing


@dataclass(frozen=True)
class GemmResult:
    kernel: str
    M: int
    N: int
    K: int
    seconds: float
    tflops: float
    gbps: float          # compulsory traffic (read A and B once, write C once) over the time
    correct: bool
    precision: str = "FP32"     # what the products are computed from: FP32, or chapter 8's TF32, FP16, BF16
    share_of_cublas: tuple[float, float, float] | None = None   # interleaved: per-round ratio (median, quartiles)


def _result(name: str, M: int, N: int, K: int, seconds: float, correct: bool, precision: str = "FP32") -> GemmResult:
    return GemmResult(name, M, N, K, seconds, traffic.gemm_flops(M, N, K) / seconds / 1e12,
                      traffic.compulsory_bytes(M, N, K) / seconds / 1e9, correct, precision)


@dataclass(frozen=True)
class Prepared:
    """A GEMM ready to be timed: its operands on the device, one launch already checked; ``run`` enqueues another."""

    name: str
    M: int
    N: int
    K: int
    run: Callable[[], object]
    correct: bool
    precision: str = "FP32"

    def result(self, seconds: float) -> GemmResult:
        return _result(self.name, self.M, self.N, self.K, seconds, self.correct, self.precision)

    def timed(self, repeat: int = 5) -> GemmResult:
        """Its row of the ladder, timed on its own: the median of ``repeat`` timings (:func:`gemmlab.runtime.timing.time_gpu`)."""
        return self.result(timing.time_gpu(self.run, warmup=1, repeat=repeat).median_s)


def prepare_gemm(kernel: GemmKernel, A: np.ndarray, B: np.ndarray, reference: verify.Reference | None = None,
                 extra_shared: int = 0) -> Prepared:
    """``kernel`` on (A, B) on the device, launched once and checked (against ``reference`` if given, to share one
    across kernels of the same input format; else against :meth:`~gemmlab.gemm.base.GemmKernel.reference`), with
    ``extra_shared`` unused bytes of dynamic shared memory per block."""
    problem = kernel.on_device(A, B, extra_shared)
    problem.launch()
    ok = (reference or kernel.reference(A, B)).check(problem.result()).ok
    return Prepared(kernel.name, problem.M, problem.N, problem.K, problem.launch, ok, kernel.input_precision)


def time_gemm(kernel: GemmKernel, A: np.ndarray, B: np.ndarray, repeat: int = 5,
              reference: verify.Reference | None = None, extra_shared: int = 0) -> GemmResult:
    """Check ``kernel`` on (A, B) (:func:`prepare_gemm`), then time it on the same device buffers."""
    return prepare_gemm(kernel, A, B, reference, extra_shared).timed(repeat)


#: What a cell says, once, where CuPy (and so the cuBLAS baseline) is missing.
NO_CUBLAS = ("CuPy is not installed here, so this machine has no cuBLAS baseline: the shares of cuBLAS read '-' "
             "(the stored outputs show the H200's cuBLAS).")
_said: set[str] = set()


def _say_once(sentence: str) -> None:
    if sentence not in _said:
        _said.add(sentence)
        print(sentence)


def cupy_or_none() -> Any:
    """CuPy with TF32 off (so cuBLAS computes in true FP32), or None where it is not installed."""
    os.environ.setdefault("CUPY_TF32", "0")
    try:
        import cupy
    except ImportError:
        return None
    return cupy


def prepare_cublas(A: np.ndarray, B: np.ndarray, reference: verify.Reference | None = None) -> Prepared | None:
    """cuBLAS SGEMM through CuPy's matmul, in this process and context, run once and checked; None without CuPy
    (and :data:`NO_CUBLAS` printed, once per process)."""
    gpu.cuda()
    cp = cupy_or_none()
    if cp is None:
        _say_once(NO_CUBLAS)
        return None
    M, K = A.shape
    N = B.shape[1]
    a, b = cp.asarray(A), cp.asarray(B)
    c = cp.matmul(a, b)
    cp.cuda.Device().synchronize()
    ok = (reference or verify.Reference(A, B)).check(cp.asnumpy(c)).ok
    return Prepared("cuBLAS", M, N, K, lambda: cp.matmul(a, b, out=c), ok)


def time_cublas(A: np.ndarray, B: np.ndarray, repeat: int = 5, reference: verify.Reference | None = None) -> GemmResult | None:
    """cuBLAS SGEMM (:func:`prepare_cublas`), timed; None without CuPy."""
    p = prepare_cublas(A, B, reference)
    return None if p is None else p.timed(repeat)


def fraction_of_cublas(result: GemmResult, cublas_tflops: float | None) -> float | None:
    """``result``'s share of cuBLAS's rate: for an interleaved result the median of its per-round ratios (each
    round saw one clock), otherwise the ratio of the two rates; None where there is neither."""
    if result.share_of_cublas:
        return result.share_of_cublas[0]
    return result.tflops / cublas_tflops if cublas_tflops else None


def of_cublas(result: GemmResult, cublas: GemmResult | None) -> str:
    """``result``'s share of the cuBLAS result as ``"92.3%"`` (:func:`fraction_of_cublas`, as the JSON gives it), or
    ``"-"`` where there is no cuBLAS."""
    return f"{fraction_of_cublas(result, cublas.tflops):.1%}" if cublas else "-"


def sweep(names: Iterable[str], sizes: Iterable[int], repeat: int = 5, cublas: bool = True) -> dict[str, list[GemmResult]]:
    """Each named kernel (and cuBLAS) at each square size n: ``{name: [result per size]}``."""
    gpu.cuda()
    table: dict[str, list[GemmResult]] = {name: [] for name in names}
    if cublas and cupy_or_none() is not None:
        table["cuBLAS"] = []
    elif cublas:
        _say_once(NO_CUBLAS)
    for n in sizes:
        A, B = verify.random_operands(n, n, n, seed=n)
        ref = verify.Reference(A, B)
        for name in names:
            table[name].append(time_gemm(registry.lookup(name), A, B, repeat, ref))
        if "cuBLAS" in table:
            cublas_result = time_cublas(A, B, repeat, ref)
            assert cublas_result is not None        # CuPy was found above
            table["cuBLAS"].append(cublas_result)
    return table


# The ladder of chapter 7: four squares and one shape that is neither square nor a multiple of any tile.
DEFAULT_SIZES = ((1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (3000, 5000, 1234))


def distinct_sizes(sizes: Iterable[Sequence[int]]) -> list[tuple[int, int, int]]:
    """``sizes`` as (M, N, K) tuples, refused (``ValueError``) where one is given twice: a ladder's results, and each
    kernel's share of cuBLAS in the JSON, are keyed by size, so a size given twice would mix two runs' cuBLAS."""
    triples = [(M, N, K) for M, N, K in sizes]
    twice = sorted({s for s in triples if triples.count(s) > 1})
    if twice:
        raise ValueError(f"size {', '.join('x'.join(map(str, s)) for s in twice)} given twice; "
                         "for more timings of one size use --repeat (repeat=)")
    return triples


def ladder(sizes: Iterable[Sequence[int]] = DEFAULT_SIZES, names: Iterable[str] | None = None, repeat: int = 5,
           log: Callable[[str], object] = print, progress: Callable[[str], object] | None = None, *,
           kernels: Mapping[str, GemmKernel] | None = None,
           reference: Callable[[np.ndarray, np.ndarray], verify.Reference] = verify.Reference,
           cublas: Callable[[np.ndarray, np.ndarray, verify.Reference], Prepared | None] | None = None,
           label: str = "", interleave: bool = False) -> list[GemmResult]:
    """Every course kernel (or those named) and cuBLAS at each (M, N, K): ``log`` gets one line per
    result, ``progress`` (if given) one line per size, with the seconds it took. Another ladder (chapter 8's,
    :func:`gemmlab.measure.precisions.ladder`) passes its ``kernels`` (``{name: kernel}``), the ``reference(A, B)`` they
    are checked against, its ``cublas(A, B, reference)`` (a :class:`Prepared` or None, as :func:`prepare_cublas`)
    and a ``label`` for the names and lines.

    Each kernel is timed on its own (``repeat`` timings, the median) unless ``interleave``: then, size by size, all
    of them and cuBLAS are prepared first and timed against each other in alternating blocks
    (:func:`gemmlab.runtime.timing.interleaved`), so that they see the same clocks, and each time is the median of the rounds;
    each result's ``share_of_cublas`` is then the median and quartiles of its per-round ratios to cuBLAS."""
    triples = distinct_sizes(sizes)
    every = registry.kernels() if kernels is None else kernels
    wanted = None if names is None else set(names)
    unknown = sorted((wanted or set()) - set(every))
    if unknown:
        raise ValueError(f"no {label or 'course'} kernel named {', '.join(unknown)}; choose from {', '.join(every)}")
    gpu.cuda()
    chosen = [k for n, k in every.items() if wanted is None or n in wanted]
    results = []
    prepare_baseline = cublas or prepare_cublas
    for i, (M, N, K) in enumerate(triples, 1):
        start = time.monotonic()
        A, B = verify.random_operands(M, N, K, seed=M + N + K)
        ref = reference(A, B)
        if interleave:
            ready = [prepare_gemm(k, A, B, ref) for k in chosen]
            base = prepare_baseline(A, B, ref)
            ready += [base] if base is not None else []
            times = timing.interleaved({p.name: p.run for p in ready})
            timed = [p.result(times.median_s(p.name)) for p in ready]
            if base is not None:          # each round's ratio saw one clock: their median and quartiles
                timed = [replace(r, share_of_cublas=_fractions(times.ratio(p.name, base.name)))
                         for p, r in zip(ready, timed)]
            del ready                           # this size's device buffers go before the next size's are made
            for r in timed:
                log(format_row(r))
        else:
            timed = []
            for k in chosen:
                timed.append(time_gemm(k, A, B, repeat, ref))
                log(format_row(timed[-1]))
            base = prepare_baseline(A, B, ref)
            if base is not None:
                timed.append(base.timed(repeat))
                log(format_row(timed[-1]))
        results += timed
        if progress:
            progress(f"{label + ' ' if label else ''}size {i} of {len(triples)}, {M}x{N}x{K}: {len(chosen)} kernels"
                     f"{' and cuBLAS' if base else ''} checked and timed in {time.monotonic() - start:.0f} s"
                     f"{' (interleaved)' if interleave else ''}")
    return results


def _fractions(percentages: tuple[float, float, float]) -> tuple[float, float, float]:
    median, low, high = percentages
    return median / 100, low / 100, high / 100


def format_row(r: GemmResult) -> str:
    mark = "" if r.correct else "  WRONG RESULT"
    what = r.kernel if r.precision == "FP32" else f"{r.kernel} [{r.precision}]"
    return f"{what:>10}  {r.M:>6}x{r.N:<6}x{r.K:<6} {r.seconds * 1e3:10.3f} ms {r.tflops:8.2f} TFLOP/s{mark}"


def to_json(results: list[GemmResult], mma_ceilings: dict[str, float] | None = None,
            interleaved: bool = False, fp32_ceiling: float | None = None) -> dict:
    """The ladder with each kernel's share of cuBLAS in the same precision at the same
    size, the device it ran on and the day (``date``, UTC). FP32 rows also give their
    share of the FP32 peak derived from the clocks and, where ``fp32_ceiling``
    (TFLOP/s, the FMA probe's) is given, of that measured ceiling
    (``fp32_ceiling_tflops``); tensor-core rows their share of the measured
    ``mma.sync`` ceiling of their format, where ``mma_ceilings`` (TFLOP/s by format)
    has it.
    ``timing`` says how the times were taken: each kernel on its own, or ``interleaved`` (:func:`ladder`); then a
    row's share of cuBLAS is the median of its per-round ratios, with their quartiles
    (``fraction_of_cublas_quartiles``), rather than the ratio of the two medians."""
    spec = device.current()
    base = {(r.M, r.N, r.K, r.precision): r.tflops for r in results if r.kernel == "cuBLAS"}
    ceilings = mma_ceilings or {}
    rows = []
    for r in results:
        row = asdict(r)
        ref = base.get((r.M, r.N, r.K, r.precision))
        share = row.pop("share_of_cublas")
        row["fraction_of_cublas"] = fraction_of_cublas(r, ref)
        if share:
            row["fraction_of_cublas_quartiles"] = [share[1], share[2]]
        row["fraction_of_fp32_peak"] = r.tflops * 1e12 / device.peak_fp32_flops(spec) if r.precision == "FP32" else None
        if r.precision == "FP32" and fp32_ceiling:
            row["fraction_of_fp32_ceiling"] = r.tflops / fp32_ceiling
        if r.precision != "FP32":
            row["fraction_of_mma_ceiling"] = r.tflops / ceilings[r.precision] if r.precision in ceilings else None
        rows.append(row)
    data: dict[str, Any] = {"device": spec.name, "arch": spec.arch,
                            "date": datetime.now(timezone.utc).date().isoformat(),
                            "cupy_tf32": os.environ.get("CUPY_TF32"),
                            "timing": "interleaved" if interleaved else "separate",
                            "environment": environment.versions(),
                            "mma_ceilings_tflops": ceilings}
    if fp32_ceiling:
        data["fp32_ceiling_tflops"] = fp32_ceiling
    return {**data, "results": rows}
