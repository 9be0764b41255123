"""Every entry point of kernels/07_fast.cu (the tuned configurations and chapter 7's ablations) against
the float64 reference at awkward sizes: edges, scalar paths (K or N not a multiple of 4), one K-tile."""

import pytest

from gemmlab import autotune, verify

CONFIGS = autotune.search_space(ablations=True)
SIZES = [(1, 1, 1), (1, 300, 1), (127, 129, 65), (129, 257, 9), (257, 1025, 513), (1000, 1000, 1000), (513, 260, 1028)]


@pytest.mark.parametrize("M,N,K", SIZES, ids=[f"{m}x{n}x{k}" for m, n, k in SIZES])
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.function)
def test_fast_entry_matches_reference(config, M, N, K):
    A, B = verify.random_operands(M, N, K, seed=M * 7 + N + K)
    v = verify.check(autotune.kernel(config)(A, B), A, B)
    assert v.ok, f"{config.function} at {M}x{N}x{K}: {v}"
