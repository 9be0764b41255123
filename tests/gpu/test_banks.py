"""Chapter 4 on the GPU: the bank-conflict variants are correct, and Nsight Compute's shared-memory
counters agree with the bank model (instructions exactly; wavefronts up to a small residue the model
does not cover; conflicting >> plain and padded)."""

import pytest

from gemmlab import launch, models, profile, verify

VARIANTS = {"tiled32": "plain", "banks_transposed": "transposed", "banks_padded": "padded"}


@pytest.mark.parametrize("M,N,K", [(1, 1, 1), (33, 31, 65), (1000, 999, 1001)], ids=["1", "33x31x65", "1000x999x1001"])
@pytest.mark.parametrize("name", VARIANTS)
def test_variants_match_reference(name, M, N, K):
    A, B = verify.random_operands(M, N, K, seed=M + K)
    v = verify.check(launch.lookup(name)(A, B), A, B)
    assert v.ok, f"{name} at {M}x{N}x{K}: {v}"


@pytest.fixture(scope="module")
def counters():
    reason = profile.unavailable_reason()
    if reason:
        pytest.skip(reason)
    try:
        return {name: profile.counters(name, 512, 512, 512, profile.SHARED_METRICS) for name in VARIANTS}
    except profile.ProfileUnavailable as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("name", VARIANTS)
def test_counters_match_the_bank_model(counters, name):
    c, m = counters[name], models.tiled_shared_traffic(512, 512, 512, 32, VARIANTS[name])
    assert c["load_instructions"] == m.load_instructions and c["store_instructions"] == m.store_instructions
    # The residue: a few wavefronts more than any address pattern explains (chapter 4: other L1 traffic).
    assert m.load_wavefronts <= c["load_wavefronts"] <= 1.01 * m.load_wavefronts
    assert m.store_wavefronts <= c["store_wavefronts"] <= 1.25 * m.store_wavefronts


def test_conflict_ordering(counters):
    bad = counters["banks_transposed"]["load_conflicts"]
    plain, padded = counters["tiled32"]["load_conflicts"], counters["banks_padded"]["load_conflicts"]
    assert bad > 100 * max(plain, padded, 1)
    assert max(plain, padded) < 0.002 * counters["tiled32"]["load_wavefronts"]
