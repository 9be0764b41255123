"""The traffic model against a brute-force count of every thread's loads."""

import itertools

import numpy as np
import pytest

from gemmlab.models import traffic


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
    t = traffic.naive_traffic(M, N, K)
    assert (t.loads_A, t.loads_B) == brute_naive(M, N, K) == (M * N * K, M * N * K)
    assert t.intensity == pytest.approx(0.25)


@pytest.mark.parametrize("M,N,K", SIZES)
@pytest.mark.parametrize("T", [1, 2, 4, 8])
def test_tiled_counts(M, N, K, T):
    t = traffic.tiled_traffic(M, N, K, T)
    assert (t.loads_A, t.loads_B) == brute_tiled(M, N, K, T)


def test_tiled_divides_traffic_by_T_when_T_divides_the_sizes():
    n = 1024
    for T in (8, 16, 32):
        assert traffic.naive_traffic(n, n, n).loads == T * traffic.tiled_traffic(n, n, n, T).loads
        assert traffic.tiled_traffic(n, n, n, T).intensity == pytest.approx(traffic.tiled_intensity(T))


def test_intensities_are_what_the_traffic_model_counts():
    """The closed forms of chapters 1 and 2 against FLOPs over the bytes the brute-force count loads."""
    for M, N, K in SIZES:
        naive_a, naive_b = brute_naive(M, N, K)
        assert traffic.gemm_flops(M, N, K) / (4 * (naive_a + naive_b)) == traffic.naive_intensity()
    for T in (2, 4, 8):
        a, b = brute_tiled(8 * T, 8 * T, 8 * T, T)
        assert traffic.gemm_flops(8 * T, 8 * T, 8 * T) / (4 * (a + b)) == pytest.approx(traffic.tiled_intensity(T))


@pytest.mark.usefixtures("nvcc_path")     # skips without nvcc; fails under GEMMLAB_STRICT_TOOLS=1
def test_shared_bytes_are_what_ptxas_allocates():
    import nvcc_cache
    from gemmlab.gemm import units

    unit = units.unit("02_tiled.cu")
    report = {e.function: e.shared_bytes for e in nvcc_cache.unit_build(unit, "sm_80").entries()}
    assert {T: report[f"gemm_tiled_{T}"] for T in (8, 16, 32)} == {T: traffic.tiled_shared_bytes(T) for T in (8, 16, 32)}


def test_roofline_and_ridge():
    peak, bw = 10e12, 1e12
    assert traffic.ridge_point(peak, bw) == 10
    np.testing.assert_allclose(traffic.roofline([0.25, 10, 100], peak, bw), [0.25e12, 10e12, 10e12])


def brute_warp_naive(M, N, K, column=False):
    """Replay every warp-wide load of the naive kernel: (requests, distinct 32-byte sectors). A warp is
    32 neighbours in a row of C, or with ``column`` (``naive_column``) 32 neighbours in a column."""
    if column:
        warps = [[(r, c) for r in range(r0, min(r0 + 32, M))] for c in range(N) for r0 in range(0, M, 32)]
    else:
        warps = [[(r, c) for c in range(c0, min(c0 + 32, N))] for r in range(M) for c0 in range(0, N, 32)]
    req, sec = [0, 0], [0, 0]
    for lanes in warps:
        for k in range(K):
            for which, addrs in ((0, [4 * (r * K + k) for r, _ in lanes]), (1, [4 * (k * N + c) for _, c in lanes])):
                req[which] += 1
                sec[which] += len({a // 32 for a in addrs})
    return req, sec


def brute_warp_tiled(M, N, K, T):
    req = [0, 0]
    sec = [0, 0]
    for by in range(M // T):
        for bx in range(N // T):
            for k0 in range(0, K, T):
                lanes = [(t // T, t % T) for t in range(T * T)]          # (ty, tx), x fastest
                for w in range(0, T * T, 32):
                    warp = lanes[w:w + 32]
                    a = [4 * ((by * T + ty) * K + k0 + tx) for ty, tx in warp]
                    b = [4 * ((k0 + ty) * N + bx * T + tx) for ty, tx in warp]
                    for which, addrs in ((0, a), (1, b)):
                        req[which] += 1
                        sec[which] += len({x // 32 for x in addrs})
    return req, sec


@pytest.mark.parametrize("M,N,K", [(32, 32, 32), (64, 96, 32), (32, 64, 96)])
def test_naive_warp_model_matches_a_trace(M, N, K):
    t = traffic.naive_warp_traffic(M, N, K)
    assert ([t.requests_A, t.requests_B], [t.sectors_A, t.sectors_B]) == brute_warp_naive(M, N, K)


@pytest.mark.parametrize("M,N,K", [(32, 32, 32), (64, 96, 32), (32, 64, 96)])
def test_naive_column_warp_model_matches_a_trace(M, N, K):
    t = traffic.naive_column_warp_traffic(M, N, K)
    assert ([t.requests_A, t.requests_B], [t.sectors_A, t.sectors_B]) == brute_warp_naive(M, N, K, column=True)
    row = traffic.naive_warp_traffic(M, N, K)
    assert t.requests == row.requests and (t.sectors, row.sectors) == (33 * t.requests // 2, 5 * row.requests // 2)


@pytest.mark.parametrize("T", [8, 16, 32])
@pytest.mark.parametrize("M,N,K", [(32, 32, 32), (64, 96, 32), (32, 64, 96)])
def test_tiled_warp_model_matches_a_trace(M, N, K, T):
    t = traffic.tiled_warp_traffic(M, N, K, T)
    assert ([t.requests_A, t.requests_B], [t.sectors_A, t.sectors_B]) == brute_warp_tiled(M, N, K, T)


def test_warp_model_at_1024_and_its_limits():
    assert traffic.naive_warp_traffic(1024, 1024, 1024).requests == 67_108_864
    assert traffic.tiled_warp_traffic(1024, 1024, 1024, 32).requests == 2_097_152
    assert traffic.naive_warp_traffic(1024, 1024, 1024).requests == 32 * traffic.tiled_warp_traffic(1024, 1024, 1024, 32).requests
    with pytest.raises(ValueError, match="multiples of 32; got N=1000"):
        traffic.naive_warp_traffic(1024, 1000, 1024)
    with pytest.raises(ValueError, match="T = 4"):
        traffic.tiled_warp_traffic(64, 64, 64, 4)


def emulate_early_return(A, B, T):
    """Run the chapter 3 kernel's logic in NumPy, one block at a time, with shared memory that the
    exited threads never write starting as NaN: every output that reads such an entry turns NaN."""
    M, K = A.shape
    N = B.shape[1]
    C = np.full((M, N), np.nan)
    for by in range(-(-M // T)):
        for bx in range(-(-N // T)):
            acc = np.zeros((T, T))
            for k0 in range(0, K, T):
                As = np.full((T, T), np.nan)
                Bs = np.full((T, T), np.nan)
                for ty in range(T):
                    for tx in range(T):
                        row, col = by * T + ty, bx * T + tx
                        if row >= M or col >= N:
                            continue                                  # returned: loads nothing
                        As[ty, tx] = A[row, k0 + tx] if k0 + tx < K else 0.0
                        Bs[ty, tx] = B[k0 + ty, col] if k0 + ty < K else 0.0
                acc += As @ Bs
            for ty in range(T):
                for tx in range(T):
                    row, col = by * T + ty, bx * T + tx
                    if row < M and col < N:
                        C[row, col] = acc[ty, tx]
    return C


@pytest.mark.parametrize("M,N,K,T", [(8, 8, 8, 4), (10, 8, 9, 4), (8, 11, 5, 4), (10, 11, 12, 4), (7, 5, 3, 8), (33, 40, 20, 16)])
def test_early_return_prediction_matches_an_emulation(M, N, K, T):
    rng = np.random.default_rng(0)
    A, B = rng.uniform(1, 2, (M, K)), rng.uniform(1, 2, (K, N))
    C = emulate_early_return(A, B, T)
    exposed = traffic.early_return_affected(M, N, T)
    assert np.array_equal(np.isnan(C), exposed)
    np.testing.assert_allclose(C[~exposed], (A @ B)[~exposed])


def test_early_return_at_1000_and_1024():
    assert traffic.early_return_affected(1000, 1000, 32).sum() == 15_936
    assert traffic.early_return_affected(1024, 1024, 32).sum() == 0


def test_tile_intensity_at_both_levels():
    from gemmlab.models import traffic

    tiled = traffic.tile_intensity(32, 32)
    assert tiled.global_to_shared == traffic.tiled_intensity(32) == 8 and tiled.shared_to_registers == 0.25
    one_d = traffic.tile_intensity(64, 64, 8, 1)
    assert one_d.global_to_shared == 16 and one_d.shared_to_registers == 16 / 36
    two_d = traffic.tile_intensity(128, 128, 8, 8)
    assert (two_d.global_to_shared, two_d.shared_to_registers) == (32, 2)
    with pytest.raises(ValueError, match="positive"):
        traffic.tile_intensity(0, 32)
