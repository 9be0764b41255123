"""Waves of blocks and the split-K choice (gemmlab.models.shapes), the size-aware kernel built on it, and the
pieces of chapter 7's kernel the chapter shows on their own. No GPU."""

import math

import numpy as np
import pytest

from gemmlab.book import source
from gemmlab.gemm import fast_configs, registry
from gemmlab.measure import precisions
from gemmlab.models import shapes
from gemmlab.gemm.fast_configs import FAST

H200 = dict(tile=(128, 128), bk=16, blocks_per_sm=2, sms=132)


def brute_waves(blocks, slots):
    """Hand the blocks out slot by slot: rounds until every block has run."""
    rounds, left = 0, blocks
    while left > 0:
        left -= slots
        rounds += 1
    return rounds


@pytest.mark.parametrize("M,N", [(1, 1), (1024, 1024), (2048, 2048), (3000, 5000), (8192, 8192), (129, 4000)])
def test_waves_count_rounds_of_resident_blocks(M, N):
    w = shapes.waves(M, N, (128, 128), 2, 132)
    assert w.blocks == math.ceil(M / 128) * math.ceil(N / 128)
    assert w.waves == brute_waves(w.blocks, 264)
    assert 0 < w.fill <= 1 and (w.fill == 1) == (w.blocks % 264 == 0)


def test_the_chapter_7_shapes():
    w = shapes.waves(1024, 1024, (128, 128), 2, 132)
    assert (w.blocks, w.slots, w.waves) == (64, 264, 1) and round(w.fill, 3) == 0.242
    assert shapes.choose_split(1024, 1024, 1024, **H200) == 4          # 256 blocks: one wave, 97% full
    for M, N, K in [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (3000, 5000, 1234)]:
        assert shapes.choose_split(M, N, K, **H200) == 1               # at least one full wave already
    assert shapes.choose_split(512, 512, 8192, **H200) == 8            # 16 tiles, a long K


def test_split_keeps_parts_of_at_least_min_k_tiles():
    for K in (16, 100, 127, 128, 255, 256, 1024):
        s = shapes.choose_split(128, 128, K, **H200)
        assert s == 1 or math.ceil(K / 16) >= s * shapes.MIN_K_TILES
    assert shapes.choose_split(1, 1, 1, **H200) == 1


def test_a_gpu_with_fewer_slots_splits_less():
    # A T4: 40 SMs, and the fast kernel gets one block per SM there (64 KiB of shared memory per SM).
    assert shapes.choose_split(1024, 1024, 1024, tile=(128, 128), bk=16, blocks_per_sm=1, sms=40) == 1
    assert shapes.choose_split(512, 512, 4096, tile=(128, 128), bk=16, blocks_per_sm=1, sms=40) == 2


def test_plan_marks_the_choice_and_the_model_prefers_it():
    rows = shapes.plan(1024, 1024, 1024, **H200)
    assert [r[0] for r in rows] == list(shapes.SPLITS) and [r[0] for r in rows if r[-1]] == [4]
    times = {r[0]: r[5] for r in rows}
    assert times[4] == min(times.values()) and times[1] == 64          # 64 K-tiles, one wave


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="at least 1"):
        shapes.waves(10, 10, (128, 128), 0, 132)


def test_split_configs_are_compiled_named_and_kept_out_of_the_tuner():
    splits = [c for c in fast_configs.CONFIGS if c.is_split]
    assert sorted(c.SPLITK for c in splits) == [s for s in shapes.SPLITS if s > 1]
    assert all(c.function == f"{FAST.function}_splitk{c.SPLITK}" and not c.problems() for c in splits)
    assert not any(c.is_split for c in fast_configs.search_space(ablations=True))
    assert "SPLITK = 4" in fast_configs.config(FAST.function + "_splitk4").entry_point()
    assert fast_configs.FastConfig(128, 128, 16, 32, 64, 8, 8, SPLITK=0).problems()


def test_split_kernels_launch_along_z_and_fast_auto_is_the_unsplit_entry_point():
    k = registry.lookup(FAST.function + "_splitk4")
    assert k.split_k == 4 and k.grid(1024, 1000) == (8, 8, 4)
    auto = registry.kernels()["fast_auto"]
    assert isinstance(auto, registry.SizeAwareKernel) and auto.function == FAST.function and auto.grid(256, 256) == (2, 2, 1)
    names = [k.name for k in registry.correct_kernels()]
    assert "fast" in names and "fast_auto" in names


def test_source_shows_functions_structs_and_marked_regions():
    text = (source.provenance.KERNELS_DIR / "07_fast.cu").read_text()
    assert source.extract(text, "ATile").splitlines()[-1] == "};"
    assert "struct ATile" in source.extract(text, "ATile")
    split = source.extract(text, "split-K")
    assert split.startswith("// Split-K") and "kbeg" in split and "[/split-K]" not in split
    assert "atomicAdd" in source.extract(text, "add_to_c")
    loop = source.extract(text, "main loop")
    assert loop.startswith("const int tiles") and "__syncthreads();" in loop
    with pytest.raises(KeyError, match="no function, struct or region"):
        source.extract(text, "no_such_piece")
    with pytest.raises(KeyError, match="never closed"):
        source.extract("// [open]\nint x;\n", "open")


def test_bf16_rounding_is_round_to_nearest_even():
    x = np.array([1.0, 1.00390625, 1.005859375, -2.5, np.inf, 3.0e38], np.float32)
    bits = precisions.to_bf16_bits(x)
    back = (bits.astype(np.uint32) << 16).view(np.float32)
    assert back[0] == 1.0 and back[1] == 1.0                       # 1 + 2^-8 is a tie: to the even 1.0
    assert back[2] == np.float32(1.0078125)                        # 1 + 1.5 * 2^-8 rounds up
    assert back[3] == -2.5 and np.isinf(back[4])
    assert abs(back[5] - x[5]) / x[5] < 2**-8
    with pytest.raises(ValueError, match="unknown precision FP8"):
        precisions.measure(8, 8, 8, precisions=("FP8",))
