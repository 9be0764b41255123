"""Chapter 8's tensor-core kernels without a GPU: their configurations, the operands' conversion and
padding, the claim that 16-bit products are exact in FP32, and the refusals a reader meets first."""

import re

import numpy as np
import pytest

from gemmlab import compile_units, device, mma, tc_configs, tensor_gemm, verify
from gemmlab.tc_configs import CONFIGS, TcConfig


def test_every_configuration_is_valid_named_once_and_compiled():
    assert len({c.function for c in CONFIGS}) == len(CONFIGS)
    assert all(not c.problems() for c in CONFIGS)
    text = compile_units.unit(tc_configs.SOURCE).text
    for c in CONFIGS:
        for suffix in ("f16", "bf16"):
            assert re.search(rf"void __launch_bounds__\({c.threads}, {c.MIN_BLOCKS}\)\n{c.function}_{suffix}\(", text)
    assert compile_units.unit(tc_configs.SOURCE).config_sha            # the generated part is in the provenance


def test_the_ladder_steps_are_one_change_apart():
    """Each of the first five configurations switches on one technique (or one larger tile) over the one before."""
    steps = CONFIGS[:6]
    for before, after in zip(steps, steps[1:]):
        diff = [f for f in ("BN", "STAGES", "SWIZZLE", "ASYNC", "PREFETCH") if getattr(before, f) != getattr(after, f)]
        assert len(diff) == 1, (before.function, after.function, diff)


@pytest.mark.parametrize("bad, why", [
    (TcConfig(128, 128, 16, 64, 64, 2, True, True), "BK of 32"),
    (TcConfig(128, 128, 32, 48, 64, 2, True, True), "multiples of the warp tile"),
    (TcConfig(128, 128, 32, 64, 64, 3, True, False), "only with ASYNC"),
    (TcConfig(64, 64, 32, 16, 16, 2, True, True), "whole 16-byte chunks"),
])
def test_bad_configurations_are_refused_before_compiling(bad, why):
    assert any(why in p for p in bad.problems())
    with pytest.raises(ValueError, match=why):
        bad.entry_points()
    with pytest.raises(KeyError, match="not a configuration"):
        tc_configs.config("tc_mma_nothing")


def test_shared_memory_of_each_configuration():
    c = tc_configs.config("tc_mma_128x256x32_64x64_s4_swz_async_pf")
    assert c.shared_bytes == 4 * 2 * (128 * 32 + 32 * 256) == 98_304 and c.threads == 256
    assert max(c.shared_bytes for c in CONFIGS) <= device.H200.shared_per_block_optin


@pytest.mark.parametrize("precision", ["FP16", "BF16"])
def test_operands_are_rounded_and_padded_with_zeros(precision):
    A, _ = verify.random_operands(5, 3, 9, seed=2)
    D = tensor_gemm.to_device_format(A, precision)
    assert D.dtype == np.uint16 and D.shape == (5, 16)
    assert not D[:, 9:].any()
    back = D[:, :9].view(np.float16).astype(np.float32) if precision == "FP16" else mma.bf16_to_f32(D[:, :9])
    assert np.array_equal(back, tensor_gemm.rounded(A, precision))
    unit = {"FP16": 2.0**-11, "BF16": 2.0**-8}[precision]
    assert np.all(np.abs(back - A) <= unit * np.abs(A))                 # round to nearest: within half an ulp


@pytest.mark.parametrize("precision", ["FP16", "BF16"])
def test_products_of_16_bit_values_are_exact_in_fp32(precision):
    """Why the kernels are checked against the rounded inputs with chapter 1's FP32 bound: a product of two
    FP16 (11 significant bits) or BF16 (8) values needs at most 22 bits, and FP32 has 24."""
    a = tensor_gemm.rounded(np.random.default_rng(0).standard_normal(10_000).astype(np.float32), precision)
    b = tensor_gemm.rounded(np.random.default_rng(1).standard_normal(10_000).astype(np.float32), precision)
    assert np.array_equal((a * b).astype(np.float64), a.astype(np.float64) * b.astype(np.float64))


def test_bf16_rounding_keeps_nan_and_inf():
    x = np.array([np.nan, np.inf, -np.inf, 1.0, np.finfo(np.float32).max], np.float32)
    back = mma.bf16_to_f32(mma.to_bf16_bits(x))
    assert np.isnan(back[0]) and back[1] == np.inf and back[2] == -np.inf and back[3] == 1.0
    assert np.isinf(back[4])                                            # past BF16's largest value: rounds to Inf


def test_which_gpus_have_which_instruction():
    assert tensor_gemm.supports("FP16", device.T4.compute_capability)
    assert not tensor_gemm.supports("BF16", device.T4.compute_capability)
    assert tensor_gemm.supports("BF16", device.H200.compute_capability)
    with pytest.raises(ValueError, match="FP16, BF16"):
        tensor_gemm.supports("TF32", (9, 0))


def test_a_t4_is_refused_bf16_and_the_large_tiles_with_a_reason():
    A, B = verify.random_operands(64, 64, 64)
    with pytest.raises(RuntimeError, match="no BF16 tensor-core instruction"):
        tensor_gemm.wmma_kernel("BF16").check(A, B, device.T4, 1 << 34)
    big = tensor_gemm.mma_kernel(tc_configs.config("tc_mma_128x256x32_64x64_s4_swz_async_pf"))
    with pytest.raises(ValueError, match="98,304 bytes of shared memory"):
        big.check(A, B, device.T4, 1 << 34)
    assert tensor_gemm.mma_kernel(CONFIGS[3]).check(A, B, device.T4, 1 << 34) == (64, 64, 64)
    with pytest.raises(ValueError, match="FP16, BF16"):
        tensor_gemm.mma_kernel(CONFIGS[0], "FP8")
