"""kernels/08_steady_state.cu: the best tensor-core kernel's main loop, taken apart, runs for each part and stays
below what the mma.sync probe allows (or says it cannot run where the code is for sm_75)."""

import pytest

from gemmlab.gemm import units
from gemmlab.measure import probes


@pytest.mark.parametrize("part", probes.STEADY_PARTS)
def test_each_part_runs_below_the_ceiling(part):
    rate = probes.steady_state(part, iters=512)
    if probes._arch_number(units.load(probes.STEADY, quiet=True).arch) < 80:
        assert rate is None
        return
    ceiling = probes.mma_ceiling("m16n8k16", "f16", iters=512)
    assert 1e12 < rate < 1.1 * ceiling


def test_a_part_that_does_not_exist_is_refused():
    with pytest.raises(ValueError, match="the parts are mma, ldmatrix, barrier, copies"):
        probes.steady_state("epilogue")
