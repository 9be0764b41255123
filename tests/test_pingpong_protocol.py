"""Chapter 9's ring of stages without a GPU (``gemmlab.models.pipeline``): a producer, two consumer warpgroups, TMA copies
that land in any order and wgmma groups, under random schedules and cycle by cycle.

The kernels' comments argue that every parity wait sees the phase it means, no stage is overwritten while a wgmma
reads it, ping-pong's main loops run in the block's tile order, and nothing stalls; these tests play the protocol
(the one the Pipeline Explorer steps through) thousands of ways and check it, and check that each fault the chapter
names breaks it: a barrier told to expect more bytes hangs, a wait on the wrong parity reads a stage before it is
full, ping-pong without its turns mistakes phase n for n - 2."""

import re
from pathlib import Path

import pytest

from gemmlab.models import pipeline
from gemmlab.models.pipeline import Config, Shuffled, play

KERNEL = Path(__file__).parents[1] / "kernels" / "09_hopper.cu"


def kernel_stages(name: str) -> int:
    return int(re.search(rf"#define {name} (\d+)", KERNEL.read_text()).group(1))


@pytest.mark.parametrize("stages", sorted({2, 3, kernel_stages("PP_STAGES")}))
def test_ping_pong_turns_keep_every_wait_on_its_own_phase(stages):
    seed = 0
    for tiles in range(0, 8):                       # none, one (consumer 1 idle), odd and even counts
        for k in (1, 2, 5, 7, 13):                  # fewer K-tiles than stages, more, not a multiple
            for bias in (0.05, 0.5, 0.95):          # engines slow, even, fast against the threads
                seed += 1
                outcome = play(Config(stages, 2, "pingpong", tiles, k), Shuffled(seed, bias))
                assert outcome.error is None, (tiles, k, bias, outcome.error)
                assert sorted(t for _, t in outcome.stored) == list(range(tiles))
                assert all(c == t % 2 for c, t in outcome.stored), "consumer c stores tiles c, c + 2, ..."


@pytest.mark.parametrize("stages", sorted({2, 3, kernel_stages("WS_STAGES")}))
@pytest.mark.parametrize("consumers", [1, 2])
def test_the_cooperative_ring_never_reads_or_overwrites_a_stage_out_of_turn(stages, consumers):
    seed = 0
    for tiles in (0, 1, 3):
        for k in (1, 3, 4, 9):
            for bias in (0.05, 0.5, 0.95):
                seed += 1
                outcome = play(Config(stages, consumers, "cooperative", tiles, k), Shuffled(seed, bias))
                assert outcome.error is None, (tiles, k, bias, outcome.error)
                assert len(outcome.stored) == tiles * consumers


def test_without_the_turns_a_wait_passes_on_the_other_consumers_fill():
    """The kernel's comment: the turns are needed for correctness. With k K-tiles per tile not a multiple of the
    ring, consumer 1's first waits name stages whose earlier phase belongs to consumer 0's fills."""
    stages = kernel_stages("PP_STAGES")
    failures = [play(Config(stages, 2, "pingpong", tiles, k, fault="no_turns"), Shuffled(seed)).error
                for tiles in (2, 3, 5) for k in (7, 8, 13) for seed in range(3)]
    assert all(f and "before K-tile" in f for f in failures), failures
    assert play(Config(stages, 2, "pingpong", 3, 7), Shuffled(0)).error is None


@pytest.mark.parametrize("schedule", pipeline.SCHEDULES)
def test_a_barrier_told_to_expect_more_bytes_waits_forever(schedule):
    for scheduler in (pipeline.Timed(), Shuffled(3)):
        error = play(Config(schedule=schedule, tiles=4, fault="expect_tx"), scheduler).error
        assert error and error.startswith("hang:") and "waits forever on full[0] phase 0" in error, error


@pytest.mark.parametrize("schedule", pipeline.SCHEDULES)
def test_a_wait_on_the_wrong_parity_reads_a_stage_before_it_is_full(schedule):
    outcome = play(Config(schedule=schedule, tiles=4, fault="parity"))
    assert outcome.error and "read stage 0 before K-tile 0 was in it" in outcome.error
    assert outcome.trace[-1]["error"] == outcome.error          # the trace ends on the step that went wrong


def test_cycle_by_cycle_the_ring_fills_then_turns_over():
    """The timed play of the default configuration: the producer fills the 4 stages in its first 4 cycles, then
    waits for stage 0 to be released; copies land a fixed number of cycles after they were issued; every tile is
    stored by both consumers; each barrier's phase only ever grows."""
    timed = pipeline.Timed(copy_cycles=6, mma_cycles=4)
    outcome = play(Config(), timed)
    assert outcome.error is None and sorted(outcome.stored) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    producer = [row["agents"]["producer"] for row in outcome.trace]
    assert [p.startswith("expect") for p in producer[:5]] == [True] * 4 + [False]
    assert producer[4] == "waits on empty[0] phase 0"
    first_landing = next(row["cycle"] for row in outcome.trace if row["engines"])
    assert first_landing == timed.copy_cycles
    for name in ("full", "empty"):
        for s in range(Config().stages):
            phases = [row[name][s]["phase"] for row in outcome.trace]
            assert phases == sorted(phases)
    assert outcome.trace[-1]["full"][0]["phase"] == Config().tiles * Config().k_tiles // Config().stages


def test_configurations_are_checked():
    with pytest.raises(ValueError, match="ping-pong schedule takes two consumers"):
        play(Config(consumers=1, schedule="pingpong"))
    with pytest.raises(ValueError, match="only the ping-pong schedule has turns"):
        play(Config(fault="no_turns"))
    with pytest.raises(ValueError, match="fault must be one of"):
        play(Config(fault="cosmic ray"))
    with pytest.raises(ValueError, match="stages must be 2 to 8"):      # released one K-tile late, one would deadlock
        play(Config(stages=1))
