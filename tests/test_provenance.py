"""Provenance lines (file and configuration), freshness, and the kernel listing shown in notebooks."""

import hashlib

import pytest

from gemmlab.book import source
from gemmlab.gemm import fast_configs, units
from gemmlab.runtime import provenance

PROBES = provenance.KERNELS_DIR / "00_probes.cu"


def test_line_names_path_hash_arch_and_configuration():
    unit = units.unit("00_probes.cu")
    sha = hashlib.sha256(PROBES.read_bytes()).hexdigest()[:12]
    line = unit.provenance("sm_90")
    assert line == f"[gemmlab] kernels/00_probes.cu sha256:{sha} sm_90 config:{unit.config_sha}"
    assert provenance.find("noise\n" + line + "\n") == [provenance.Mention("kernels/00_probes.cu", sha, "sm_90", unit.config_sha)]
    plain = units.unit("02_tiled.cu")
    assert plain.config_sha is None and plain.provenance("sm_75").endswith(" sm_75")


def test_stale_detects_a_changed_file(tmp_path):
    (tmp_path / "kernels").mkdir()
    f = tmp_path / "kernels" / "x.cu"
    f.write_text("__global__ void k() {}\n")
    output = f"[gemmlab] kernels/x.cu sha256:{provenance.short_sha(f.read_text())} sm_75"
    assert provenance.stale(output, lambda path, arch: None, tmp_path) == []
    f.write_text("__global__ void k() { /* changed */ }\n")
    [problem] = provenance.stale(output, lambda path, arch: None, tmp_path)
    assert problem.startswith("kernels/x.cu: output has sha256:")
    f.unlink()
    assert "no longer exists" in provenance.stale(output, lambda path, arch: None, tmp_path)[0]


def test_stale_detects_a_changed_configuration(monkeypatch):
    """An output of 07_fast.cu is stale when the configurations compiled into it change, file untouched."""
    output = units.unit(fast_configs.SOURCE).provenance("sm_90")
    assert units.stale(output) == []
    monkeypatch.setattr(fast_configs, "CONFIGS", fast_configs.CONFIGS[:-1])
    units._course_unit.cache_clear()
    try:
        [problem] = units.stale(output)
        assert problem.startswith("kernels/07_fast.cu: output has config:")
    finally:
        units._course_unit.cache_clear()


def test_a_custom_unit_and_a_listing_are_checked_for_the_file_only():
    mine = units.unit(fast_configs.SOURCE, [fast_configs.FastConfig(64, 256, 8, 32, 64, 8, 8)])
    listing = repr(source.show(fast_configs.SOURCE))
    assert units.stale(mine.provenance("sm_80") + "\n" + listing) == []


def test_kernel_path_resolution():
    assert provenance.kernel_path("00_probes.cu") == PROBES
    assert provenance.kernel_path("kernels/00_probes.cu") == PROBES
    with pytest.raises(FileNotFoundError, match="no kernel source"):
        provenance.kernel_path("99_missing.cu")


def test_source_listing_is_the_file():
    s = source.show("02_tiled.cu")
    assert s.code == (provenance.KERNELS_DIR / "02_tiled.cu").read_text()
    assert repr(s) == f"[gemmlab] kernels/02_tiled.cu sha256:{provenance.file_sha('02_tiled.cu')}"
    assert provenance.find(repr(s))[0].arch is None
    assert s._repr_markdown_().count("```") == 2


def test_source_extracts_one_function_with_its_comment():
    code = source.show("00_probes.cu", ["copy_f32"]).code
    assert code.startswith("// One 16-byte float4 per thread")
    assert "copy_f32(" in code and "fma_f32" not in code and code.rstrip().endswith("}")
    with pytest.raises(KeyError, match="no function, struct or region named 'nope'"):
        source.show("00_probes.cu", ["nope"])
