"""compute-sanitizer over every correct kernel of the registry at a small odd size, through the course's one
sanitizer path (gemmlab.runtime.watchdog.run_sanitized, a child process under a timeout): no memory errors, no
shared-memory races, no barrier misuse, and every result still right under the tool; chapter 8's tensor-core
kernels too, checked against their rounded inputs."""

import pytest

from gemmlab.runtime import watchdog

CHECK_ALL = """
from gemmlab.gemm import registry
from gemmlab.models import verify
A, B = verify.random_operands(37, 41, 29)
wrong = [k.name for k in registry.correct_kernels() if not verify.check(k(A, B), A, B).ok]
assert not wrong, wrong
"""

CHECK_TENSOR = """
from dataclasses import replace
from gemmlab.gemm import tc_configs, tensor_cores
from gemmlab.models import verify
from gemmlab.runtime import compiler
A, B = verify.random_operands(150, 260, 100)      # several blocks, several K-tiles through the ring, ragged edges
arch = compiler.capability(compiler.target())
kernels = [tensor_cores.wmma_kernel(p) for p in tc_configs.SIXTEEN_BIT] + [
    tensor_cores.mma_kernel(c, p) for c in tc_configs.CONFIGS for p in c.precisions]
kernels += [replace(k, tail_whole=1) for k in kernels if k.config and k.config.TAIL]   # the shared tail's adds too
ran = [k for k in kernels if tensor_cores.supports(k.precision, arch)]
wrong = [k.name for k in ran if not verify.Reference(tensor_cores.rounded(A, k.precision),
                                                     tensor_cores.rounded(B, k.precision)).check(k(A, B)).ok]
assert ran and not wrong, wrong
"""


CHECK_HOPPER = """
from gemmlab.gemm import tensor_cores, wgmma
from gemmlab.models import verify
from gemmlab.runtime import device, gpu
gpu.cuda()
if not wgmma.hopper_kernel().unavailable_on(device.current()):
    A, B = verify.random_operands(300, 520, 200)  # ragged edges, 4 K-tiles, 6 or more tiles of C
    wrong = [(c.function, p) for p in wgmma.PRECISIONS for c in wgmma.GEMMS if (c.function, p) not in HANGS
             and not tensor_cores.reference(A, B, p).check(wgmma.gemm(A, B, c, p)).ok]
    assert not wrong, wrong
"""


CHECK_TC_TMA = """
from gemmlab.gemm import tc_configs, tensor_cores, tensor_tma
from gemmlab.models import verify
from gemmlab.runtime import device, gpu
gpu.cuda()
if not tensor_tma.tma_kernel().unavailable_on(device.current()):
    A, B = verify.random_operands(300, 520, 600)  # ragged edges, 10 K-tiles: the ring of 4 goes round twice
    wrong = [p for p in tc_configs.TMA_WS.precisions if p not in HANGS
             and not tensor_cores.reference(A, B, p).check(tensor_tma.tma_kernel(p)(A, B)).ok]
    assert not wrong, wrong
"""


@pytest.mark.parametrize("tool", ["memcheck", "racecheck", "synccheck"])
@pytest.mark.parametrize("script", [CHECK_ALL, CHECK_TENSOR, CHECK_HOPPER, CHECK_TC_TMA],
                         ids=["fp32-kernels", "tensor-core-kernels", "hopper-kernels", "tensor-core-copy-engine"])
def test_every_kernel_is_sanitizer_clean(script, tool, request):
    """The FP32 kernels of the registry, then chapter 8's (cp.async rings, ldmatrix, swizzled tiles), then chapter
    9's (the copy engine, mbarriers, wgmma) and chapter 8's Hopper step (the copy engine, mbarriers, mma.sync), these
    two on a Hopper GPU only (elsewhere their scripts check nothing)."""
    if script is CHECK_HOPPER:        # a kernel that hangs fails in test_tma.py; under the tool it would use up the timeout
        script = f"HANGS = {sorted(request.getfixturevalue('hopper_hangs'))!r}\n" + script
    elif script is CHECK_TC_TMA:      # the same for chapter 8's Hopper step (test_tc_tma.py fails it)
        script = f"HANGS = {sorted(request.getfixturevalue('tc_tma_hangs'))!r}\n" + script
    report = watchdog.run_sanitized(tool, script, timeout_s=900)
    if report.errors is None and "not installed" in report.note:
        pytest.skip(report.note)
    assert report.errors == 0 and report.program_ok, str(report)
