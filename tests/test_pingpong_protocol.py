"""The turn-taking of chapter 9's ping-pong kernel (``pingpong_gemm`` in kernels/09_hopper.cu), run without a GPU:
one block's producer and two consumers around a ring of mbarriers, with copies and tensor-core work that finish in
any order, under random schedules. It asserts what the kernel's comment argues: every parity wait sees the phase it
means, no stage is overwritten while a wgmma reads it, the main loops run in the block's tile order, nothing stalls;
and that without the turns the same waits go wrong."""

import random
import re
from pathlib import Path

import pytest

KERNEL = Path(__file__).parents[1] / "kernels" / "09_hopper.cu"


class Barrier:
    """An mbarrier: ``count`` arrivals and a transaction count of zero complete a phase. A parity wait passes once
    the phase before the current one of that parity has completed, so it cannot tell phase n from n - 2."""

    def __init__(self, count):
        self.count, self.pending, self.tx, self.phase = count, count, 0, 0

    def arrive(self, tx=0):
        self.tx += tx
        self.pending -= 1
        assert self.pending >= 0, "more arrivals than the barrier counts"
        self._complete()

    def complete_tx(self, n):
        self.tx -= n
        self._complete()

    def _complete(self):
        if self.pending == 0 and self.tx == 0:
            self.phase, self.pending = self.phase + 1, self.count

    def passes(self, parity):
        return (self.phase & 1) != parity


def run_block(tiles, k, stages, rng, turns=True, engine_bias=0.5):
    """One block with ``tiles`` tiles of ``k`` K-tiles each, run to the end: None, or what went wrong."""
    A, B = 16, 16                                      # KiB of a stage's A and B tiles (two copies)
    full, empty = [Barrier(1) for _ in range(stages)], [Barrier(1) for _ in range(stages)]   # one consumer per stage
    turn = [Barrier(1), Barrier(1)]
    content = [(None, 0)] * stages                     # (the K-tile a stage holds, KiB of it landed)
    copies, groups, loops_done = [], {0: [], 1: []}, [0]

    def producer():
        yield lambda: True
        for it in range(tiles * k):
            s, n = it % stages, it // stages
            if it >= stages:
                yield lambda: empty[s].passes((n - 1) & 1)
                assert empty[s].phase == n, f"producer saw empty[{s}] at phase {empty[s].phase}, not {n}"
            full[s].arrive(tx=A + B)
            copies.extend([(s, it, A), (s, it, B)])

    def consumer(c):
        yield lambda: True
        for i in range(c, tiles, 2):
            if i > 0 and turns:
                yield lambda: turn[1 - c].passes(((i - 1) // 2) & 1)
                assert turn[1 - c].phase == (i - 1) // 2 + 1, "a turn wait saw the wrong phase"
            assert loops_done[0] == i or not turns, f"main loop {i} began after {loops_done[0]} others"
            for kt in range(k):
                it = i * k + kt
                s, n = it % stages, it // stages
                yield lambda: full[s].passes(n & 1)
                assert full[s].phase == n + 1, f"consumer {c} passed full[{s}] at phase {full[s].phase} for fill {n}"
                assert content[s] == (it, A + B), f"stage {s} holds {content[s]}, not all of K-tile {it}"
                groups[c].append(s)
                yield lambda: len(groups[c]) <= 1         # wgmma.wait_group 1
                if kt > 0:
                    empty[(it - 1) % stages].arrive()
            loops_done[0] += 1
            turn[c].arrive()
            yield lambda: not groups[c]                     # wgmma.wait_group 0
            if k > 0:
                empty[(i * k + k - 1) % stages].arrive()

    def events():
        return [("copy", j) for j in range(len(copies))] + [("mma", c) for c in (0, 1) if groups[c]]

    def fire(event):
        kind, what = event
        if kind == "copy":                                  # a copy lands, in any order
            s, it, kib = copies.pop(what)
            assert full[s].phase == it // stages, f"a copy for fill {it // stages} of stage {s} landed " \
                                                  f"in phase {full[s].phase}"
            assert s not in groups[0] + groups[1], f"stage {s} overwritten while a wgmma reads it"
            landed = content[s][1] if content[s][0] == it else 0
            content[s] = (it, landed + kib)
            full[s].complete_tx(kib)
        else:                                               # a consumer's oldest wgmma group completes
            groups[what].pop(0)

    return schedule([producer(), consumer(0), consumer(1)], events, fire, rng, engine_bias)


def schedule(agents, events, fire, rng, engine_bias):
    """Run ``agents`` (generators, each yielding a function that says when it may go on) and the asynchronous engines
    to the end under a random schedule: ``events()`` lists what the engines may do now, ``fire(event)`` does it, an
    engine event chosen with probability ``engine_bias`` when a thread could go on too. None, or what went wrong: a
    failed assertion's message, or a stall."""
    waits = [next(a) for a in agents]
    while True:
        ready = [n for n, w in enumerate(waits) if w is not None and w()]
        engines = events()
        if not ready and not engines:
            stalled = [n for n, w in enumerate(waits) if w is not None]
            return f"stall: agents {stalled} wait forever" if stalled else None
        try:
            if engines and (not ready or rng.random() < engine_bias):
                fire(rng.choice(engines))
            else:
                n = rng.choice(ready)
                try:
                    waits[n] = next(agents[n])
                except StopIteration:
                    waits[n] = None
        except AssertionError as e:
            return str(e)


def kernel_stages():
    return int(re.search(r"#define PP_STAGES (\d+)", KERNEL.read_text()).group(1))


@pytest.mark.parametrize("stages", sorted({2, 3, kernel_stages()}))
def test_the_turns_keep_every_wait_on_its_own_phase(stages):
    rng = random.Random(stages)
    for tiles in range(0, 8):                       # none, one (consumer 1 idle), odd and even counts
        for k in (1, 2, 5, 7, 13):                  # fewer K-tiles than stages, more, not a multiple
            for bias in (0.05, 0.5, 0.95):          # engines slow, even, fast against the threads
                assert run_block(tiles, k, stages, rng, engine_bias=bias) is None, (tiles, k, bias)


def test_without_the_turns_a_wait_passes_on_the_other_consumers_fill():
    """The kernel's comment: the turns are needed for correctness. With k K-tiles per tile not a multiple of the
    ring, consumer 1's first waits name stages whose earlier phase belongs to consumer 0's fills."""
    rng = random.Random(0)
    failures = [run_block(tiles, k, kernel_stages(), rng, turns=False) for tiles in (2, 3, 5) for k in (7, 8, 13)
                for _ in range(3)]
    assert all(failures), failures
    assert run_block(3, 7, kernel_stages(), rng) is None
