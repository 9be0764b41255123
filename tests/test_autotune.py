"""The fast kernel's search space: read from kernels/07_fast.cu, every entry valid, bad ones refused
with a message that says why."""

import re

import pytest

from gemmlab import autotune
from gemmlab.provenance import KERNELS_DIR

FastConfig = autotune.FastConfig


def test_search_space_is_every_entry_point_of_the_file():
    text = (KERNELS_DIR / autotune.SOURCE).read_text()
    entries = set(re.findall(r"__global__\s+void\s+__launch_bounds__\([^)]*\)\s+(gemm_fast_\w+)\s*\(", text))
    configs = autotune.search_space()
    assert {c.function for c in configs} == entries and len(configs) == len(entries) >= 4


@pytest.mark.parametrize("config", autotune.search_space(), ids=lambda c: c.function)
def test_every_compiled_configuration_is_valid(config):
    assert config.validate() is config
    assert config.shared_bytes <= 48 * 1024 and config.THREADS == config.warps * 32


@pytest.mark.parametrize("kwargs,message", [
    (dict(BM=128, BN=128, BK=8, WM=32, WN=32, TM=8, TN=8, THREADS=512), "exactly 32 thread tiles"),
    (dict(BM=128, BN=128, BK=8, WM=32, WN=64, TM=6, TN=8, THREADS=256), "4x4 sub-blocks"),
    (dict(BM=128, BN=128, BK=8, WM=48, WN=64, TM=8, TN=8, THREADS=256), "must divide the block tile"),
    (dict(BM=128, BN=128, BK=8, WM=32, WN=64, TM=8, TN=8, THREADS=128), "THREADS = 128 must be 32 per warp tile"),
    (dict(BM=128, BN=128, BK=6, WM=32, WN=64, TM=8, TN=8, THREADS=256), "multiple of 4"),
    (dict(BM=256, BN=256, BK=16, WM=64, WN=64, TM=8, TN=16, THREADS=512), "66,048 bytes of shared memory"),
    (dict(BM=128, BN=128, BK=8, WM=32, WN=64, TM=8, TN=8, THREADS=256, PHASES=3), "PHASES = 3"),
    (dict(BM=128, BN=128, BK=8, WM=32, WN=64, TM=8, TN=8, THREADS=256, STORE=9), "STORE = 9"),
    (dict(BM=256, BN=256, BK=8, WM=128, WN=128, TM=16, TN=32, THREADS=128), "registers"),
    (dict(BM=0, BN=128, BK=8, WM=32, WN=64, TM=8, TN=8, THREADS=256), "positive"),
])
def test_invalid_configurations_are_refused_with_the_reason(kwargs, message):
    config = FastConfig(**kwargs)
    assert any(message in p for p in config.problems()), config.problems()
    with pytest.raises(ValueError, match="invalid fast-kernel configuration"):
        config.validate()


def test_search_space_reads_template_arguments():
    text = """
    extern "C" {
    __global__ void __launch_bounds__(256, 2) gemm_fast_x(const float* A, const float* B, float* C, int M, int N, int K)
    { fast::gemm<128, 128, 16, 64, 32, 8, 8, 256, 2, 3, 8>(A, B, C, M, N, K); }
    }"""
    (c,) = autotune.search_space(text)
    assert (c.function, c.BM, c.BK, c.WM, c.WN, c.THREADS, c.PHASES, c.ORDER) == ("gemm_fast_x", 128, 16, 64, 32, 256, 2, 0)
