"""Ceilings derived from device attributes, on the published T4 and H200 specs."""

from dataclasses import replace

import pytest

from gemmlab.runtime import device


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
