"""gemmlab.runtime.timing.interleaved on the CPU: a fake timer and clock stand in for CUDA events."""

import pytest

from gemmlab.runtime import timing


class FakeTimer:
    """Records every call; each function's block takes the seconds per call its list gives, round by round."""

    def __init__(self, per_call):
        self.per_call = {k: list(v) for k, v in per_call.items()}
        self.calls = []

    def __call__(self, run, warmup, repeat, min_seconds):
        name = run()
        self.calls.append((name, min_seconds))
        if min_seconds == 0:                        # the warm-up's single calls
            return timing.Timing(1.0, 1.0, 1)
        value = self.per_call[name].pop(0)
        return timing.Timing(value, value, repeat)


def fake_clock(step):
    t = [0.0]

    def clock():
        t[0] += step
        return t[0]
    return clock


def runs(*names):
    return {n: (lambda n=n: n) for n in names}


def test_blocks_alternate_after_the_warm_up():
    timer = FakeTimer({"ref": [1.0, 2.0, 3.0], "k": [1.0, 1.0, 1.0]})
    result = timing.interleaved(runs("ref", "k"), rounds=3, block_s=5e-3, warm_s=0.25, timer=timer,
                                clock=fake_clock(0.1))
    warm = [c for c in timer.calls if c[1] == 0]
    timed = [c for c in timer.calls if c[1] != 0]
    assert [n for n, _ in warm] == ["ref", "k"] * 2           # 0.1 s per clock read: two passes before 0.25 s
    assert timed == [("ref", 5e-3), ("k", 5e-3)] * 3
    assert result.seconds == {"ref": [1.0, 2.0, 3.0], "k": [1.0, 1.0, 1.0]}


def test_ratios_are_taken_round_by_round():
    # The reference slows down over the rounds (the clock drops); the kernel takes 90% of its time in every round,
    # so it is 111.1% of the reference's speed in each, although its median time is not 90% of the reference's.
    ref = [1.0, 1.2, 1.4, 1.6, 3.0]
    result = timing.Interleaved({"ref": ref, "k": [0.9 * r for r in ref]})
    median, low, high = result.ratio("k", "ref")
    assert median == pytest.approx(100 / 0.9) and low == pytest.approx(100 / 0.9) and high == pytest.approx(100 / 0.9)
    assert result.median_s("k") == pytest.approx(0.9 * 1.4)
    assert result.ratio("ref", "ref")[0] == pytest.approx(100.0)


def test_a_function_against_itself_is_exactly_100_percent():
    # The bench's cuBLAS row is cuBLAS against itself, and its GPU test wants (1, 1, 1): per round the times are
    # divided first, since 100 * t / t is not 100.0 for every t (0.7 ms, for one).
    seconds = [7e-4, 1.3e-3, 1.4e-3, 2.6e-3, 2.8e-3]
    assert timing.Interleaved({"ref": seconds}).ratio("ref", "ref") == (100.0, 100.0, 100.0)


def test_quartiles_of_the_per_round_ratios():
    ref = [1.0] * 8
    k = [1.0 / p for p in (0.80, 0.90, 0.95, 0.97, 0.99, 1.00, 1.01, 1.20)]
    median, low, high = timing.Interleaved({"ref": ref, "k": k}).ratio("k", "ref")
    assert median == pytest.approx(98.0)
    assert (low, high) == (pytest.approx(95.0), pytest.approx(100.0))


@pytest.mark.parametrize("fns, rounds, message", [({}, 3, "at least one function"), (runs("a"), 0, "rounds")])
def test_bad_arguments_are_refused(fns, rounds, message):
    with pytest.raises(ValueError, match=message):
        timing.interleaved(fns, rounds=rounds, timer=FakeTimer({}), clock=fake_clock(1.0))
