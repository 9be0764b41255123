"""The hand-over between a consumer warpgroup and its storer warp in chapter 9's last two steps (``store_d_handed``
and ``storer_warp`` in kernels/09_hopper.cu), run without a GPU: two named barriers, two store buffers and the copy
engine's reads finishing at any time, under random schedules. It asserts what the kernel's comments argue: a
consumer never writes a buffer the engine is still reading, the storer never stores a box before it is written,
every box is stored once and in order, and nothing stalls; and that with the wait for the engine's read one box
late a consumer overwrites a box in flight, and that without the barrier that frees a buffer the barriers' counts
break."""

import random
import re
from pathlib import Path

import pytest

from gemmlab.book import source
from gemmlab.models import pipeline
from gemmlab.models.pipeline import ProtocolError, Step

KERNEL = Path(__file__).parents[1] / "kernels" / "09_hopper.cu"


def kernel_text(region: str) -> str:
    return source.extract(KERNEL.read_text(), region)


def handover():
    """What the kernel says: the threads each named barrier counts (the same on both sides), the buffers a consumer
    writes in turn, and how many of its stores the storer lets the engine still be reading when it frees a buffer."""
    counts = {int(n) for n in re.findall(r'"bar\.(?:sync|arrive) %0, (\d+);"', kernel_text("store_d_handed") +
                                           kernel_text("storer_warp"))}
    [reads_left] = {int(n) for n in re.findall(r"cp\.async\.bulk\.wait_group\.read (\d+);", kernel_text("storer_warp"))}
    buffers = int(re.search(r"buffers \+ \(j % (\d+)\) \* C_BOX_BYTES", kernel_text("store_d_handed")).group(1))
    return counts, buffers, reads_left


class NamedBarrier:
    """``bar.sync`` / ``bar.arrive`` on one barrier id: arrivals add up, and when they reach ``count`` the barrier
    completes a generation and starts counting again; ``bar.sync`` waits for the generation it arrived in."""

    def __init__(self, count):
        self.count, self.arrived, self.generation = count, 0, 0

    def arrive(self, threads):
        """Arrive with ``threads`` threads; returns the generation arrived in (``bar.sync`` waits until it is past)."""
        arrived_in = self.generation
        self.arrived += threads
        if self.arrived > self.count:
            raise ProtocolError("more arrivals than the barrier counts in one generation")
        if self.arrived == self.count:
            self.generation, self.arrived = self.generation + 1, 0
        return arrived_in


def run_handover(boxes, rng, reads_left=None, free_barrier=True, engine_bias=0.5):
    """One consumer warpgroup (128 threads) and its storer warp (32) hand over ``boxes`` boxes through the kernel's
    buffers: None, or what went wrong."""
    counts, nbuf, kernel_reads_left = handover()
    [count] = counts
    reads_left = kernel_reads_left if reads_left is None else reads_left
    free, full = NamedBarrier(count), NamedBarrier(count)
    buffer = [None] * nbuf                          # the box a buffer holds once written
    in_flight = []                                  # the storer's stores the engine has not read yet: (box, buffer)
    stored = []

    def consumer():
        yield Step("start")
        for b in range(boxes):
            if free_barrier:
                g = free.arrive(count - 32)           # bar.sync: wait until the storer says the buffer is free
                yield Step(f"write box {b}", lambda: free.generation > g, "the free barrier")
            reading = [box for box, buf in in_flight if buf == b % nbuf]
            if reading:
                raise ProtocolError(f"box {b} written into buffer {b % nbuf} while the engine reads box {reading[0]}")
            buffer[b % nbuf] = b
            full.arrive(count - 32)                   # bar.arrive after the fence: written, store it

    def storer():
        yield Step("start")
        for b in range(boxes):
            # cp.async.bulk.wait_group.read: every store but the most recent reads_left has been read (by position,
            # whichever order the engine read them in)
            yield Step(f"free buffer {b % nbuf}", lambda: all(box >= b - reads_left for box, _ in in_flight),
                       "the engine's reads")
            if free_barrier:
                free.arrive(32)                                 # bar.arrive: the buffer is free
            g = full.arrive(32)                                 # bar.sync: wait until the consumer has written it
            yield Step(f"store box {b}", lambda: full.generation > g, "the written barrier")
            if buffer[b % nbuf] != b:
                raise ProtocolError(f"box {b} stored from buffer {b % nbuf}, which holds box {buffer[b % nbuf]}")
            in_flight.append((b, b % nbuf))
            stored.append(b)
        yield Step("end", lambda: not in_flight, "cp.async.bulk.wait_group 0")   # before the block ends

    def events():
        return [("read", j) for j in range(len(in_flight))]

    def fire(event):                                            # the engine finishes reading one store, any one
        in_flight.pop(event[1])

    outcome = pipeline.interleave({"consumer": consumer(), "storer": storer()}, events, fire,
                                  pipeline.Shuffled(rng.randrange(1 << 30), engine_bias))
    if outcome is None and stored != list(range(boxes)):
        return f"stored {stored}, not every box once in order"
    return outcome


def test_the_kernel_counts_one_warpgroup_and_one_warp_at_both_barriers():
    counts, buffers, reads_left = handover()
    assert counts == {128 + 32} and buffers == 2 and reads_left == buffers - 1


@pytest.mark.parametrize("boxes", [1, 2, 3, 8, 16, 40])          # a half, a tile, tiles: 4 or 8 boxes each
def test_the_handover_never_overwrites_a_box_in_flight(boxes):
    rng = random.Random(boxes)
    for bias in (0.05, 0.5, 0.95):                   # the engine slow, even, fast against the threads
        for _ in range(40):
            assert run_handover(boxes, rng, engine_bias=bias) is None, (boxes, bias)


def test_without_the_wait_for_the_engine_a_consumer_overwrites_a_box_in_flight():
    """The storer frees a buffer only once the engine has read the box before last out of it: waited one box late
    (two stores left unread), a consumer writes over a box the engine is still reading. Without the barrier that
    says a buffer is free, nothing holds a consumer back: it arrives at the other barrier for the next box before
    the storer has taken the last, more arrivals than one generation counts."""
    rng = random.Random(0)
    late = [run_handover(16, rng, reads_left=2, engine_bias=0.05) for _ in range(20)]
    assert any(f and "while the engine reads" in f for f in late), late
    unfreed = [run_handover(16, rng, free_barrier=False, engine_bias=bias) for bias in (0.05, 0.5) for _ in range(10)]
    assert all(f and "more arrivals than the barrier counts" in f for f in unfreed), unfreed
