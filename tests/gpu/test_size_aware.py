"""Chapter 7 on the GPU: the size-aware kernel picks the split the wave model gives for this GPU, and
cuBLAS's tensor-core precisions run and are as accurate as their formats allow."""

import numpy as np
import pytest

from gemmlab.gemm import registry
from gemmlab.measure import precisions
from gemmlab.models import occupancy, shapes, verify
from gemmlab.runtime import device
from gemmlab.gemm.fast_configs import FAST


def test_fast_auto_uses_the_wave_model_of_this_gpu():
    auto = registry.kernels()["fast_auto"]
    spec = device.current()
    res = auto.resources()
    per_sm = occupancy.calculate(spec, FAST.THREADS, res.registers, res.shared_bytes).blocks_per_sm
    for M, N, K in [(1024, 1024, 1024), (512, 512, 8192), (4096, 4096, 4096), (100, 100, 100)]:
        chosen = auto.for_shape(M, N, K)
        assert chosen.split_k == shapes.choose_split(M, N, K, (FAST.BM, FAST.BN), FAST.BK, per_sm, spec.sms)
        A, B = verify.random_operands(min(M, 600), min(N, 600), K, seed=K)
        assert verify.check(auto(A, B), A, B).ok


def test_split_k_result_is_right_when_c_held_garbage_before():
    """The launcher zeroes C before the parts are added: a buffer reused from another product must not leak in."""
    k = registry.lookup(FAST.function + "_splitk4")
    A, B = verify.random_operands(300, 260, 1000, seed=5)
    problem = k.on_device(A, B)
    problem.c.fill(np.float32(123.0))
    problem.launch()
    assert verify.check(problem.result(), A, B).ok


def test_precisions_run_and_their_errors_follow_the_formats():
    rows = precisions.measure(512, 384, 1024, repeat=2)
    if rows is None:
        pytest.skip("CuPy is not installed: no cuBLAS")
    by = {r.precision: r for r in rows}
    assert by["FP32"].seconds and by["FP32"].max_error < 1024 * 2.0**-24
    for name, mantissa in (("TF32", 10), ("FP16", 10), ("BF16", 7)):
        r = by[name]
        if r.seconds is None:
            assert "refused" in r.note          # e.g. BF16 or TF32 on a GPU without them
            continue
        # Inputs rounded to the format: each product off by up to about 2 unit roundoffs, relative to |a||b|.
        # Before sm_80 there is no TF32 in the tensor cores: cuBLAS may run the "fast" mode as plain FP32.
        fp32_fallback = name == "TF32" and device.current().compute_capability < (8, 0)
        lower = 0 if fp32_fallback else by["FP32"].max_error
        assert lower < r.max_error < 4 * 2.0 ** -(mantissa + 1) + 1024 * 2.0**-24
