"""Bad inputs on a real device: refused before any launch, and the GPU still works afterwards."""

import numpy as np
import pytest

import gemmlab
from gemmlab.measure import probes
from gemmlab.models import verify
from gemmlab.runtime import device
from gemmlab.gemm.checks import DeviceMemoryError, LaunchConfigError
from gemmlab.gemm.base import GemmKernel

NAIVE = gemmlab.kernels()["naive"]


def test_beyond_device_memory():
    total = device.current().total_memory
    n = int((total / 4 / 2) ** 0.5) + 1          # A and B alone need more than the whole device
    A = np.broadcast_to(np.float32(1), (n, n))
    with pytest.raises(DeviceMemoryError, match=r"needs [\d,.]+ GiB of device memory, but only [\d,.]+ GiB is free"):
        NAIVE(A, A)


def test_block_beyond_device_limits():
    too_big = GemmKernel("tiled64", 2, "02_tiled.cu", "gemm_tiled_32", (64, 64, 1), (64, 64))
    A = np.ones((64, 64), np.float32)
    limit = device.current().max_threads_per_block
    with pytest.raises(LaunchConfigError, match=rf"has 4096 threads; .* at most {limit} per block"):
        too_big(A, A)
    with pytest.raises(LaunchConfigError, match=r"x = 2048 exceeds this device's limit of 1024"):
        probes.hello_ids(blocks=1, threads=2048)


@pytest.mark.parametrize("bad,exc,msg", [
    (lambda A: A.astype(np.float64), TypeError, "dtype float64"),
    (lambda A: A[0], ValueError, "2-D"),
    (lambda A: A.T, ValueError, "C-contiguous"),
    (lambda A: A[:, :0], ValueError, "K = 0"),
])
def test_bad_inputs_raise_and_gpu_still_works(bad, exc, msg):
    A, B = verify.random_operands(8, 8, 8)
    with pytest.raises(exc, match=msg):
        NAIVE(bad(A), B if msg != "K = 0" else B[:0])
    assert verify.check(NAIVE(A, B), A, B).ok
