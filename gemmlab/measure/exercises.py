"""Checking a reader's kernel: compile CUDA source given as text and test it like a course kernel.

Exercise solutions that are kernels call :func:`check_kernel`; it compiles the source for this GPU,
runs it on operands of awkward sizes and compares each result with the float64 reference. Keyword
options add what a chapter's exercise is about:

- ``blocks_per_sm=n`` (chapter 5): the compiled kernel's registers and shared memory must let ``n``
  blocks share an SM (:mod:`gemmlab.models.occupancy`), with nothing spilled to local memory;
- ``faster_than="name", at=(M, N, K)`` (chapter 6): the kernel must beat the named course kernel,
  both timed with CUDA events on the same operands;
- ``conflict_free=True`` (chapter 4): Nsight Compute counts the kernel's shared-memory bank conflicts;
  where ``ncu`` cannot run, the check says so in one sentence and leaves the verdict to the others;
- ``precision="FP16"`` (or ``"BF16"``, ``"TF32"``; chapter 8): the kernel gets the operands as chapter 8's
  kernels do (:func:`gemmlab.gemm.tensor_cores.device_operands`: rounded, rows padded to 16 bytes, B transposed
  for TF32) and is checked against the product of the rounded inputs.

:func:`resources` shows what ``ptxas`` gave a kernel, for this GPU or any other architecture, with
``nvcc`` alone. Bad arguments and sources that do not compile raise :class:`ExerciseError`, whose
message is one sentence (with nvcc's first error), before anything is launched.
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable, Collection, Iterable, Sequence, SupportsInt

import numpy as np

from ..gemm import checks, registry, tensor_cores
from ..models import limits, occupancy, tables, traffic, verify
from ..runtime import compiler, device, gpu, provenance, timing
from . import nsight

SIZES = ((1, 1, 1), (31, 33, 17), (64, 64, 64), (100, 37, 250), (257, 129, 65))
"""The sizes every kernel solution must get right, among them one element, sizes one off a tile, and K below and above M and N."""

AT = (2048, 2048, 2048)
"""Where ``faster_than`` times the two kernels unless told otherwise, large enough to fill a T4 or an H200."""

CONFLICTS_AT = (1024, 1024, 1024)
"""Where ``conflict_free`` profiles the kernel (chapter 4 profiles its kernels at the same size)."""

MAX_CONFLICTS_PER_INSTRUCTION = 0.5
"""``conflict_free`` passes below this many conflicts (extra wavefronts) per shared load and per shared
store. A conflict in every instruction costs at least 1; the residue that chapter 4 traces to global
data passing through the L1 stays below 0.2 per store on the H200."""


class ExerciseError(ValueError):
    """A kernel solution that cannot be checked: bad arguments, a missing kernel, a source that does
    not compile. The message says why in one sentence."""


# ---------------------------------------------------------------- arguments (no GPU needed)

def _positive_triple(what: str, value: Iterable[SupportsInt]) -> tuple[int, int, int]:
    """``value`` as three positive ints, or an :class:`ExerciseError` that names ``what``."""
    try:
        items = list(value)
        triple = tuple(int(v) for v in items)
    except (TypeError, ValueError):
        raise ExerciseError(f"{what} must be three positive integers, got {value!r}.") from None
    if len(triple) != 3 or min(triple) < 1 or any(isinstance(v, (bool, str)) or int(v) != v for v in items):
        raise ExerciseError(f"{what} must be three positive integers, got {value!r}.")
    return triple


def check_source(source: str, function: str) -> None:
    """The source is text that defines ``function`` as an ``extern "C"`` ``__global__`` kernel, as far
    as reading the text can tell (nvcc has the last word)."""
    if not isinstance(source, str) or not source.strip():
        raise ExerciseError("source must be the kernel's CUDA C++ as a non-empty string.")
    if not isinstance(function, str) or not re.fullmatch(r"[A-Za-z_]\w*", function):
        raise ExerciseError(f"function must be the kernel's name, a C identifier, got {function!r}.")
    if not re.search(rf"__global__[^;{{}}]*?\b{function}\s*\(", source):
        raise ExerciseError(f"the source defines no __global__ function named {function}.")
    if 'extern "C"' not in source:
        raise ExerciseError(f'{function} must be declared extern "C", so that PyCUDA finds it by its plain name.')


def check_arguments(source: str, function: str, block: tuple[int, int, int],
                    grid: Callable[[int, int], tuple[int, int, int]], sizes: Iterable[tuple[int, int, int]] = SIZES, *,
                    faster_than: str | None = None, at: tuple[int, int, int] = AT, blocks_per_sm: int | None = None,
                    precision: str = "FP32") -> None:
    """Every argument of :func:`check_kernel` that can be checked without a GPU; raises :class:`ExerciseError`."""
    check_source(source, function)
    block = _positive_triple("block", block)
    if math.prod(block) > limits.MAX_THREADS_PER_BLOCK:
        raise ExerciseError(f"block {block} has {math.prod(block)} threads; no GPU allows more than "
                            f"{limits.MAX_THREADS_PER_BLOCK} per block.")
    if not callable(grid):
        raise ExerciseError("grid must be a function of (M, N) that returns the grid, e.g. lambda M, N: (-(-N // 32), -(-M // 32), 1).")
    sizes = [_positive_triple("each size", s) for s in sizes]
    if not sizes:
        raise ExerciseError("sizes must hold at least one (M, N, K).")
    for M, N, _ in sizes + ([_positive_triple("at", at)] if faster_than else []):
        _positive_triple(f"grid({M}, {N})", grid(M, N))
    if precision != "FP32" and precision not in tensor_cores.PRECISIONS:
        raise ExerciseError(f"precision must be FP32 or one of {', '.join(tensor_cores.PRECISIONS)}, got {precision!r}.")
    if faster_than is not None and faster_than not in registry.known():
        raise ExerciseError(f"faster_than={faster_than!r} names no course kernel; choose one of {', '.join(registry.named())}.")
    if faster_than is not None and registry.known()[faster_than].input_precision != precision:
        raise ExerciseError(f"faster_than={faster_than!r} multiplies in {registry.known()[faster_than].input_precision}, "
                            f"your kernel in {precision}: compare kernels of one precision.")
    if blocks_per_sm is not None and (isinstance(blocks_per_sm, bool) or not isinstance(blocks_per_sm, int) or blocks_per_sm < 1):
        raise ExerciseError(f"blocks_per_sm must be a positive integer, got {blocks_per_sm!r}.")


# ---------------------------------------------------------------- compiling

_NVCC_ERROR = re.compile(r"\((\d+)\): (?:catastrophic )?error:\s*(.*)")
_TOOL_ERROR = re.compile(r"\b(ptxas|nvlink|nvcc)\s+(?:error|fatal)\s*:\s*(.*)")


def compile_error(stderr: str) -> str:
    """nvcc's complaint as one sentence: its first error, with the source line, and how many more there are."""
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    errors = [l for l in lines if (_NVCC_ERROR.search(l) or _TOOL_ERROR.search(l)) and "detected in the compilation" not in l]
    if not errors:
        last = lines[-1] if lines else "no message"
        return f"nvcc could not compile the kernel: {last.rstrip('.')}."
    m = _NVCC_ERROR.search(errors[0])
    tool = _TOOL_ERROR.search(errors[0])
    if m:
        first = f"line {m[1]}: {m[2]}"
    elif tool:
        first = "{}: {}".format(*tool.groups())
    else:                               # cannot be: every line of errors matches one of the two patterns
        raise AssertionError(f"neither nvcc's nor a tool's error pattern matches {errors[0]!r}")
    more = len(errors) - 1
    return f"nvcc could not compile the kernel: {first.rstrip('.')}" + (f" (and {more} more error{'s' if more > 1 else ''})." if more else ".")


def resources(source: str, function: str, arch: str | None = None) -> compiler.PtxasEntry:
    """What ``ptxas`` gives kernel ``function`` of ``source`` for ``arch`` (``"sm_75"`` for a T4; this GPU's
    by default): registers per thread, spilled bytes, static shared memory. Needs nvcc, not a GPU."""
    check_source(source, function)
    if arch is not None and not re.fullmatch(r"sm_\d+a?", arch):
        raise ExerciseError(f"arch must name a real architecture such as sm_75 or sm_90, got {arch!r}.")
    try:
        entries = compiler.ptxas_report(source, arch or compiler.arch())
    except RuntimeError as exc:
        if isinstance(exc, gpu.GPUUnavailable):
            raise
        raise ExerciseError(compile_error(str(exc))) from None
    found = [e for e in entries if e.function == function]
    if not found:
        raise ExerciseError(f'nvcc compiled no kernel named {function}; declare it extern "C", so that its name is not mangled.')
    return found[0]


def _compile(source: str, function: str) -> Any:     # a pycuda.driver.Function (PyCUDA has no type information)
    """The PyCUDA function ``function`` of ``source``, compiled for this GPU (:func:`gemmlab.runtime.compiler.build`)."""
    drv = gpu.cuda()
    try:
        _, image = compiler.build(source)
    except drv.CompileError as exc:
        raise ExerciseError(compile_error(exc.stderr or str(exc))) from None
    try:
        return drv.module_from_buffer(image).get_function(function)
    except drv.LogicError:
        raise ExerciseError(f'the compiled source has no kernel named {function}; declare it extern "C", so that its name '
                            f'is not mangled.') from None


def _operands(A: np.ndarray, B: np.ndarray, precision: str) -> tuple[np.ndarray, np.ndarray]:
    """A and B as the kernel takes them: FP32 as they are, else as chapter 8's kernels take them."""
    return (A, B) if precision == "FP32" else tensor_cores.device_operands(A, B, precision)


# The kernel is a pycuda.driver.Function and a, b, c are GPUArrays: Any, as PyCUDA has no type information.
def _launch(kernel: Any, block: Sequence[int], grid: Sequence[int], a: Any, b: Any, c: Any, M: int, N: int,
            K: int) -> None:
    kernel(a.gpudata, b.gpudata, c.gpudata, np.int32(M), np.int32(N), np.int32(K), block=tuple(block), grid=tuple(grid))


def launch_once(source: str, function: str, block: Sequence[int], grid: Sequence[int], M: int, N: int, K: int,
                precision: str = "FP32") -> None:
    """Compile ``source`` and run ``function`` once at M x N x K on random operands, with the ``grid``
    given as a tuple: the program Nsight Compute profiles for ``conflict_free``, in a child process."""
    from pycuda import gpuarray

    kernel = _compile(source, function)
    a, b = _operands(*verify.random_operands(M, N, K), precision)
    c = gpuarray.empty((M, N), np.float32)
    _launch(kernel, block, grid, gpuarray.to_gpu(a), gpuarray.to_gpu(b), c, M, N, K)
    gpu.cuda().Context.synchronize()


# ---------------------------------------------------------------- the checks

def _correct(kernel: Any, function: str, source: str, block: tuple[int, int, int],
             grid: Callable[[int, int], tuple[int, int, int]], sizes: Iterable[tuple[int, int, int]],
             say: Callable[[str], object], precision: str = "FP32") -> bool:
    """One verdict per size; elements the kernel does not write stay NaN and fail."""
    from pycuda import gpuarray

    spec = device.current()
    rows, ok = [], True
    for M, N, K in sizes:
        A, B = verify.random_operands(M, N, K, seed=M + 3 * N + 7 * K)
        g = tuple(grid(M, N))
        checks.check_grid(g, spec)
        a, b = (gpuarray.to_gpu(x) for x in _operands(A, B, precision))
        c = gpuarray.to_gpu(np.full((M, N), np.nan, np.float32))
        _launch(kernel, block, g, a, b, c, M, N, K)
        gpu.cuda().Context.synchronize()
        v = tensor_cores.reference(A, B, precision).check(c.get())
        ok &= v.ok
        rows.append((f"{M}x{N}x{K}", str(v)))
    say(f"[gemmlab] exercise kernel {function} sha256:{provenance.short_sha(source)}")
    say(tables.table(rows, ["M x N x K", "verdict"], ["<", "<"]))
    return ok


def _fits(kernel: Any, function: str, block: tuple[int, int, int], blocks_per_sm: int,
          say: Callable[[str], object]) -> bool:
    """The compiled kernel's registers and shared memory allow ``blocks_per_sm`` blocks per SM, and nothing spilled."""
    spec = device.current()
    threads = math.prod(block)
    regs, shared, local = kernel.num_regs, kernel.shared_size_bytes, kernel.local_size_bytes
    o = occupancy.calculate(spec, threads, regs, shared)
    ok = o.blocks_per_sm >= blocks_per_sm and local == 0
    say(f"{function} for {compiler.target()}: {regs} registers per thread, {shared:,} bytes of shared memory per block, "
        f"{local} bytes of local memory per thread")
    say(f"{o.blocks_per_sm} block(s) of {threads} threads per SM on the {spec.name} ({o.occupancy:.1%} occupancy, bound by "
        f"{', '.join(o.binding)}); asked for {blocks_per_sm}" + ("" if local == 0 else ", and registers spilled to local memory")
        + (": ok" if ok else ": NOT MET"))
    return ok


def _faster(kernel: Any, function: str, block: tuple[int, int, int], grid: Callable[[int, int], tuple[int, int, int]],
            baseline: str, at: tuple[int, int, int], say: Callable[[str], object], precision: str = "FP32") -> bool:
    """Time the kernel and the course kernel ``baseline`` on the same device buffers; the kernel must also be
    right at that size, and faster."""
    from pycuda import gpuarray

    M, N, K = at
    base = registry.lookup(baseline)
    spec = device.current()
    A, B = verify.random_operands(M, N, K, seed=M + N + K)
    base.check(A, B, spec, device.free_memory())
    g = tuple(grid(M, N))
    checks.check_grid(g, spec)
    a, b = (gpuarray.to_gpu(x) for x in _operands(A, B, precision))
    c_yours, c_base = gpuarray.empty((M, N), np.float32), gpuarray.empty((M, N), np.float32)
    yours = kernel.prepare("PPPiii")

    def run_yours() -> None:     # the launch path of gemmlab.gemm.base.GemmKernel.launch, which runs the baseline
        yours.prepared_call(g, tuple(block), int(a.gpudata), int(b.gpudata), int(c_yours.gpudata), M, N, K)

    def run_base() -> None:
        base.launch(a.gpudata, b.gpudata, c_base.gpudata, M, N, K)

    run_yours()
    run_base()
    ref = tensor_cores.reference(A, B, precision)
    right = ref.check(c_yours.get()), ref.check(c_base.get())
    t_yours = timing.time_gpu(run_yours, warmup=1, repeat=5).median_s
    t_base = timing.time_gpu(run_base, warmup=1, repeat=5).median_s
    flops = traffic.gemm_flops(M, N, K)
    ok = right[0].ok and t_yours < t_base
    say(f"at {M}x{N}x{K}: {function} {flops / t_yours / 1e12:.2f} TFLOP/s, {baseline} {flops / t_base / 1e12:.2f} TFLOP/s "
        f"({t_base / t_yours:.2f}x)" + ("" if right[0].ok else f", but {function} is wrong here: {right[0]}")
        + (": faster" if ok else ": NOT FASTER" if right[0].ok else ""))
    return ok


def _conflict_free(source: str, function: str, block: tuple[int, int, int],
                   grid: Callable[[int, int], tuple[int, int, int]], say: Callable[[str], object],
                   at: tuple[int, int, int] = CONFLICTS_AT, precision: str = "FP32") -> bool:
    """Nsight Compute's bank conflicts per shared load and store, in a child process; True where ncu cannot run."""
    M, N, K = at
    code = (f"from gemmlab import exercises; exercises.launch_once({source!r}, {function!r}, {tuple(block)!r}, "
            f"{tuple(int(x) for x in grid(M, N))!r}, {M}, {N}, {K}" + (f", {precision!r})" if precision != "FP32" else ")"))
    try:
        c = nsight.profile_program(["-c", code], function, nsight.SHARED_METRICS)
    except (nsight.CountersUnavailable, OSError) as exc:
        say(f"bank conflicts not measured: {str(exc).rstrip('.')}.")
        return True
    per_load = c["load_conflicts"] / max(c["load_instructions"], 1)
    per_store = c["store_conflicts"] / max(c["store_instructions"], 1)
    ok = per_load < MAX_CONFLICTS_PER_INSTRUCTION and per_store < MAX_CONFLICTS_PER_INSTRUCTION
    say(f"bank conflicts at {M}x{N}x{K} (Nsight Compute): {per_load:.3f} per shared load, {per_store:.3f} per shared store; "
        f"below {MAX_CONFLICTS_PER_INSTRUCTION} each: " + ("conflict-free" if ok else "NO, the kernel has bank conflicts"))
    return ok


def check_kernel(source: str, function: str, block: tuple[int, int, int],
                 grid: Callable[[int, int], tuple[int, int, int]], sizes: Collection[tuple[int, int, int]] = SIZES,
                 quiet: bool = False, *, faster_than: str | None = None, at: tuple[int, int, int] = AT,
                 conflict_free: bool = False, blocks_per_sm: int | None = None, precision: str = "FP32") -> bool:
    """Compile ``source``, launch ``function(A, B, C, M, N, K)`` with ``block`` and ``grid(M, N)`` at
    each (M, N, K) of ``sizes`` and print one verdict per size; then the checks asked for (see the
    module's description): ``blocks_per_sm``, ``faster_than`` (at ``at``), ``conflict_free``; with
    ``precision`` other than FP32, the operands of chapter 8's kernels. True when everything asked for
    holds. ``quiet`` prints nothing."""
    check_arguments(source, function, block, grid, sizes, faster_than=faster_than, at=at, blocks_per_sm=blocks_per_sm,
                    precision=precision)
    block = _positive_triple("block", block)
    sizes = [_positive_triple("each size", s) for s in sizes]
    say = (lambda *_: None) if quiet else print
    gpu.cuda()
    spec = device.current()
    checks.check_block(block, spec)
    if precision != "FP32" and not tensor_cores.supports(precision, spec.compute_capability):
        raise ExerciseError(f"the {spec.name} has no {precision} tensor-core instruction (FP16 needs compute capability "
                            "7.5, BF16 and TF32 8.0).")
    kernel = _compile(source, function)
    ok = _correct(kernel, function, source, block, grid, sizes, say, precision)
    if blocks_per_sm is not None:
        ok &= _fits(kernel, function, block, blocks_per_sm, say)
    if faster_than is not None:
        ok &= _faster(kernel, function, block, grid, faster_than, _positive_triple("at", at), say, precision)
    if conflict_free:
        ok &= _conflict_free(source, function, block, grid, say, precision=precision)
    return ok


# ---------------------------------------------------------------- chapter 9's models (no GPU needed)

def _check_function(fn: Callable[[int], int], model: Callable[[int], int], inputs: Sequence[int], what: str,
                    quiet: bool) -> bool:
    """Compare ``fn`` with ``model`` on every input; print one verdict naming the first difference."""
    if not callable(fn):
        raise ExerciseError(f"give a function that takes an int and returns an int, got {type(fn).__name__}")
    say = (lambda *_: None) if quiet else print
    for x in inputs:
        try:
            got = fn(x)
        except Exception as exc:                  # the reader's function: report, do not crash the check
            say(f"{what}: your function raised {type(exc).__name__} ({exc}) at {x:#x}")
            return False
        want = model(x)
        if got != want:
            say(f"{what}: at {x:#x} your function gives {got:#x}, the model {want:#x}")
            return False
    say(f"{what}: the model's value at every one of {len(inputs):,} inputs")
    return True


def check_descriptor(fn: Callable[[int], int], quiet: bool = False) -> bool:
    """Chapter 9's first exercise: ``fn(address)`` must be :func:`gemmlab.models.hopper.smem_descriptor` of a K-major
    tile of 128-byte rows in the 128-byte swizzle (leading byte offset 16, 1024 bytes between groups of 8 rows) at
    every 1024-byte-aligned shared-memory ``address`` of a block's 227 KiB. True when it is; one printed verdict."""
    from ..models import hopper
    return _check_function(fn, lambda a: hopper.smem_descriptor(a, 16, 1024, "128B"), list(range(0, 227 * 1024, 1024)),
                           "descriptor", quiet)


def check_swizzle(fn: Callable[[int], int], quiet: bool = False) -> bool:
    """Chapter 9's second exercise: ``fn(offset)`` must be :func:`gemmlab.models.hopper.swizzled_offset` under the 128-byte
    swizzle for every byte of a 16 KiB tile. True when it is; one printed verdict."""
    from ..models import hopper
    return _check_function(fn, lambda o: hopper.swizzled_offset(o, "128B"), list(range(16 * 1024)), "128-byte swizzle",
                           quiet)


STREAMK_CASES = ([(t, k, g) for t in range(1, 31) for k in (1, 3, 64) for g in range(1, 21)]
                 + [(256, 64, 66), (1024, 128, 66), (384, 32, 66), (64, 32, 64), (512, 64, 132), (100, 13, 61)])
"""(tiles, K-tiles per tile, units) on which :func:`check_streamk_plan` compares a plan with the model's: every small
case and chapter 9's sizes on an H200's 66 clusters."""


def check_streamk_plan(fn: Callable[[int, int, int], list], quiet: bool = False) -> bool:
    """Chapter 9's third exercise: ``fn(tiles, k_tiles, units)`` must give each unit's portions ``(tile, kb, ke)``, in
    order, as :func:`gemmlab.models.streamk.plan` does, for every case of :data:`STREAMK_CASES`. True when it does; one
    printed verdict naming the first difference."""
    from ..models import streamk
    if not callable(fn):
        raise ExerciseError(f"give a function of (tiles, k_tiles, units), got {type(fn).__name__}")
    say = (lambda *_: None) if quiet else print
    for tiles, k, units in STREAMK_CASES:
        where = f"{tiles} tiles of {k} K-tiles on {units} units"
        try:
            got = [[tuple(int(x) for x in p) for p in mine] for mine in fn(tiles, k, units)]
        except Exception as exc:                  # the reader's function: report, do not crash the check
            say(f"stream-K plan: your function raised {type(exc).__name__} ({exc}) for {where}")
            return False
        want = streamk.plan(tiles, k, units)
        if got != want:
            u = next(u for u in range(max(len(got), len(want))) if got[u:u + 1] != want[u:u + 1])
            say(f"stream-K plan, {where}: unit {u} computes {got[u] if u < len(got) else 'nothing (no list)'}, "
                f"the model {want[u] if u < len(want) else 'no such unit'}")
            return False
    say(f"stream-K plan: the model's portions for every one of {len(STREAMK_CASES):,} cases")
    return True
