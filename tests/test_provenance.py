"""Provenance lines and the kernel listing shown in notebooks."""

import hashlib

import pytest

from gemmlab import provenance, source

PROBES = provenance.KERNELS_DIR / "00_probes.cu"


def test_line_names_path_hash_and_arch():
    line = provenance.line("00_probes.cu", "sm_90")
    sha = hashlib.sha256(PROBES.read_bytes()).hexdigest()[:12]
    assert line == f"[gemmlab] kernels/00_probes.cu sha256:{sha} sm_90"
    assert provenance.find("noise\n" + line + "\n") == [("kernels/00_probes.cu", sha)]


def test_stale_detects_a_changed_file(tmp_path):
    (tmp_path / "kernels").mkdir()
    f = tmp_path / "kernels" / "x.cu"
    f.write_text("__global__ void k() {}\n")
    output = f"[gemmlab] kernels/x.cu sha256:{provenance.short_sha(f.read_text())} sm_75"
    assert provenance.stale(output, tmp_path) == []
    f.write_text("__global__ void k() { /* changed */ }\n")
    [problem] = provenance.stale(output, tmp_path)
    assert problem.startswith("kernels/x.cu: output has sha256:")
    f.unlink()
    assert "no longer exists" in provenance.stale(output, tmp_path)[0]


def test_kernel_path_resolution():
    assert provenance.kernel_path("00_probes.cu") == PROBES
    assert provenance.kernel_path("kernels/00_probes.cu") == PROBES
    with pytest.raises(FileNotFoundError, match="no kernel source"):
        provenance.kernel_path("99_missing.cu")


def test_source_listing_is_the_file():
    s = source.show("02_tiled.cu")
    assert s.code == (provenance.KERNELS_DIR / "02_tiled.cu").read_text()
    assert repr(s) == f"[gemmlab] kernels/02_tiled.cu sha256:{provenance.file_sha('02_tiled.cu')}"
    assert s._repr_markdown_().count("```") == 2


def test_source_extracts_one_function_with_its_comment():
    code = source.show("00_probes.cu", ["copy_f32"]).code
    assert code.startswith("// One 16-byte float4 per thread")
    assert "copy_f32(" in code and "fma_f32" not in code and code.rstrip().endswith("}")
    with pytest.raises(KeyError, match="no function named 'nope'"):
        source.show("00_probes.cu", ["nope"])
