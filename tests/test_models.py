"""The traffic model against a brute-force count of every thread's loads."""

import itertools

import numpy as np
import pytest

from gemmlab import models


def brute_naive(M, N, K):
    a = b = 0
    for row, col in itertools.product(range(M), range(N)):
        a += K
        b += K
    return a, b


def brute_tiled(M, N, K, T):
    """Replay the tiled kernel's guarded loads: which threads read global memory in which phase."""
    a = b = 0
    for by, bx in itertools.product(range(-(-M // T)), range(-(-N // T))):
        for k0 in range(0, K, T):
            for ty, tx in itertools.product(range(T), range(T)):
                row, col = by * T + ty, bx * T + tx
                a += row < M and k0 + tx < K
                b += k0 + ty < K and col < N
    return a, b


SIZES = [(1, 1, 1), (4, 4, 4), (5, 7, 3), (8, 8, 8), (9, 17, 33), (16, 3, 20)]


@pytest.mark.parametrize("M,N,K", SIZES)
def test_naive_counts(M, N, K):
    t = models.naive_traffic(M, N, K)
    assert (t.loads_A, t.loads_B) == brute_naive(M, N, K) == (M * N * K, M * N * K)
    assert t.intensity == pytest.approx(0.25)


@pytest.mark.parametrize("M,N,K", SIZES)
@pytest.mark.parametrize("T", [1, 2, 4, 8])
def test_tiled_counts(M, N, K, T):
    t = models.tiled_traffic(M, N, K, T)
    assert (t.loads_A, t.loads_B) == brute_tiled(M, N, K, T)


def test_tiled_divides_traffic_by_T_when_T_divides_the_sizes():
    n = 1024
    for T in (8, 16, 32):
        assert models.naive_traffic(n, n, n).loads == T * models.tiled_traffic(n, n, n, T).loads
        assert models.tiled_traffic(n, n, n, T).intensity == pytest.approx(models.tiled_intensity(T))


def test_intensities():
    assert models.naive_intensity() == 0.25
    assert models.tiled_intensity(32) == 8.0
    assert models.gemm_flops(2, 3, 4) == 48


def test_shared_bytes():
    assert [models.tiled_shared_bytes(T) for T in (8, 16, 32)] == [512, 2048, 8192]


def test_roofline_and_ridge():
    peak, bw = 10e12, 1e12
    assert models.ridge_point(peak, bw) == 10
    np.testing.assert_allclose(models.roofline([0.25, 10, 100], peak, bw), [0.25e12, 10e12, 10e12])
