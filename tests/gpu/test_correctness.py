"""Every correct GEMM kernel of the registry (the course ladder, the teaching variants, the candidates and
every 07_fast.cu configuration) against the float64 reference: awkward sizes (1, odd, not multiples of
any tile, K not a multiple of 4, one K-tile), NaN propagation, inputs left untouched. A kernel added to
gemmlab.gemm.registry or gemmlab.gemm.fast_configs is picked up here with no edit."""

import numpy as np
import pytest

from gemmlab.gemm import registry
from gemmlab.models import verify

KERNELS = {k.name: k for k in registry.correct_kernels()}
SIZES = [(1, 1, 1), (1, 1, 300), (1, 300, 1), (1, 37, 1), (31, 33, 17), (32, 32, 32), (33, 65, 31),
         (127, 129, 65), (129, 257, 9), (100, 3, 1000), (65, 63, 1000), (513, 260, 1028), (257, 255, 2049),
         (1000, 1000, 1000)]


@pytest.mark.parametrize("M,N,K", SIZES, ids=[f"{m}x{n}x{k}" for m, n, k in SIZES])
@pytest.mark.parametrize("name", list(KERNELS))
def test_matches_reference(name, M, N, K):
    A, B = verify.random_operands(M, N, K, seed=M * 7 + N * 3 + K)
    C = KERNELS[name](A, B)
    assert C.shape == (M, N) and C.dtype == np.float32
    v = verify.check(C, A, B)
    assert v.ok, f"{name} at {M}x{N}x{K}: {v}"


@pytest.mark.parametrize("name", list(KERNELS))
def test_nan_input_spreads_to_its_row_only(name):
    A, B = verify.random_operands(130, 140, 150)
    A[5, 9] = np.nan
    C = KERNELS[name](A, B)
    assert np.isnan(C[5]).all() and np.isfinite(np.delete(C, 5, axis=0)).all()
    assert not verify.check(C, A, B).ok


@pytest.mark.parametrize("name", list(KERNELS))
def test_inputs_are_not_modified(name):
    A, B = verify.random_operands(50, 60, 70)
    A0, B0 = A.copy(), B.copy()
    KERNELS[name](A, B)
    assert np.array_equal(A, A0) and np.array_equal(B, B0)


def test_the_ladder_is_in_the_list():
    assert set(registry.kernels()) <= set(KERNELS) and "early_return" not in KERNELS
