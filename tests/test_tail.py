"""Chapter 8's shared last wave (gemmlab.models.tail) without a GPU: the launcher's rule at the sizes the chapter and the
bench time, and the parts each block computes, which must cover every K-tile of every tile exactly once."""

from collections import defaultdict

import pytest

from gemmlab.gemm import tc_configs, tensor_cores
from gemmlab.models import tail

def split_for(M, N, K, sms, precision="FP16"):
    """The split the launcher of chapter 8's tail kernel for ``precision`` chooses on ``sms`` SMs."""
    config = next(c for c in tc_configs.CONFIGS if c.TAIL and precision in c.precisions)
    return tensor_cores.mma_kernel(config, precision).tail_split(M, N, K, sms)


def test_8192_cubed_on_an_h200_shares_its_half_empty_last_wave():
    s = split_for(8192, 8192, 8192, 132)
    assert (s.tiles, s.k_tiles, s.whole, s.units) == (2048, 256, 1980, 132)
    assert s.last_wave_fill == pytest.approx(68 / 132) and s.share == pytest.approx(68 * 256 / 132)
    assert s.waves_unshared() == 16 and s.waves() == pytest.approx(15 + 68 / 132)


@pytest.mark.parametrize("M, N, K, why", [
    (4096, 4096, 4096, "last wave 88% full"), (6144, 4096, 2048, "82% full"), (2048, 2048, 2048, "one wave, 97% full"),
    (3000, 5000, 1234, "64% full"), (8192, 8192, 1024, "52% full, but 16.5 K-tiles per unit"),
    (4224, 8192, 512, "whole waves only")])
def test_the_rule_leaves_fuller_waves_and_short_shares_alone(M, N, K, why):
    s = split_for(M, N, K, 132)
    assert (s.whole, s.units, s.blocks) == (s.tiles, 0, s.tiles), why


def test_a_t4_keeps_8192_cubed_whole_and_tf32_counts_its_own_k_tiles():
    t4 = split_for(8192, 8192, 8192, 40)          # 8 tiles over: 51 K-tiles per unit, under the 64 asked for
    assert t4.last_wave_fill == pytest.approx(0.2) and t4.units == 0
    tf32 = split_for(8192, 8192, 8192, 132, "TF32")
    assert (tf32.k_tiles, tf32.whole, tf32.units) == (512, 1980, 132)


@pytest.mark.parametrize("tiles, k_tiles, sms, whole", [
    (2048, 256, 132, None), (9, 39, 132, 0), (9, 39, 132, 1), (64, 25, 132, 40), (48, 3, 132, 3), (1, 1, 132, 0),
    (200, 7, 13, 190), (5, 1000, 7, 0)])
def test_the_parts_cover_every_k_tile_of_every_tile_once(tiles, k_tiles, sms, whole):
    s = tail.split(tiles, k_tiles, sms, whole)
    covered = defaultdict(list)
    for u in range(s.blocks):
        for t, lo, hi in tail.parts(s, u):
            assert 0 <= lo < hi <= k_tiles
            covered[t].append((lo, hi))
    assert sorted(covered) == list(range(tiles))
    for t, ranges in covered.items():
        ranges.sort()
        assert ranges[0][0] == 0 and ranges[-1][1] == k_tiles
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:])), f"tile {t}: {ranges}"
    if s.units:                                   # even shares: no unit more than one K-tile above another
        loads = [sum(hi - lo for _, lo, hi in tail.parts(s, u)) for u in range(s.whole, s.blocks)]
        assert max(loads) - min(loads) <= 1


def test_bad_splits_are_refused():
    with pytest.raises(ValueError, match="at least 1"):
        tail.split(0, 4, 132)
    with pytest.raises(ValueError, match="whole tiles"):
        tail.split(10, 4, 132, whole=11)
    with pytest.raises(ValueError, match="unit must lie"):
        tail.parts(tail.split(10, 4, 132), 10)


def test_only_a_tail_kernel_has_a_split():
    inner = next(c for c in tc_configs.CONFIGS if c.INNER and not c.TAIL and "FP16" in c.precisions)
    with pytest.raises(ValueError, match="shares no last wave"):
        tensor_cores.mma_kernel(inner, "FP16").tail_split(8192, 8192, 8192, 132)
