"""Kernel files with a few lines changed, for the experiments in drafts/: each edit must find its text exactly once,
so that an experiment stops with a clear message when the kernel file it rewrites has changed under it."""
from dataclasses import replace
from pathlib import Path
import sys

from gemmlab import bench, compile_units, gpu, precisions, registry, tc_configs, tensor_gemm, timing, verify

ROOT = Path(__file__).resolve().parent.parent


def replace_once(text: str, edits, what: str) -> str:
    """``text`` with each ``(old, new)`` of ``edits`` applied; ``what`` names the text in the message."""
    for old, new in edits:
        assert text.count(old) == 1, f"{what} changed: cannot find {old.strip()[:60]!r}"
        text = text.replace(old, new)
    return text


def kernel_variant(name: str, *edits) -> str:
    """``kernels/<name>`` with ``edits`` applied (:func:`replace_once`)."""
    return replace_once((ROOT / "kernels" / name).read_text(), edits, f"kernels/{name}")


def load_draft(name: str):
    """The draft ``drafts/<name>.py`` as a module (its file name starts with a digit, so ``import`` cannot load it):
    for a draft that reuses another's edits or stamps."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, ROOT / "drafts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Texts of kernels/09_hopper.cu that the chapter 9 drafts anchor their edits on (replace_once finds each exactly once,
# so a draft stops with a clear message when the kernel changes under it).
WS_CONSUMER = "        const int c = group - 1;\n        float d[128];\n        int it = 0;\n"
"""ws_gemm: a consumer warpgroup's state, before its loop over tiles."""
WS_STORE = ("            } else if (STORE == 0)\n"
            "                store_d_tma(d, c_map, buffers, c, m0 + 64 * c, n0);\n")
"""ws_gemm: the copy-engine epilogue's call, at the end of each tile."""
WS_END = "        if (STORE == 0 && threadIdx.x % 128 == 0)                    // every box has left before the block does\n"
"""ws_gemm: a consumer's last wait for its stores, after its loop over tiles."""
BOX_LOOP = "#pragma unroll\n    for (int j = 0; j < REGS / 16; ++j) {\n"
"""store_d_tma: the loop over the boxes."""
BOX_HEAD = ("        unsigned char* buf = buffers + (j % 2) * C_BOX_BYTES;\n"
            "        if (issuer)                                                  // the store that read buf last is done reading\n"
            '            asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");\n')
"""store_d_tma: a box's buffer, and the issuing thread's wait until the engine has read it."""
BOX_FENCE = ('        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   '
             "// the threads' stores, read by the engine next\n")
"""store_d_tma: the proxy fence after the threads' writes of a box."""
BOX_BARRIER = "        warpgroup_barrier(1 + consumer);\n"
"""store_d_tma: the warpgroup barrier, before a box's writes and after its fence."""

GOAL_SIZES = ((4096, 4096, 4096), (6144, 4096, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (2048, 2048, 2048))
"""Issue #18's four sizes for chapter 9's drafts, 4096^3 twice (the size the goal is missed at, and the spread
between two timings of it)."""


def cuda_and_cupy():
    """Start the GPU and return CuPy (for cuBLAS), or stop the experiment where CuPy is missing."""
    gpu.cuda()
    cp = bench.cupy_or_none()
    if cp is None:
        sys.exit("needs CuPy for cuBLAS")
    return cp


TC_INNER = next(config for name, config, _ in registry.TENSOR_STEPS if name == "tc_inner")
"""The configuration of chapter 8's last step, ``tc_inner`` (as its ladder names it)."""

CHECK_SIZES = ((1, 1, 1), (300, 520, 1234), (1000, 2000, 777), (1024, 2048, 512), (257, 4096, 96))
"""Awkward sizes for chapter 8's kernel variants: one element, odd K, edge tiles, every block inner but the last."""


def tc_inner_units(tmp: Path, variants: dict) -> dict:
    """Each ``{name: edits}`` of ``variants`` applied to chapter 8's kernel file (:func:`kernel_variant`), written
    under ``tmp``, as a compile unit with the entry points of ``tc_inner``'s configuration only: ``{name: unit}``."""
    units = {}
    for name, edits in variants.items():
        path = Path(tmp) / f"08_tensor_core_{name}.cu"
        path.write_text(kernel_variant(tc_configs.SOURCE, *edits))
        units[name] = compile_units.CompileUnit(path, tc_configs.entry_points((TC_INNER,)))
    return units


def tc_inner_variants(units: dict, precision: str) -> dict:
    """Chapter 8's last step, ``tc_inner``, for ``precision`` inputs, and the same configuration compiled from each of
    ``units`` (``{name: CompileUnit}``, a variant of the kernel file each), as ``{name: kernel}``."""
    out = {"tc_inner": registry.lookup(f"tc_inner_{tc_configs.SUFFIXES[precision]}")}
    out.update({name: replace(tensor_gemm.mma_kernel(TC_INNER, precision, f"tc_inner_{name}"), source=unit)
                for name, unit in units.items()})
    return out


def check_variants(kernels: dict, precision: str, check_sizes=CHECK_SIZES) -> None:
    """Print each kernel's registers and local memory, then whether all are correct at each of ``check_sizes``."""
    p = precision
    for name, k in kernels.items():
        print(f"{p} {name}: {k.resources().registers} registers, {k.resources().local_bytes} bytes local", flush=True)
    for M, N, K in check_sizes:
        A, B = verify.random_operands(M, N, K, seed=M + K)
        ref = tensor_gemm.reference(A, B, p)
        bad = [n for n, k in kernels.items() if not ref.check(k(A, B)).ok]
        print(f"{p} {M}x{N}x{K}: {'all correct' if not bad else 'WRONG: ' + ', '.join(bad)}", flush=True)


def check_and_time(kernels: dict, precision: str, check_sizes=CHECK_SIZES, sizes=(8192, 4096), base: str = "tc_inner"):
    """:func:`check_variants`, then the kernels' rates at each n^3 of ``sizes`` timed interleaved (equal clocks) and
    each one's share of ``base``'s speed (median and quartiles of the rounds)."""
    p = precision
    check_variants(kernels, p, check_sizes)
    for n in sizes:
        A, B = verify.random_operands(n, n, n, seed=n)
        problems = {name: k.on_device(A, B) for name, k in kernels.items()}
        times = timing.interleaved({name: q.launch for name, q in problems.items()})
        for name in problems:
            median, low, high = times.ratio(name, base)
            rate = 2.0 * n ** 3 / times.median_s(name) / 1e12
            print(f"   {p} {n}^3 {name:9s} {rate:6.1f} TFLOP/s interleaved, {median:6.1f}% of {base} "
                  f"({low:.1f}-{high:.1f})", flush=True)
        del problems


def correct_at(kernels: dict, A, B, precision: str = "BF16") -> dict:
    """``{name: whether its product of A and B passes the reference check}`` for ``kernels`` (``{name: kernel}``)."""
    ref = tensor_gemm.reference(A, B, precision)
    return {name: ref.check(k(A, B)).ok for name, k in kernels.items()}


def against_cublas(cp, problems: dict, A, B, precision: str = "BF16"):
    """``problems`` (``{name: problem on the device}``) timed interleaved with cuBLAS on the same A and B (equal
    clocks): prints cuBLAS's rate and each one's share of it (median and quartiles of the rounds), returns cuBLAS's
    call, for more timings."""
    run, _ = precisions._cublas_call(cp, A, B, precision)
    (M, K), N = A.shape, B.shape[1]
    flops = 2.0 * M * N * K
    times = timing.interleaved({"cuBLAS": run, **{name: p.launch for name, p in problems.items()}})
    print(f"interleaved, {M}x{N}x{K}: cuBLAS {flops / times.median_s('cuBLAS') / 1e12:.1f} TFLOP/s", flush=True)
    for name in problems:
        median, low, high = times.ratio(name, "cuBLAS")
        print(f"   {name:12s} of cuBLAS: median {median:.1f}%, quartiles {low:.1f}-{high:.1f}", flush=True)
    return run


def launch_twice(kernels: dict, A, B) -> None:
    """Each of ``kernels`` launched twice on A and B, in the order printed: for Nsight Compute, whose second launch
    of each is the one to read (the first pays for the tensor maps and the L2's cold start)."""
    for name, k in kernels.items():
        problem = k.on_device(A, B)
        problem.launch()
        problem.launch()
        print(f"launched {name} twice at {A.shape[0]}x{B.shape[1]}x{A.shape[1]}", flush=True)
        del problem


def last_step_kernels(tmp: Path, sources: dict, precision: str = "BF16", config=None) -> dict:
    """Chapter 9's last step (``hopper_tmastore``), or the GEMM of ``09_hopper.cu`` that ``config`` names, as
    ``"base"``, and one kernel per ``{name: text}`` of ``sources``, each a version of ``kernels/09_hopper.cu`` written
    under ``tmp`` and compiled for sm_90a."""
    from gemmlab import tma
    config = config or tma.GEMM_TMA_STORE
    out = {"base": tma.hopper_kernel(config, precision=precision)}
    for name, text in sources.items():
        path = Path(tmp) / f"09_hopper_{name}.cu"
        path.write_text(text)
        unit = compile_units.CompileUnit(path, arch_specific="sm_90a")
        out[name] = replace(tma.hopper_kernel(config, precision=precision), source=unit)
    return out


def last_step_variants(tmp: Path, edits: dict, precision: str = "BF16", config=None) -> dict:
    """:func:`last_step_kernels` with each version given as ``{name: edits}`` to ``kernels/09_hopper.cu``
    (:func:`kernel_variant`)."""
    from gemmlab import tma
    sources = {name: kernel_variant(tma.SOURCE, *changes) for name, changes in edits.items()}
    return last_step_kernels(tmp, sources, precision, config)


def recast(kernel, cls, **changes):
    """``kernel`` as an instance of ``cls``, a subclass of its class that adds fields or overrides a method (another
    grid, other tensor maps), with ``changes`` to its fields."""
    import dataclasses
    return cls(**{**{f.name: getattr(kernel, f.name) for f in dataclasses.fields(kernel) if f.init}, **changes})


def device_array(kernel, symbol: str, dtype, count: int):
    """The ``__device__`` array ``symbol`` (``count`` items of ``dtype``) of the module that ``kernel``'s launches
    used, copied back through the driver: what an instrumented kernel wrote."""
    import ctypes
    import numpy as np
    module = kernel.compiled()._driver_module
    ptr, size = ctypes.c_uint64(), ctypes.c_size_t()
    gpu.driver_call("cuModuleGetGlobal_v2", ctypes.byref(ptr), ctypes.byref(size), module, symbol.encode())
    out = np.zeros(count, dtype)
    assert size.value == out.nbytes, f"{symbol}: {size.value} bytes on the device, {out.nbytes} expected"
    gpu.driver_call("cuMemcpyDtoH_v2", out.ctypes.data_as(ctypes.c_void_p), ptr, size)
    return out


def print_correct(kernels: dict, sizes, precision: str = "BF16") -> None:
    """For each (M, N, K) of ``sizes``: which of ``kernels`` (``{name: kernel}``) are right on random operands."""
    for M, N, K in sizes:
        print(f"correct at {M}x{N}x{K}:", correct_at(kernels, *verify.random_operands(M, N, K, seed=1), precision),
              flush=True)


def time_against_cublas(cp, kernels: dict, sizes, check: bool = False) -> None:
    """:func:`against_cublas` for ``kernels`` at each (M, N, K) of ``sizes`` (random operands, BF16), after saying
    whether each is right there when ``check`` is set."""
    for M, N, K in sizes:
        A, B = verify.random_operands(M, N, K, seed=1)
        if check:
            print(f"correct at {M}x{N}x{K}:", correct_at(kernels, A, B), flush=True)
        against_cublas(cp, {name: k.on_device(A, B) for name, k in kernels.items()}, A, B)


def launched_three_times(kernel, A, B) -> None:
    """``kernel`` launched three times on A and B and waited for: what an instrumented kernel wrote is then the
    third launch's, with a warm L2 and warm clocks."""
    problem = kernel.on_device(A, B)
    for _ in range(3):
        problem.launch()
    gpu.cuda().Context.synchronize()


def last_step_experiment(edits: dict, check_sizes, timed_sizes, once: bool, check_timed: bool = False) -> None:
    """The usual run of a draft that edits chapter 9's last step (:func:`last_step_variants`, BF16): with ``once``,
    each kernel launched twice at 4096^3 for Nsight Compute (:func:`launch_twice`); otherwise which are right at
    ``check_sizes``, then all timed interleaved with cuBLAS at ``timed_sizes`` (:func:`time_against_cublas`)."""
    import tempfile
    gpu.cuda()
    with tempfile.TemporaryDirectory() as tmp:
        ks = last_step_variants(Path(tmp), edits)
        if once:
            launch_twice(ks, *verify.random_operands(4096, 4096, 4096, seed=1))
            return
        cp = cuda_and_cupy()
        print_correct(ks, check_sizes)
        time_against_cublas(cp, ks, timed_sizes, check=check_timed)


def interleaved_then_alone(cp, kernels: dict, sizes, seconds: float, cublas_twice: bool = False) -> None:
    """For each n^3 of ``sizes``: whether each of ``kernels`` is right there, all of them timed interleaved with
    cuBLAS (:func:`against_cublas`), then each alone for ``seconds`` at the clock its power leaves it
    (``scripts/power_under_load.py``), cuBLAS first (and, with ``cublas_twice``, last too, the two averaged), each
    kernel's rate, clock and watts as a share of cuBLAS's."""
    import time
    from scripts import power_under_load as power     # scripts/ is a namespace package
    sampler = power.Sampler()
    time.sleep(1.0)
    for n in sizes:
        A, B = verify.random_operands(n, n, n, seed=1)
        wrong = [name for name, ok in correct_at(kernels, A, B).items() if not ok]
        print(f"{n}^3: {'all correct' if not wrong else 'WRONG: ' + ', '.join(wrong)}", flush=True)
        problems = {name: k.on_device(A, B) for name, k in kernels.items()}
        run = against_cublas(cp, problems, A, B)
        flops = 2.0 * n ** 3
        print(f"alone for {seconds:.0f} s each, {n}^3{' (cuBLAS first and last)' if cublas_twice else ''}:", flush=True)
        first = power.measure(f"cuBLAS {n}^3", run, flops, seconds, sampler)
        readings = {}
        for name, p in problems.items():
            time.sleep(1.0)
            readings[name] = power.measure(f"{name} {n}^3", p.launch, flops, seconds, sampler)
        time.sleep(1.0)
        base, label = first, ""
        if cublas_twice:
            last = power.measure(f"cuBLAS {n}^3 again", run, flops, seconds, sampler)
            label = " (mean of both)"
            base = first if last is None else last if first is None else (
                power.Reading((first.tflops + last.tflops) / 2, (first.mhz + last.mhz) / 2,
                              (first.watts + last.watts) / 2, first.reasons))
        for name, r in readings.items():
            if r and base:
                print(f"   {name:12s} of cuBLAS{label}: {r.against(base)}", flush=True)
        del problems
    sampler.stop()
