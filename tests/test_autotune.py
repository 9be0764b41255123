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
    configs = autotune.search_space(ablations=True)
    assert {c.function for c in configs} == entries and len(configs) == len(entries) >= 4
    tuned = autotune.search_space()
    assert 4 <= len(tuned) < len(configs) and not any(c.is_ablation for c in tuned)


def test_ablations_switch_off_one_technique_each():
    """Chapter 7's ablations: each differs from the same tuned entry in exactly one switch."""
    ablations = [c for c in autotune.search_space(ablations=True) if c.is_ablation]
    base = autotune.config("gemm_fast_128x128x16_32x64_8x8")
    switches = ("VEC", "SKEW", "STAGES", "GROUP")
    assert len(ablations) == len(switches)
    for c in ablations:
        differ = [f for f in switches + ("BM", "BN", "BK", "WM", "WN", "TM", "TN", "THREADS", "ASYNC")
                  if getattr(c, f) != getattr(base, f)]
        assert len(differ) == 1 and differ[0] in switches, (c.function, differ)
    assert {c.function.rsplit("_", 1)[1] for c in ablations} == {"scalar", "padded", "onestage", "rowmajor"}


def test_config_lookup():
    assert autotune.config("gemm_fast_128x128x16_32x64_8x8_async").ASYNC
    with pytest.raises(KeyError, match="not an entry point"):
        autotune.config("gemm_fast_nope")


@pytest.mark.parametrize("config", autotune.search_space(ablations=True), ids=lambda c: c.function)
def test_every_compiled_configuration_is_valid(config):
    assert config.validate() is config
    assert config.shared_bytes <= 48 * 1024 and config.THREADS == config.warps * 32


@pytest.mark.parametrize("kwargs,message", [
    (dict(BM=128, BN=128, BK=8, WM=32, WN=32, TM=8, TN=8, THREADS=512), "exactly 32 thread tiles"),
    (dict(BM=128, BN=128, BK=8, WM=32, WN=64, TM=6, TN=8, THREADS=256), "4x4 sub-blocks"),
    (dict(BM=128, BN=128, BK=8, WM=48, WN=64, TM=8, TN=8, THREADS=256), "must divide the block tile"),
    (dict(BM=128, BN=128, BK=8, WM=32, WN=64, TM=8, TN=8, THREADS=128), "THREADS = 128 must be 32 per warp tile"),
    (dict(BM=128, BN=128, BK=6, WM=32, WN=64, TM=8, TN=8, THREADS=256), "multiple of 4"),
    (dict(BM=256, BN=256, BK=16, WM=64, WN=64, TM=8, TN=16, THREADS=512), "65,792 bytes of shared memory"),
    (dict(BM=128, BN=128, BK=16, WM=32, WN=64, TM=8, TN=8, THREADS=256, STAGES=3), "STAGES = 3"),
    (dict(BM=128, BN=128, BK=16, WM=32, WN=64, TM=8, TN=8, THREADS=256, STAGES=1, ASYNC=True), "ASYNC needs STAGES = 2"),
    (dict(BM=128, BN=128, BK=64, WM=32, WN=64, TM=8, TN=8, THREADS=256, STAGES=1), "BK <= 32"),
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
    __global__ void __launch_bounds__(256, 2) gemm_fast_y(const float* A, const float* B, float* C, int M, int N, int K)
    { fast::gemm<128, 128, 16, 64, 32, 8, 8, 256, 1, 15, 8, 2, true, false>(A, B, C, M, N, K); }
    }"""
    (c,) = autotune.search_space(text)
    assert (c.function, c.BM, c.BK, c.WM, c.WN, c.THREADS, c.PHASES, c.STAGES, c.VEC, c.SKEW) == (
        "gemm_fast_x", 128, 16, 64, 32, 256, 2, 2, True, True)
    x, y = autotune.search_space(text, ablations=True)
    assert y.function == "gemm_fast_y" and y.SKEW is False and y.is_ablation and y.shared_bytes == 2 * 16 * (132 + 128) * 4
    assert x.shared_bytes == 2 * (4 * (4 * 128 + 8) + 16 * 128) * 4     # skewed: 8 floats after every 4 rows


def test_too_many_template_arguments_are_refused():
    text = "__global__ void __launch_bounds__(256) gemm_fast_z(const float* A) { fast::gemm<" + ", ".join(["1"] * 16) + ">(A); }"
    with pytest.raises(ValueError, match="16 template arguments"):
        autotune.search_space(text)
