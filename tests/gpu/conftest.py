"""GPU tests: marked ``gpu``, and skipped, with the reason, where there is no usable GPU, PyCUDA or nvcc."""

import pytest

from gemmlab.runtime import gpu


def pytest_collection_modifyitems(config, items):
    ours = [item for item in items if "tests/gpu/" in item.nodeid.replace("\\", "/")]
    for item in ours:
        item.add_marker(pytest.mark.gpu)
    reason = gpu.unavailable_reason()
    if reason is not None:
        skip = pytest.mark.skip(reason=f"GPU test: {reason}")
        for item in ours:
            item.add_marker(skip)


@pytest.fixture
def dirty_memory():
    """Device memory that held NaNs just before: a kernel (or a tensor map) that reads past its operands then
    meets NaN instead of the zeros of fresh memory, and fails."""
    import numpy as np
    from pycuda import gpuarray

    junk = gpuarray.empty(1 << 24, np.float32)
    junk.fill(np.float32(np.nan))
    del junk


def first_runs_that_hang(setup: str, calls: dict) -> set:
    """The keys of ``calls`` (``{key: one line of Python}``) whose line does not finish, each run once after
    ``setup`` in a child process under the watchdog: one child runs them in order, printing each one's index
    first; when it times out, the last one it started hangs and those after it run again in a new child. A
    child that hangs before any of them makes them all suspect. Compile their kernels in this process first, so
    that the children only launch."""
    from gemmlab.runtime import watchdog

    todo, hangs = list(calls), set()
    while todo:
        code = setup + "".join(f"print({i}, flush=True)\n{calls[key]}\n" for i, key in enumerate(todo))
        outcome = watchdog.run_isolated(code, timeout_s=30 + 2 * len(todo))
        if outcome.status != "timeout":
            break
        started = [int(line) for line in outcome.stdout.split()]
        if not started:
            return hangs | set(todo)
        hangs.add(todo[started[-1]])
        todo = todo[started[-1] + 1:]
    return hangs


OPERANDS = "from gemmlab.gemm import tensor_tma, wgmma; from gemmlab.models import verify\nA, B = verify.random_operands(300, 520, 200, seed=1)\n"


@pytest.fixture(scope="session")
def hopper_hangs():
    """``{(function, precision)}`` of chapter 9's GEMMs that hang (:func:`first_runs_that_hang`), found before any
    of them runs in this process. A kernel whose barriers wait forever then fails its own tests in seconds instead
    of stopping the whole run. Empty where these kernels cannot run."""
    from gemmlab.gemm import units, wgmma
    from gemmlab.runtime import device

    gpu.cuda()
    if wgmma.hopper_kernel().unavailable_on(device.current()):
        return set()
    units.load(wgmma.SOURCE)
    return first_runs_that_hang(OPERANDS + "GEMMS = {c.function: c for c in wgmma.GEMMS}\n",
                                {(c.function, p): f"wgmma.gemm(A, B, GEMMS[{c.function!r}], {p!r})"
                                 for c in wgmma.GEMMS for p in wgmma.PRECISIONS})


@pytest.fixture(scope="session")
def tc_tma_hangs():
    """The precisions whose run of chapter 8's Hopper step (gemmlab.gemm.tensor_tma) hangs, found the same way: it then
    fails test_tc_tma.py in seconds, and the sanitizer's script leaves it out instead of using up its timeout."""
    from gemmlab.gemm import tc_configs, tensor_tma
    from gemmlab.runtime import device

    gpu.cuda()
    if tensor_tma.tma_kernel().unavailable_on(device.current()):
        return set()
    tensor_tma.tma_kernel().compiled()                                   # both formats: one unit, compiled once
    return first_runs_that_hang(OPERANDS, {p: f"tensor_tma.tma_kernel({p!r})(A, B)" for p in tc_configs.TMA_WS.precisions})
