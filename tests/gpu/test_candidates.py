"""Kernels the chapters measure but the ladder leaves out (launch.CANDIDATES) and chapter 6's teaching
variant: each against the reference at awkward sizes, NaN propagation, and compute-sanitizer memcheck
and racecheck at a small odd size (the course kernels get the same in test_gemm_kernels.py)."""

import numpy as np
import pytest

from gemmlab import launch, verify, watchdog

KERNELS = [*launch.CANDIDATES, launch.lookup("regtile2d_t_strided")]
NAMES = [k.name for k in KERNELS]
BY_NAME = {k.name: k for k in KERNELS}
SIZES = [(1, 1, 1), (1, 300, 1), (127, 129, 65), (129, 257, 9), (65, 63, 1000), (1000, 1000, 1000), (257, 1025, 513)]


@pytest.mark.parametrize("M,N,K", SIZES, ids=[f"{m}x{n}x{k}" for m, n, k in SIZES])
@pytest.mark.parametrize("name", NAMES)
def test_candidate_matches_reference(name, M, N, K):
    A, B = verify.random_operands(M, N, K, seed=M + N + K)
    v = verify.check(BY_NAME[name](A, B), A, B)
    assert v.ok, f"{name} at {M}x{N}x{K}: {v}"


@pytest.mark.parametrize("name", NAMES)
def test_candidate_propagates_nan(name):
    A, B = verify.random_operands(130, 140, 150)
    A[5, 9] = np.nan
    C = BY_NAME[name](A, B)
    assert np.isnan(C[5]).all() and np.isfinite(np.delete(C, 5, axis=0)).all()


@pytest.mark.parametrize("tool", ["memcheck", "racecheck"])
@pytest.mark.parametrize("name", NAMES)
def test_candidate_sanitizer_clean(name, tool):
    code = (f"from gemmlab import launch, verify; k = launch.lookup({name!r}); "
            "A, B = verify.random_operands(37, 41, 29); assert verify.check(k(A, B), A, B).ok")
    report = watchdog.run_sanitized(tool, code)
    if report.errors is None and "not installed" in report.note:
        pytest.skip(report.note)
    assert report.errors == 0, str(report)
