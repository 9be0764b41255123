"""The verifier: passes correct results, catches wrong, NaN and Inf ones, tolerance grows with K."""

import numpy as np
import pytest

from gemmlab.models import verify


def test_float32_result_in_any_summation_order_passes():
    A, B = verify.random_operands(37, 29, 513, seed=1)
    # a float32 dot product summed backwards: a legitimate kernel's rounding, not the reference's
    C = np.zeros((37, 29), np.float32)
    for k in reversed(range(A.shape[1])):
        C += A[:, k:k + 1] * B[k:k + 1, :]
    v = verify.check(C, A, B)
    assert v.ok, v
    assert str(v) == "correct: all 1,073 elements within the float32 error bound"


def test_wrong_elements_are_counted_and_located():
    A, B = verify.random_operands(16, 16, 64)
    C = (A @ B).astype(np.float32)
    C[3, 5] += 0.5
    C[10, 1] = 0.0
    v = verify.check(C, A, B)
    assert not v.ok and v.wrong == 2 and v.worst in ((3, 5), (10, 1))
    assert "WRONG: 2 of 256 elements" in str(v)
    assert verify.wrong_mask(C, A, B).sum() == 2


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_and_inf_fail(bad):
    A, B = verify.random_operands(8, 8, 8)
    C = (A @ B).astype(np.float32)
    C[0, 0] = bad
    v = verify.check(C, A, B)
    assert not v.ok and v.nonfinite == 1 and "NaN/Inf" in str(v)


def test_all_nan_fails():
    A, B = verify.random_operands(4, 4, 4)
    assert not verify.check(np.full((4, 4), np.nan, np.float32), A, B).ok


def test_tolerance_grows_with_K():
    small = verify.tolerance(np.ones((1, 10), np.float32), np.ones((10, 1), np.float32))[0, 0]
    large = verify.tolerance(np.ones((1, 10000), np.float32), np.ones((10000, 1), np.float32))[0, 0]
    assert large / 10000 > small / 10   # grows faster than |A||B| alone


def test_missing_one_k_tile_is_caught():
    A, B = verify.random_operands(32, 32, 4096, seed=3)
    C = (A[:, 32:] @ B[32:, :]).astype(np.float32)    # a kernel that skipped the first 32-wide phase
    assert verify.check(C, A, B).wrong > 800   # the bound is worst-case, so a few slip under it


def test_shape_mismatch_raises():
    A, B = verify.random_operands(4, 5, 6)
    with pytest.raises(ValueError, match=r"C has shape \(5, 4\), expected \(4, 5\)"):
        verify.check(np.zeros((5, 4), np.float32), A, B)
