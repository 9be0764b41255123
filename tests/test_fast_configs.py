"""The fast kernel's configurations: named in Python, every entry point generated from them, bad ones
refused with the reason, and one line enough to add a configuration everywhere."""

import dataclasses

import pytest

from gemmlab.gemm import fast_configs, registry, units
from gemmlab.gemm.fast_configs import FastConfig

FAST = fast_configs.FAST


def test_entry_points_are_generated_from_every_configuration():
    unit = units.unit(fast_configs.SOURCE)
    names = [c.function for c in fast_configs.CONFIGS]
    assert len(set(names)) == len(names) >= 4
    for c in fast_configs.CONFIGS:
        assert f"__launch_bounds__({c.THREADS}, {c.MIN_BLOCKS})\n{c.function}(" in unit.text
        assert f"fast::gemm<{c.function}_config>" in unit.text
    assert 'extern "C"' not in unit.file_text.split("namespace fast {")[1], "the file itself holds no entry points"
    tuned = fast_configs.search_space()
    assert 4 <= len(tuned) < len(fast_configs.CONFIGS) and not any(c.is_ablation for c in tuned)


def test_generated_constants_are_the_configuration():
    text = FAST.entry_point()
    assert "BM = 128, BN = 128, BK = 16, WM = 32, WN = 64, TM = 8, TN = 8, THREADS = 256, STORE = 15, GROUP = 8, STAGES = 2" in text
    assert "VEC = true, SKEW = true, ASYNC = false" in text
    assert FAST.function == "gemm_fast_128x128x16_32x64_8x8" and FAST.THREADS == 256


def test_ablations_switch_off_one_technique_each():
    """Chapter 7's ablations: each differs from FAST in exactly one switch, and its name says which."""
    ablations = [c for c in fast_configs.CONFIGS if c.is_ablation]
    switches = ("VEC", "SKEW", "STAGES", "GROUP", "EDGES_FIRST")
    assert len(ablations) == len(switches)
    for c in ablations:
        differ = [f.name for f in dataclasses.fields(FastConfig) if getattr(c, f.name) != getattr(FAST, f.name)]
        assert len(differ) == 1 and differ[0] in switches, (c.function, differ)
        assert c.function.startswith(FAST.function + "_")
    assert {c.function.rsplit("_", 1)[1] for c in ablations} == {"scalar", "padded", "onestage", "rowmajor", "edgeslast"}


def test_config_lookup():
    assert fast_configs.config("gemm_fast_128x128x16_32x64_8x8_async").ASYNC
    with pytest.raises(KeyError, match="not an entry point"):
        fast_configs.config("gemm_fast_nope")


@pytest.mark.parametrize("config", fast_configs.CONFIGS, ids=lambda c: c.function)
def test_every_configuration_is_valid(config):
    assert config.validate() is config and config.problems() == []
    assert config.register_floor <= 255


@pytest.mark.parametrize("kwargs,message", [
    (dict(BM=128, BN=128, BK=8, WM=32, WN=32, TM=8, TN=8), "exactly 32 thread tiles"),
    (dict(BM=128, BN=128, BK=8, WM=32, WN=64, TM=6, TN=8), "4x4 sub-blocks"),
    (dict(BM=128, BN=128, BK=8, WM=48, WN=64, TM=8, TN=8), "must divide the block tile"),
    (dict(BM=128, BN=128, BK=6, WM=32, WN=64, TM=8, TN=8), "multiple of 4"),
    (dict(BM=256, BN=256, BK=16, WM=64, WN=64, TM=8, TN=16), "65,792 bytes of shared memory"),
    (dict(BM=256, BN=256, BK=8, WM=32, WN=32, TM=4, TN=8), "above 1024 per block"),
    (dict(BM=128, BN=128, BK=16, WM=32, WN=64, TM=8, TN=8, STAGES=3), "STAGES = 3"),
    (dict(BM=128, BN=128, BK=16, WM=32, WN=64, TM=8, TN=8, STAGES=1, ASYNC=True), "ASYNC needs STAGES = 2"),
    (dict(BM=128, BN=128, BK=64, WM=32, WN=64, TM=8, TN=8, STAGES=1), "BK <= 32"),
    (dict(BM=128, BN=128, BK=8, WM=32, WN=64, TM=8, TN=8, STORE=9), "STORE = 9"),
    (dict(BM=0, BN=128, BK=8, WM=32, WN=64, TM=8, TN=8), "positive"),
    (dict(BM=128, BN=128, BK=8, WM=32, WN=64, TM=8, TN=8, GROUP=0), "positive"),
])
def test_invalid_configurations_are_refused_with_the_reason(kwargs, message):
    config = FastConfig(**kwargs)
    assert any(message in p for p in config.problems()), config.problems()
    with pytest.raises(ValueError, match="invalid fast-kernel configuration"):
        config.validate()


def test_register_floor_is_a_warning_not_a_refusal():
    """16x32 per thread compiles (the compiler spills); only the register floor says it will be slow."""
    c = FastConfig(BM=256, BN=256, BK=8, WM=128, WN=128, TM=16, TN=32)
    assert c.problems() == [] and c.register_floor > 255


def test_shared_bytes_of_both_layouts():
    assert FAST.shared_bytes == 2 * (4 * (4 * 128 + 8) + 16 * 128) * 4        # skewed: 8 floats after every 4 rows
    padded = fast_configs.config(FAST.function + "_padded")
    assert padded.shared_bytes == 2 * 16 * (132 + 128) * 4                   # every row padded by 4 floats


def test_adding_a_configuration_is_one_line(monkeypatch):
    """One more FastConfig in CONFIGS: the compile unit (and so the compile tests), the registry and the
    GPU suite's kernel list all have it, with no other edit."""
    new = FastConfig(64, 64, 8, 32, 32, 4, 8, MIN_BLOCKS=4)
    assert new.problems() == [] and new not in fast_configs.CONFIGS
    monkeypatch.setattr(fast_configs, "CONFIGS", (*fast_configs.CONFIGS, new))
    units._course_unit.cache_clear()
    try:
        assert f"{new.function}(const float* A" in units.unit(fast_configs.SOURCE).text
        assert registry.lookup(new.function).block == (128, 1, 1)
        assert new.function in {k.function for k in registry.correct_kernels()}
    finally:
        units._course_unit.cache_clear()


def test_a_configuration_of_ones_own_gets_a_compile_unit_of_its_own():
    """A reader's configuration is compiled alone (its own unit), marked custom in its provenance line."""
    mine = FastConfig(64, 256, 8, 32, 64, 8, 8, MIN_BLOCKS=2)
    k = registry.fast_kernel(mine)
    assert k.source.custom and k.source.generated == fast_configs.entry_points([mine])
    assert k.source.provenance("sm_90").endswith(f"config:{k.source.config_sha} (custom)")
    with pytest.raises(ValueError, match="invalid fast-kernel configuration"):
        registry.fast_kernel(FastConfig(128, 128, 6, 32, 64, 8, 8))
