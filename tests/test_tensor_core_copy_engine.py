"""Chapter 8's Hopper step (gemmlab.gemm.tensor_tma, tc_tma_ws in kernels/08_tensor_core.cu) without a GPU: its compile unit
of its own (the file's sm_90a region, chapter 9's helpers included, provenance that notices either file changing),
the registry, the refusals on other GPUs, its tensor maps, and the claim that the copy engine's swizzles are the
chapter's own for rows of 64 and 128 bytes (so ldmatrix reads the engine's tiles with chapter 8's addresses)."""

import re

import pytest

import nvcc_cache
from gemmlab.gemm import registry, tc_configs, tensor_cores, tensor_tma, units
from gemmlab.models import hopper, mma
from gemmlab.runtime import compiler, device, provenance

CONFIG = tc_configs.TMA_WS


def test_the_step_has_a_unit_of_its_own_for_sm_90a():
    unit = tensor_tma.unit()
    assert unit.path.name == tc_configs.SOURCE and unit.arch_specific == "sm_90a"
    assert unit.options == ["-DTC_TMA_WS=1"] and "#ifdef TC_TMA_WS" in unit.file_text
    assert f"// includes 09_hopper.cu sha256:{provenance.file_sha('09_hopper.cu')}" in unit.generated
    assert {f"{CONFIG.function}_{s}" for s in ("f16", "bf16")} == set(
        re.findall(r'extern "C" __global__ void __launch_bounds__\(384, 1\)\n(\w+)\(', unit.generated))
    assert unit not in units.all_units()                      # the course unit of the file compiles for every GPU
    with pytest.raises(KeyError, match="no unit of its own"):
        units.arch_unit("07_fast.cu", "sm_90a")


def test_provenance_tells_the_two_units_of_the_file_apart():
    hopper_unit, course = tensor_tma.unit(), units.unit(tc_configs.SOURCE)
    assert hopper_unit.config_sha != course.config_sha
    assert units.stale(hopper_unit.provenance("sm_90a")) == []
    assert units.stale(course.provenance("sm_90")) == []
    [problem] = units.stale(course.provenance("sm_90a"))       # the wrong unit's configuration for sm_90a
    assert f"config:{hopper_unit.config_sha}" in problem


def test_the_registry_lists_the_step_for_16_bit_inputs():
    for p in CONFIG.precisions:
        [(name, k)] = registry.tma_kernels(p).items()
        assert name == f"tc_tma_{tensor_cores.PRECISIONS[p]}" and k.name == name and k.precision == p
        assert k.entry_point == f"tc_tma_ws_k64_s4_{tensor_cores.PRECISIONS[p]}" and k.chapter == 8
        assert k.block == (384, 1, 1) and k.tile == (128, 256) and k.dynamic_shared == 4 * 384 * 64 * 2 + 1024
        assert registry.lookup(name) is not None and name in registry.by_precision(p)
        names = list(registry.by_precision(p))
        assert names.index(name) == len(registry.tensor_kernels(p))  # after chapter 8's ladder, before chapter 9's
    assert registry.tma_kernels("TF32") == {}
    with pytest.raises(ValueError, match="takes FP16 or BF16 inputs"):
        tensor_tma.tma_kernel("TF32")


@pytest.mark.parametrize("spec", [device.T4, device.A100], ids=["T4", "A100"])
def test_other_gpus_are_told_why_in_one_sentence(spec):
    why = tensor_tma.tma_kernel("FP16").unavailable_on(spec)
    assert why.startswith("tc_tma_ws_k64_s4_f16 uses sm_90a instructions") and spec.name in why
    assert why.count(". ") == 0 and why.endswith(".")


def test_hopper_runs_it_unless_the_code_is_for_another_architecture(monkeypatch):
    k = tensor_tma.tma_kernel("BF16")
    monkeypatch.delenv(compiler.ARCH_VARIABLE, raising=False)
    assert k.unavailable_on(device.H200) is None and k.unavailable_on(device.H100) is None
    monkeypatch.setenv(compiler.ARCH_VARIABLE, "compute_75")
    assert "cannot be compiled under GEMMLAB_ARCH=compute_75" in k.unavailable_on(device.H200)


@pytest.mark.parametrize("M, N, K", [(1, 1, 1), (300, 520, 1234), (4096, 4100, 4104), (7, 9, 3)])
@pytest.mark.parametrize("precision", CONFIG.precisions)
def test_the_tensor_maps_are_valid_and_fill_a_stage(M, N, K, precision):
    """Every size gives maps the copy engine takes (rows padded to 16 bytes), and one A box plus four B boxes are
    exactly the stage the full barrier expects."""
    a, b = tensor_tma.tensor_maps(CONFIG, precision, M, N, K)
    assert a.problems() == [] and b.problems() == []
    assert a.box_dims == (CONFIG.BK, CONFIG.BM) and b.box_dims == (64, CONFIG.BK)
    assert a.box_bytes + 4 * b.box_bytes == (CONFIG.BM + CONFIG.BN) * CONFIG.BK * 2
    assert CONFIG.shared_bytes == CONFIG.STAGES * (a.box_bytes + 4 * b.box_bytes) + hopper.SWIZZLE_ATOM_BYTES


@pytest.mark.parametrize("row_bytes, swizzle", [(64, "64B"), (128, "128B")])
def test_the_engines_swizzle_is_the_chapters(row_bytes, swizzle):
    """The copy engine's 64- and 128-byte swizzles put each 16-byte chunk of such rows where chapter 8's XOR swizzle
    does (gemmlab.models.mma.swizzle_chunk), over a whole 1 KiB pattern and beyond."""
    for row in range(32):
        for chunk in range(row_bytes // 16):
            engine = hopper.swizzled_offset(row * row_bytes + 16 * chunk, swizzle)
            assert engine == row * row_bytes + 16 * mma.swizzle_chunk(row, chunk, row_bytes)


def test_the_unit_compiles_without_spills_and_fits_the_register_split(nvcc_path):
    """ptxas: no spills; 168 registers at launch (384 threads on one SM), so that setmaxnreg can give the producer
    40 and the 8 warps that multiply 232: 4 x 40 + 8 x 232 = 2,016 per thread slot of a warp, within the 2,016 that
    384 threads at 168 take (65,536 registers per SM)."""
    unit = tensor_tma.unit()
    report = {e.function: e for e in nvcc_cache.unit_build(unit, unit.arch_specific).entries()}
    for p in CONFIG.precisions:
        e = report[tensor_tma.tma_kernel(p).entry_point]
        assert (e.spill_store_bytes, e.spill_load_bytes) == (0, 0)
        assert e.registers <= 168
    assert 4 * 40 + 8 * 232 <= 12 * 168
