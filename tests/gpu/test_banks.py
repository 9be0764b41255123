"""Chapter 4 on the GPU: Nsight Compute's shared-memory counters agree with the bank model (instructions exactly; wavefronts up to a small residue the model
does not cover; conflicting >> plain and padded)."""

import pytest

from gemmlab.measure import nsight
from gemmlab.models import banks

VARIANTS = {"tiled32": "plain", "banks_transposed": "transposed", "banks_padded": "padded"}


@pytest.fixture(scope="module")
def counters():
    reason = nsight.unavailable_reason()
    if reason:
        pytest.skip(reason)
    try:
        return {name: nsight.counters(name, 512, 512, 512, nsight.SHARED_METRICS) for name in VARIANTS}
    except nsight.CountersUnavailable as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("name", VARIANTS)
def test_counters_match_the_bank_model(counters, name):
    c, m = counters[name], banks.tiled_shared_traffic(512, 512, 512, 32, VARIANTS[name])
    assert c["load_instructions"] == m.load_instructions and c["store_instructions"] == m.store_instructions
    # The residue: a few wavefronts more than any address pattern explains (chapter 4: other L1 traffic).
    assert m.load_wavefronts <= c["load_wavefronts"] <= 1.01 * m.load_wavefronts
    assert m.store_wavefronts <= c["store_wavefronts"] <= 1.25 * m.store_wavefronts


def test_conflict_ordering(counters):
    bad = counters["banks_transposed"]["load_conflicts"]
    plain, padded = counters["tiled32"]["load_conflicts"], counters["banks_padded"]["load_conflicts"]
    assert bad > 100 * max(plain, padded, 1)
    assert max(plain, padded) < 0.002 * counters["tiled32"]["load_wavefronts"]
