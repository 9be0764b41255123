"""GPU tests: marked ``gpu``, and skipped, with the reason, where there is no usable GPU, PyCUDA or nvcc."""

import pytest

from gemmlab import gpu


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


@pytest.fixture(scope="session")
def hopper_hangs():
    """``{(function, precision)}`` of chapter 9's GEMMs that hang, found before any of them runs in this process:
    each runs once in a child process under the watchdog (the kernel file compiled here first, so that the
    children only launch). A kernel whose barriers wait forever then fails its own tests in seconds instead of
    stopping the whole run. Empty where these kernels cannot run."""
    from gemmlab import compiler, device, tma, watchdog

    gpu.cuda()
    if tma.hopper_kernel().unavailable_on(device.current()):
        return set()
    compiler.load(tma.SOURCE)
    todo, hangs = [(c.function, p) for c in tma.GEMMS for p in tma.PRECISIONS], set()
    while todo:
        code = ("from gemmlab import tma, verify\nA, B = verify.random_operands(300, 520, 200, seed=1)\n"
                "GEMMS = {c.function: c for c in tma.GEMMS}\n"
                + "".join(f"print({f!r}, {p!r}, flush=True)\ntma.gemm(A, B, GEMMS[{f!r}], {p!r})\n" for f, p in todo))
        outcome = watchdog.run_isolated(code, timeout_s=30 + 2 * len(todo))
        if outcome.status != "timeout":
            break
        started = [tuple(line.split()) for line in outcome.stdout.splitlines() if line.strip()]
        if not started:                                  # the child hung before any kernel: call them all suspect
            return hangs | set(todo)
        hangs.add(started[-1])
        todo = todo[todo.index(started[-1]) + 1:]
    return hangs


@pytest.fixture(scope="session")
def tc_tma_hangs():
    """``{precision: what happened}`` for chapter 8's Hopper step (gemmlab.tc_tma) where a first run in a child
    process under the watchdog does not finish (compiled here first, so that the child only launches); empty where
    the step cannot run. As with ``hopper_hangs``, a kernel whose barriers wait forever then fails
    test_tc_tma.py in seconds, and the sanitizer's script leaves it out instead of using up its timeout."""
    from gemmlab import device, tc_configs, tc_tma, watchdog

    gpu.cuda()
    if tc_tma.tma_kernel().unavailable_on(device.current()):
        return {}
    hangs = {}
    for p in tc_configs.TMA_WS.precisions:
        tc_tma.tma_kernel(p).compiled()
        code = ("from gemmlab import tc_tma, verify\nA, B = verify.random_operands(300, 520, 200, seed=1)\n"
                f"tc_tma.tma_kernel({p!r})(A, B)\nprint('done')")
        outcome = watchdog.run_isolated(code, timeout_s=60)
        if outcome.status != "ok" or "done" not in outcome.stdout:
            hangs[p] = str(outcome)
    return hangs
