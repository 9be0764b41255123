"""Every course GEMM kernel against the float64 reference, odd sizes included."""

import numpy as np
import pytest

import gemmlab
from gemmlab import verify

KERNELS = gemmlab.kernels()
SIZES = [(1, 1, 1), (1, 1, 300), (1, 37, 1), (31, 33, 17), (32, 32, 32), (33, 65, 31),
         (127, 129, 65), (100, 3, 1000), (257, 255, 2049), (1000, 1000, 1000)]


@pytest.mark.parametrize("M,N,K", SIZES, ids=[f"{m}x{n}x{k}" for m, n, k in SIZES])
@pytest.mark.parametrize("name", list(KERNELS))
def test_matches_reference(name, M, N, K):
    A, B = verify.random_operands(M, N, K, seed=M * 7 + N * 3 + K)
    C = KERNELS[name](A, B)
    assert C.shape == (M, N) and C.dtype == np.float32
    v = verify.check(C, A, B)
    assert v.ok, f"{name} at {M}x{N}x{K}: {v}"


@pytest.mark.parametrize("name", list(KERNELS))
def test_nan_input_does_not_pass(name):
    A, B = verify.random_operands(40, 40, 40)
    A[3, 7] = np.nan
    C = KERNELS[name](A, B)
    assert np.isnan(C[3]).all() and np.isfinite(np.delete(C, 3, axis=0)).all()
    assert not verify.check(C, A, B).ok


@pytest.mark.parametrize("name", list(KERNELS))
def test_inputs_are_not_modified(name):
    A, B = verify.random_operands(50, 60, 70)
    A0, B0 = A.copy(), B.copy()
    KERNELS[name](A, B)
    assert np.array_equal(A, A0) and np.array_equal(B, B0)
