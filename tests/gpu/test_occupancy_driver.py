"""Chapter 5 on the GPU: the occupancy calculator gives the driver's answer for every kernel of the
course at its own block size and for a sweep of registers, block sizes and shared memory."""

import pytest

from gemmlab.gemm import registry
from gemmlab.measure import driver

PROBES = [("05_occupancy.cu", f"occupancy_probe_r{r}") for r in (16, 40, 64, 100, 160, 240)]


@pytest.mark.parametrize("name", list(registry.named()))
def test_calculator_equals_driver_for_course_kernels(name):
    k = registry.named()[name]
    case = driver.compare(k.source, k.function, k.block[0] * k.block[1])
    assert case.agree, str(case)


def test_calculator_equals_driver_on_a_sweep():
    cases = driver.sweep(PROBES, threads=(32, 96, 128, 256, 512, 1024), dynamic_shared=(0, 4096, 40000, 49152, 100000, 200000))
    assert len(cases) > 100
    wrong = [c for c in cases if not c.agree]
    assert not wrong, f"{len(wrong)} of {len(cases)} disagree, e.g. {wrong[:3]}"
    assert {b for c in cases for b in c.binding} >= {"threads", "registers", "shared memory"}
