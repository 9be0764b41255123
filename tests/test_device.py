"""Ceilings derived from device attributes, on the published T4 and H200 specs."""

from dataclasses import replace

import pytest

from gemmlab import device


def test_t4_ceilings():
    # NVIDIA's T4 datasheet: 8.1 TFLOPS single precision, 320 GB/s (GDDR6, 256-bit).
    assert device.peak_fp32_flops(device.T4) / 1e12 == pytest.approx(8.1, abs=0.05)
    assert device.peak_dram_bandwidth(device.T4) / 1e9 == pytest.approx(320, abs=0.5)


def test_h200_ceilings():
    assert device.peak_fp32_flops(device.H200) / 1e12 == pytest.approx(66.9, abs=0.1)
    assert device.peak_dram_bandwidth(device.H200) / 1e12 == pytest.approx(4.81, abs=0.01)   # datasheet: 4.8 TB/s


def test_a100_from_the_exercise():
    a100 = replace(device.T4, compute_capability=(8, 0), sms=108, sm_clock_khz=1_410_000,
                   memory_clock_khz=1_215_000, memory_bus_bits=5120)
    assert device.peak_fp32_flops(a100) / 1e12 == pytest.approx(19.5, abs=0.05)
    assert device.peak_dram_bandwidth(a100) / 1e9 == pytest.approx(1555, abs=1)


def test_unknown_architecture_is_named():
    with pytest.raises(ValueError, match=r"compute capability 6.1"):
        device.fp32_lanes_per_sm((6, 1))


def test_properties_table_has_the_chapter_rows():
    names = [r[0] for r in device.properties_table(device.H200)]
    for needed in ("streaming multiprocessors (SMs)", "shared memory per block (default)", "shared memory per SM",
                   "registers per SM", "max threads per SM", "L2 cache", "SM clock", "memory bus width"):
        assert needed in names
    assert dict(device.properties_table(device.T4))["shared memory per SM"] == "64 KiB"
    assert device.H200.arch == "sm_90"



def test_a_kernel_s_shared_memory_limit_is_raised_once_not_at_every_launch(monkeypatch):
    """Chapter 9's launches go through the driver; asking for a kernel's attributes and raising its shared-memory
    limit at every launch cost each one microseconds (about as long as a whole GEMM at 2048³ on the H200), so the
    limit is raised once for each larger size asked for."""
    import types

    from gemmlab import compiler, gpu

    calls = []
    monkeypatch.setattr(gpu, "driver_call", lambda name, *args: calls.append(name))
    attributes = types.SimpleNamespace(num_regs=168, shared_size_bytes=1024, local_size_bytes=0, max_threads_per_block=384)
    unit = types.SimpleNamespace(path=None)
    compiled = compiler.CompiledFile(unit, "sm_90a", types.SimpleNamespace(get_function=lambda name: attributes))
    for shared in (230_400, 230_400, 100_000, 230_400):
        compiled.driver_function("wgmma_gemm_tmastore_bf16", shared)
    assert calls == ["cuModuleLoadData", "cuModuleGetFunction", "cuFuncSetAttribute"]
    compiled.driver_function("wgmma_gemm_tmastore_bf16", 232_448)
    assert calls[-1] == "cuFuncSetAttribute" and len(calls) == 4
