"""Input checks: every bad input is refused before a launch, with a message naming problem and value."""

import numpy as np
import pytest

from gemmlab.gemm import checks, registry
from gemmlab.measure import probes
from gemmlab.models import limits
from gemmlab.runtime import device
from gemmlab.gemm.checks import DeviceMemoryError, LaunchConfigError
from gemmlab.gemm.base import GemmKernel

TILED = registry.kernels()["tiled32"]
GiB = 2**30


def ok(M=4, N=5, K=3):
    return np.ones((M, K), np.float32), np.ones((K, N), np.float32)


def check(A, B, spec=device.H200, free=64 * GiB, kernel=TILED):
    return kernel.check(A, B, spec, free)


def test_valid_input_passes_and_gives_sizes():
    assert check(*ok(4, 5, 3)) == (4, 5, 3)


def test_wrong_dtype_is_named():
    A, B = ok()
    with pytest.raises(TypeError, match=r"A has dtype float64; .*float32"):
        check(A.astype(np.float64), B)
    with pytest.raises(TypeError, match=r"B has dtype int32"):
        check(A, B.astype(np.int32))


def test_not_an_array():
    with pytest.raises(TypeError, match=r"A must be a NumPy array, got list"):
        check([[1.0]], ok()[1])


def test_not_two_dimensional():
    A, B = ok()
    with pytest.raises(ValueError, match=r"A must be a 2-D matrix, got 1-D with shape \(12,\)"):
        check(A.ravel(), B)
    with pytest.raises(ValueError, match=r"B must be a 2-D matrix, got 3-D"):
        check(A, B[None])


def test_non_contiguous_is_named():
    A, B = ok(4, 4, 4)
    with pytest.raises(ValueError, match=r"A is not C-contiguous \(strides \(4, 16\)"):
        check(A.T, B)
    with pytest.raises(ValueError, match=r"B is not C-contiguous"):
        check(A, np.ones((4, 8), np.float32)[:, ::2])


def test_mismatched_inner_dimension():
    with pytest.raises(ValueError, match=r"inner dimensions differ: A is 4x3 and B is 7x5 .*A.shape\[1\] = 3 must equal B.shape\[0\] = 7"):
        check(np.ones((4, 3), np.float32), np.ones((7, 5), np.float32))


@pytest.mark.parametrize("M,N,K,dim", [(0, 5, 3, "M"), (4, 0, 3, "N"), (4, 5, 0, "K")])
def test_zero_dimension(M, N, K, dim):
    with pytest.raises(ValueError, match=rf"{dim} = 0: every dimension must be at least 1"):
        check(np.ones((M, K), np.float32), np.ones((K, N), np.float32))


def test_size_beyond_device_memory():
    # Zero-stride views: shapes of a 480 GB problem without allocating it.
    A = np.broadcast_to(np.float32(1), (200_000, 200_000))
    B = np.broadcast_to(np.float32(1), (200_000, 200_000))
    with pytest.raises(DeviceMemoryError, match=r"needs 447.03 GiB of device memory, but only 64.00 GiB is free"):
        check(A, B)


def test_memory_check_counts_A_B_and_C():
    A, B = ok(1024, 1024, 1024)                 # 3 x 4 MiB
    check(A, B, free=12 * 2**20)                # exactly fits
    with pytest.raises(DeviceMemoryError, match=r"0.01 GiB"):
        check(A, B, free=12 * 2**20 - 1)


def test_block_beyond_device_threads():
    big = GemmKernel("tiled64", 2, "02_tiled.cu", "none", (64, 64, 1), (64, 64))
    with pytest.raises(LaunchConfigError, match=r"block \(64, 64, 1\) has 4096 threads; .*at most 1024 per block"):
        check(*ok(), kernel=big)


def test_block_beyond_device_dimension():
    with pytest.raises(LaunchConfigError, match=r"block \(1, 1, 128\): z = 128 exceeds this device's limit of 64"):
        checks.check_block((1, 1, 128), device.T4)
    with pytest.raises(LaunchConfigError, match=r"three positive sizes"):
        checks.check_block((0, 1, 1), device.T4)


def test_grid_beyond_device():
    M = 65535 * 32 + 1                           # one block row too many for gridDim.y
    A = np.broadcast_to(np.float32(1), (M, 1))
    B = np.ones((1, 1), np.float32)
    with pytest.raises(LaunchConfigError, match=r"grid \(1, 65536, 1\): y = 65,536 blocks exceeds this device's limit of 65,535"):
        check(A, B)


def test_kernels_are_listed_in_chapter_order_without_a_gpu():
    ks = registry.kernels()
    assert list(ks) == ["naive", "tiled32", "tiled16", "tiled8", "regtile1d", "regtile2d", "regtile2d_t",
                        "regtile2d_t_k16", "fast", "fast_auto"]
    assert [k.chapter for k in ks.values()] == sorted(k.chapter for k in ks.values())
    assert all(callable(k) for k in ks.values())


def test_grid_covers_c():
    k = registry.kernels()["tiled16"]
    assert k.grid(M=33, N=16) == (1, 3, 1)
    assert k.grid(M=1, N=17) == (2, 1, 1)


def test_extra_shared_memory_is_checked_against_the_device():
    checks.check_extra_shared("tiled32", 110_000, 8192, device.H200)                  # fits with the opt-in
    with pytest.raises(LaunchConfigError, match="above this GPU's 65,536"):
        checks.check_extra_shared("tiled32", 60_000, 8192, device.T4)
    with pytest.raises(LaunchConfigError, match="must be 0 or more"):
        checks.check_extra_shared("tiled32", -1, 8192, device.H200)


def test_bank_probe_refuses_empty_launches_before_looking_for_a_gpu():
    with pytest.raises(ValueError, match="at least 1"):
        probes.bank_probe(0, 32, True)


def test_shared_memory_above_48_kib_needs_the_opt_in():
    assert not limits.needs_shared_opt_in(8192, 40 * 1024)
    assert limits.needs_shared_opt_in(8192, 40 * 1024 + 1)
