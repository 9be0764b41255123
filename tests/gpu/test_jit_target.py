"""GEMMLAB_ARCH=compute_75: every kernel as PTX for a T4's architecture, JIT-compiled by the driver here.

The GPU suite as a whole runs in that mode too (``GEMMLAB_ARCH=compute_75 bash scripts/gpu-test.sh``);
these tests check the mode itself, in child processes so that this process keeps its own target.
"""

import json

import pytest

from gemmlab.runtime import compiler, watchdog

CHILD = """
import json
import numpy as np
from gemmlab.gemm import registry, units
from gemmlab.models import verify
from gemmlab.runtime import compiler
k = registry.lookup("fast_async")
A, B = verify.random_operands(200, 300, 100, seed=1)
ok = verify.check(k(A, B), A, B).ok
compiled = units.load(k.source, quiet=True)
try:
    ops = compiler.opcode_counts(compiled.sass(k.function), ("LDGSTS", "LDG"))
except compiler.SassUnavailable:
    ops = None
print(json.dumps({"ok": ok, "arch": compiled.arch, "line": compiled.provenance, "ops": ops}))
"""


def run_with_target(target: str | None):
    env_code = (f"import os; os.environ['GEMMLAB_ARCH'] = {target!r}\n" if target
                else "import os; os.environ.pop('GEMMLAB_ARCH', None)\n")
    out = watchdog.run_isolated(env_code + CHILD, timeout_s=600)
    assert out.status == "ok", out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_compute_75_runs_the_t4_path_of_the_cp_async_kernel():
    native, t4 = run_with_target(None), run_with_target("compute_75")
    assert native["ok"] and t4["ok"]
    assert t4["arch"] == "compute_75" and " compute_75 " in t4["line"]
    if native["ops"] is None or int(compiler.arch()[3:]) < 80:
        pytest.skip("needs cuobjdump and a GPU of sm_80 or later to tell the two paths apart")
    assert any(op.startswith("LDGSTS") for op in native["ops"])       # cp.async on this GPU
    assert not any(op.startswith("LDGSTS") for op in t4["ops"])       # the T4's loads and stores


@pytest.mark.parametrize("value, message", [("compute_99", "newer than this GPU"), ("sm_80", "not a virtual architecture"),
                                            ("banana", "not a virtual architecture")])
def test_targets_that_cannot_run_here_are_refused_in_one_sentence(value, message, monkeypatch):
    if value == "sm_80" and compiler.arch() == "sm_80":
        pytest.skip("sm_80 is this GPU's own architecture")
    monkeypatch.setenv(compiler.ARCH_VARIABLE, value)
    with pytest.raises(ValueError, match=message):
        compiler.target()


def test_unset_or_native_means_this_gpu(monkeypatch):
    monkeypatch.delenv(compiler.ARCH_VARIABLE, raising=False)
    assert compiler.target() == compiler.arch()
    monkeypatch.setenv(compiler.ARCH_VARIABLE, compiler.arch())
    assert compiler.target() == compiler.arch()


T4_RING = """
import os
os.environ["GEMMLAB_ARCH"] = "compute_75"
from gemmlab.gemm import tc_configs, tensor_cores
from gemmlab.models import verify
from gemmlab.runtime import compiler
A, B = verify.random_operands(150, 260, 100)      # several blocks, several K-tiles through the ring, ragged edges
target = compiler.capability(compiler.target())
assert target == (7, 5), target
configs = [c for c in tc_configs.CONFIGS if "FP16" in c.precisions]
kernels = [tensor_cores.mma_kernel(c, "FP16") for c in configs]
wrong_size = [k.name for c, k in zip(configs, kernels) if k.shared_for(target) != 2 * k.dynamic_shared // c.STAGES]
assert not wrong_size, wrong_size                  # two tiles' worth, whatever STAGES asks on sm_80+
wrong = [k.name for k in kernels if not verify.Reference(tensor_cores.rounded(A, "FP16"),
                                                         tensor_cores.rounded(B, "FP16")).check(k(A, B)).ok]
assert not wrong, wrong
"""


def test_the_t4_ring_fits_the_shared_memory_it_asks_for():
    """Compiled for compute_75, chapter 8's kernels keep a ring of two tiles and ask for only that much shared memory
    (48 KiB for the best kernel instead of its 96 KiB on sm_80+, so that a T4 runs it): under memcheck, every FP16
    configuration is right and touches no shared memory beyond its request."""
    report = watchdog.run_sanitized("memcheck", T4_RING, timeout_s=900)
    if report.errors is None and "not installed" in report.note:
        pytest.skip(report.note)
    assert report.errors == 0 and report.program_ok, str(report)
