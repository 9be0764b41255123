"""Chapter 8's tensor-core kernels without a GPU: their configurations, the operands' conversion and
padding, the claim that 16-bit products are exact in FP32, and the refusals a reader meets first."""

import re

import numpy as np
import pytest

from gemmlab.gemm import tc_configs, tensor_cores, units
from gemmlab.models import mma, verify
from gemmlab.runtime import device, provenance
from gemmlab.gemm.tc_configs import CONFIGS, TcConfig


def test_every_configuration_is_valid_named_once_and_compiled():
    assert len({c.function for c in CONFIGS}) == len(CONFIGS)
    assert all(not c.problems() for c in CONFIGS)
    text = units.unit(tc_configs.SOURCE).text
    for c in CONFIGS:
        for p, suffix in tc_configs.SUFFIXES.items():
            found = re.search(rf"void __launch_bounds__\({c.threads}, {c.MIN_BLOCKS}\)\n{c.function}_{suffix}\(", text)
            assert bool(found) == (p in c.precisions), (c.function, p)
    assert {p for c in CONFIGS for p in c.precisions} == set(tc_configs.SUFFIXES)
    assert units.unit(tc_configs.SOURCE).config_sha            # the generated part is in the provenance


def test_the_ladder_steps_are_one_change_apart():
    """Each step of the ladder up to the wide tile switches on one technique (or one larger tile) over the one before,
    and the variant that spreads the copies is one change from the wide tile."""
    steps = (tc_configs.MMA, tc_configs.SWIZZLE, tc_configs.ASYNC, tc_configs.STAGES, tc_configs.PREFETCH, tc_configs.WIDE,
             tc_configs.SPREAD)
    for before, after in zip(steps, steps[1:]):
        diff = [f for f in ("BN", "STAGES", "SWIZZLE", "ASYNC", "PREFETCH", "SPREAD") if getattr(before, f) != getattr(after, f)]
        assert len(diff) == 1, (before.function, after.function, diff)


@pytest.mark.parametrize("bad, why", [
    (TcConfig(128, 128, 16, 64, 64, 2, True, True), "multiple of 64"),
    (TcConfig(128, 128, 8, 64, 64, 2, True, True, precisions=("TF32",)), "TF32: a row of BK = 8"),
    (TcConfig(128, 128, 32, 64, 64, 2, True, True, False, True), "part of the PREFETCH loop"),
    (TcConfig(128, 128, 32, 64, 64, 2, True, True, precisions=("FP8",)), "precisions must be"),
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
    assert c.shared_bytes() == 4 * 2 * (128 * 32 + 32 * 256) == 98_304 and c.threads == 256
    assert c.ring((7, 5)) == 2 and c.ring((9, 0)) == 4 and c.shared_bytes("FP16", (7, 5)) == 49_152
    assert c.shared_bytes("TF32") == 2 * c.shared_bytes("BF16")
    assert max(c.shared_bytes(p) for c in CONFIGS for p in c.precisions) <= device.H200.shared_per_block_optin


@pytest.mark.parametrize("precision", ["FP16", "BF16", "TF32"])
def test_operands_are_rounded_and_padded_with_zeros(precision):
    A, _ = verify.random_operands(5, 3, 9, seed=2)
    D = tensor_cores.to_device_format(A, precision)
    assert D.shape == ((5, 16) if precision != "TF32" else (5, 12))
    assert D.dtype == (np.float32 if precision == "TF32" else np.uint16)
    assert not D[:, 9:].any()
    back = {"FP16": lambda d: d.view(np.float16).astype(np.float32), "BF16": mma.bf16_to_f32,
            "TF32": lambda d: d}[precision](D[:, :9])
    assert np.array_equal(back, tensor_cores.rounded(A, precision))
    unit = {"FP16": 2.0**-11, "BF16": 2.0**-8, "TF32": 2.0**-11}[precision]
    assert np.all(np.abs(back - A) <= unit * np.abs(A))                 # round to nearest: within half an ulp
    if precision == "TF32":
        assert not (D.view(np.uint32) & 0x1FFF).any()                   # 10 mantissa bits: the low 13 are zero


def test_tf32_kernels_take_b_transposed():
    A, B = verify.random_operands(3, 5, 7, seed=1)
    a, b = tensor_cores.device_operands(A, B, "TF32")
    assert a.shape == (3, 8) and b.shape == (5, 8)
    assert np.array_equal(b[:, :7], mma.to_tf32(B.T))
    a16, b16 = tensor_cores.device_operands(A, B, "FP16")
    assert b16.shape == (7, 8)


def test_tf32_rounding_is_to_nearest_even_and_keeps_nan_and_inf():
    one = np.float32(1.0)
    ulp = np.float32(2.0**-10)
    x = np.array([one + ulp / 2, one + 3 * ulp / 2, one + ulp / 2 + 2.0**-20, np.nan, -np.inf,
                  np.finfo(np.float32).max], np.float32)
    r = mma.to_tf32(x)
    assert r[0] == one and r[1] == one + 2 * ulp and r[2] == one + ulp      # ties to even, else nearest
    assert np.isnan(r[3]) and r[4] == -np.inf and np.isinf(r[5])


@pytest.mark.parametrize("precision", ["FP16", "BF16", "TF32"])
def test_products_of_16_bit_values_are_exact_in_fp32(precision):
    """Why the kernels are checked against the rounded inputs with chapter 1's FP32 bound: a product of two
    FP16 or TF32 (11 significant bits) or BF16 (8) values needs at most 22 bits, and FP32 has 24."""
    a = tensor_cores.rounded(np.random.default_rng(0).standard_normal(10_000).astype(np.float32), precision)
    b = tensor_cores.rounded(np.random.default_rng(1).standard_normal(10_000).astype(np.float32), precision)
    assert np.array_equal((a * b).astype(np.float64), a.astype(np.float64) * b.astype(np.float64))


def test_bf16_rounding_keeps_nan_and_inf():
    x = np.array([np.nan, np.inf, -np.inf, 1.0, np.finfo(np.float32).max], np.float32)
    back = mma.bf16_to_f32(mma.to_bf16_bits(x))
    assert np.isnan(back[0]) and back[1] == np.inf and back[2] == -np.inf and back[3] == 1.0
    assert np.isinf(back[4])                                            # past BF16's largest value: rounds to Inf


def test_which_gpus_have_which_instruction():
    assert tensor_cores.supports("FP16", device.T4.compute_capability)
    assert not tensor_cores.supports("BF16", device.T4.compute_capability)
    assert tensor_cores.supports("BF16", device.H200.compute_capability)
    assert not tensor_cores.supports("TF32", device.T4.compute_capability)
    assert tensor_cores.supports("TF32", device.H200.compute_capability)
    with pytest.raises(ValueError, match="FP16, BF16, TF32"):
        tensor_cores.supports("FP8", (9, 0))


def test_a_t4_is_refused_bf16_and_the_large_tiles_with_a_reason():
    A, B = verify.random_operands(64, 64, 64)
    with pytest.raises(RuntimeError, match="no BF16 tensor-core instruction"):
        tensor_cores.wmma_kernel("BF16").check(A, B, device.T4, 1 << 34)
    # The best kernel's four stages are two on sm_75 (no cp.async): 48 KiB, which a T4 allows; 64-deep tiles do not fit.
    best = tensor_cores.mma_kernel(tc_configs.config("tc_mma_128x256x32_64x64_s4_swz_async_pf"))
    assert best.unavailable_on(device.T4) is None and best.check(A, B, device.T4, 1 << 34) == (64, 64, 64)
    deep = tensor_cores.mma_kernel(tc_configs.config("tc_mma_128x256x64_64x64_s3_swz_async_pf"))
    with pytest.raises(ValueError, match="98,304 bytes of shared memory"):
        deep.check(A, B, device.T4, 1 << 34)
    assert tensor_cores.mma_kernel(tc_configs.STAGES).check(A, B, device.T4, 1 << 34) == (64, 64, 64)
    with pytest.raises(ValueError, match="FP16, BF16"):
        tensor_cores.mma_kernel(tc_configs.MMA, "FP8")
    with pytest.raises(ValueError, match="compiled for FP16, BF16 inputs, not TF32"):
        tensor_cores.mma_kernel(tc_configs.MMA, "TF32")
    with pytest.raises(ValueError, match="WMMA kernel takes FP16 or BF16"):
        tensor_cores.wmma_kernel("TF32")
    tf32 = next(c for c in CONFIGS if c.precisions == ("TF32",))
    with pytest.raises(RuntimeError, match="no TF32 tensor-core instruction"):
        tensor_cores.mma_kernel(tf32, "TF32").check(A, B, device.T4, 1 << 34)


def test_tensor_peaks_match_the_datasheets():
    """The per-SM rates times SMs and clock give the datasheets' dense peaks (FP32 sums): T4 65, A100 312 and
    156 (TF32), H100/H200 989 at the 1.83 GHz the datasheet assumes; none where the GPU has no instruction."""
    from dataclasses import replace
    assert device.peak_tensor_flops(device.T4, "FP16") / 1e12 == pytest.approx(65.1, abs=0.2)
    assert device.peak_tensor_flops(device.T4, "BF16") is None
    assert device.peak_tensor_flops(device.A100, "FP16") / 1e12 == pytest.approx(311.9, abs=0.5)
    assert device.peak_tensor_flops(device.A100, "TF32") / 1e12 == pytest.approx(156.0, abs=0.5)
    h = replace(device.H200, sm_clock_khz=1_830_000)
    assert device.peak_tensor_flops(h, "BF16") / 1e12 == pytest.approx(989.4, abs=1.0)
    assert device.peak_tensor_flops(h, "TF32") / 1e12 == pytest.approx(494.7, abs=0.5)


def test_chapter_8_ladders_by_precision():
    from gemmlab.gemm import registry
    f16, tf32 = registry.tensor_kernels("FP16"), registry.tensor_kernels("TF32")
    steps_16 = (tc_configs.MMA, tc_configs.SWIZZLE, tc_configs.ASYNC, tc_configs.STAGES, tc_configs.PREFETCH, tc_configs.WIDE)
    assert list(f16)[0] == "tc_wmma_f16" and list(f16)[-2:] == ["tc_inner_f16", "tc_tail_f16"]
    assert all(k.precision == "FP16" and k.input_precision == "FP16" for k in f16.values())
    assert [k.entry_point for k in f16.values()][1:] == [f"{c.function}_f16" for c in (*steps_16, tc_configs.INNER, tc_configs.TAIL)]
    assert list(registry.tensor_kernels("BF16")) == [n.replace("_f16", "_bf16") for n in f16]
    assert list(tf32) == ["tc_prefetch_tf32", "tc_wide_tf32", "tc_inner_tf32", "tc_tail_tf32"]
    assert all("TF32" in tc_configs.config(k.function).precisions for k in tf32.values())
    known = registry.known()
    assert "tc_prefetch_bf16" in known and "tc_mma_128x256x16_64x64_s4_swz_async_pf_tf32" in known
    assert all(k.input_precision == "FP32" for k in registry.correct_kernels())
    with pytest.raises(ValueError, match="FP16, BF16, TF32"):
        registry.tensor_kernels("FP32")


def test_tensor_kernels_are_checked_against_the_rounded_inputs():
    A, B = verify.random_operands(9, 7, 5, seed=3)
    ref = tensor_cores.wmma_kernel("BF16").reference(A, B)
    assert np.array_equal(ref.A, tensor_cores.rounded(A, "BF16")) and np.array_equal(ref.B, tensor_cores.rounded(B, "BF16"))
    from gemmlab.gemm import registry
    plain = registry.lookup("naive").reference(A, B)
    assert plain.A is A


def test_error_bound_holds_and_is_reached():
    """The bound of the chapter's precision section: never exceeded by a computation that rounds the inputs
    and sums in FP32 (NumPy in float32 here), and reached (within 2%) by one product of two inputs just
    below a rounding boundary."""
    rng = np.random.default_rng(5)
    K = 2048
    A = rng.random((64, K), np.float32)          # all positive: no cancellation, the error grows fastest
    B = rng.random((K, 48), np.float32)
    exact = A.astype(np.float64) @ B.astype(np.float64)
    scale = np.abs(A).astype(np.float64) @ np.abs(B).astype(np.float64)
    assert tensor_cores.error_bound("FP32", K) == pytest.approx((K + 2) * 2.0**-24, rel=1e-3)
    for p in ("FP16", "BF16", "TF32"):
        C = tensor_cores.rounded(A, p) @ tensor_cores.rounded(B, p)         # float32 sums
        worst = np.max(np.abs(C - exact) / scale)
        assert worst <= tensor_cores.error_bound(p, K)
        u = tensor_cores.unit_roundoff(p)
        a = np.array([[1 + u * (1 - 2.0**-12)]], np.float32)             # rounds down to 1 in every format
        err = abs(float(tensor_cores.rounded(a, p)[0, 0]) ** 2 - float(a[0, 0]) ** 2) / float(a[0, 0]) ** 2
        assert 0.98 * tensor_cores.error_bound(p, 1) < err <= tensor_cores.error_bound(p, 1)
    assert tensor_cores.unit_roundoff("BF16") == 2.0**-8


def test_each_format_has_its_ceiling_probe():
    from gemmlab.measure import ceilings, probes
    for spec in (device.T4, device.A100, device.H200):
        for p in tensor_cores.PRECISIONS:
            assert ceilings.mma_form(p, spec) in probes.MMA_CEILINGS
    assert ceilings.mma_form("FP16", device.T4) == ("m16n8k8", "f16")
    assert ceilings.mma_form("BF16", device.H200) == ("m16n8k16", "bf16")


def test_the_ceiling_probe_refuses_an_unknown_form_before_the_gpu_and_reads_the_compiled_architecture(monkeypatch):
    from gemmlab.measure import probes
    from gemmlab.runtime import compiler, gpu
    monkeypatch.setattr(gpu, "cuda", lambda: pytest.fail("a form without a probe must be refused before the GPU"))
    with pytest.raises(ValueError, match="no ceiling probe for m8n8k4 f16"):
        probes.mma_probe("m8n8k4", "f16")
    assert [compiler.capability(a) for a in ("compute_75", "sm_80", "sm_90a", "sm_100f")] == [(7, 5), (8, 0), (9, 0), (10, 0)]
    assert compiler.capability("sm_75") < probes.MMA_CEILINGS["m16n8k16", "bf16"] <= compiler.capability("sm_90a")


def test_a_pycuda_kernel_s_shared_memory_limit_is_raised_once_per_size(monkeypatch):
    """Chapters 5 and 8 launch through PyCUDA with more than 48 KiB of dynamic shared memory: the limit is raised
    once for each larger size asked for, not at every launch (each attribute query and call costs microseconds)."""
    import sys
    import types

    from gemmlab.runtime import compiler

    raised = []

    class Function:
        num_regs, shared_size_bytes, local_size_bytes, max_threads_per_block = 128, 0, 0, 256

        def prepare(self, signature):
            return self

        def set_attribute(self, attribute, value):
            raised.append((attribute, value))

    fake_driver = types.SimpleNamespace(function_attribute=types.SimpleNamespace(MAX_DYNAMIC_SHARED_SIZE_BYTES="max"))
    monkeypatch.setitem(sys.modules, "pycuda", types.SimpleNamespace(driver=fake_driver))
    monkeypatch.setitem(sys.modules, "pycuda.driver", fake_driver)
    compiled = compiler.CompiledFile(types.SimpleNamespace(path=None), "sm_90", types.SimpleNamespace(get_function=lambda n: Function()))
    for shared in (0, 40_000, 163_840, 163_840, 100_000, 163_840):
        compiled.prepared("mma_gemm_fp16", "PPPiii", shared)
    assert raised == [("max", 163_840)]
    compiled.prepared("mma_gemm_fp16", "PPPiii", 200_000)
    assert raised == [("max", 163_840), ("max", 200_000)]


def test_the_shared_memory_asked_for_is_the_ring_compiled_for_the_target():
    """The kernel's ring is STAGES tiles from sm_80 on and 2 on sm_75 (RING in 08_tensor_core.cu): a launch asks for
    what the compiled ring uses, so a T4 (and GEMMLAB_ARCH=compute_75) runs the 4-stage configurations too."""
    for c in CONFIGS:
        for p in c.precisions:
            k = tensor_cores.mma_kernel(c, p)
            assert k.shared_for((9, 0)) == k.dynamic_shared == c.shared_bytes(p)
            assert k.shared_for((7, 5)) == c.shared_bytes(p, (7, 5)) == 2 * c.shared_bytes(p) // c.STAGES
    assert tensor_cores.wmma_kernel().shared_for((7, 5)) == 0
    source = (provenance.KERNELS_DIR / tc_configs.SOURCE).read_text()
    assert "constexpr int RING = STAGES;" in source and "constexpr int RING = 2;" in source
