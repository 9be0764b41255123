"""Chapter 0's probes and the compile layer on the real device."""

import numpy as np
import pytest

from gemmlab.gemm import units
from gemmlab.measure import probes
from gemmlab.models import traffic
from gemmlab.runtime import compiler, device


def test_provenance_line_printed_once(capsys):
    compiler._loaded.clear()
    units.load("00_probes.cu")
    units.load("00_probes.cu")
    out = capsys.readouterr().out
    assert out == units.unit("00_probes.cu").provenance(compiler.target()) + "\n"


def test_resources_match_the_model():
    f = units.load("02_tiled.cu", quiet=True)
    for T in (8, 16, 32):
        r = f.resources(f"gemm_tiled_{T}")
        assert r.shared_bytes == traffic.tiled_shared_bytes(T)
        assert r.local_bytes == 0 and 0 < r.registers <= 255
    with pytest.raises(KeyError, match="no extern"):
        f.function("gemm_tiled_64")


def test_without_cuobjdump_the_sass_is_refused_in_one_sentence(monkeypatch):
    f = units.load("02_tiled.cu", quiet=True)
    monkeypatch.setattr(compiler.watchdog, "find_tool", lambda name, *more: None)
    with pytest.raises(compiler.SassUnavailable, match="cuobjdump .* not installed here") as err:
        f.sass("gemm_tiled_32")
    assert str(err.value).count(". ") == 0


def test_hello_ids_mapping():
    ids = probes.hello_ids(blocks=5, threads=7)
    blocks, threads = np.divmod(np.arange(35), 7)
    assert np.array_equal(ids, np.stack([blocks, threads, np.arange(35)], axis=1))


@pytest.mark.parametrize("n", [1, 3, 4, 1_000_003])    # tails of 1, 3, 0 and 3 floats
def test_copy_probes_copy_every_element(n):
    from pycuda import gpuarray

    src = gpuarray.to_gpu(np.random.default_rng(n).standard_normal(n).astype(np.float32))
    dst = gpuarray.zeros(n, np.float32)
    probes.copy(src, dst)
    assert np.array_equal(dst.get(), src.get())
    for passes in (1, 3):
        dst.fill(0)
        probes.copy_passes(src, dst, passes)
        assert np.array_equal(dst.get(), src.get())


def test_fma_probe_reaches_its_fixed_point():
    values = probes.fma_values(blocks=3, threads=128, iters=200)
    assert values.shape == (384,) and np.all(values == probes.FMA_CHAINS * 1.0)


def test_device_spec_is_complete():
    spec = device.current()
    assert spec.sms > 0 and spec.sm_clock_khz > 0 and spec.memory_clock_khz > 0 and spec.memory_bus_bits > 0
    assert device.peak_fp32_flops(spec) > 0 and device.peak_dram_bandwidth(spec) > 0
    assert spec.max_threads_per_block == 1024 and spec.warp_size == 32


@pytest.mark.parametrize("kernel", ["naive", "naive_column", "tiled32", "tiled16"])
def test_counters_match_the_warp_model(kernel):
    from gemmlab.measure import nsight

    reason = nsight.unavailable_reason()
    if reason:
        pytest.skip(reason)
    c = nsight.counters(kernel, 256, 256, 256)
    w = traffic.warp_traffic(kernel, 256, 256, 256)
    assert (c["requests"], c["sectors"]) == (w.requests, w.sectors)
