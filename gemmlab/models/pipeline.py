"""Chapter 9's pipeline without a GPU: a producer, consumer warpgroups and a ring of stages guarded by mbarriers.

One block is played as agents (the producer thread, each consumer warpgroup) and two asynchronous engines (TMA,
whose copies land in any order, and the tensor cores, whose ``wgmma`` groups complete in order). Each agent is a
generator that yields the next :class:`Step` it wants to take, with the condition it waits for; a scheduler picks
who moves. :func:`play` with a :class:`Timed` scheduler gives the cycle-by-cycle trace that the Pipeline Explorer
steps through and the chapter draws; :class:`Shuffled` gives the random interleavings under which the CPU tests
check that no wait sees the wrong phase and nothing stalls. Both run the same agents.

The kernel's protocol (``kernels/09_hopper.cu``): stage ``s = it % stages`` holds the ``it``-th K-tile of the
block; the producer waits until the stage is empty (``empty[s]``, the fill before's release), tells ``full[s]``
how many bytes to expect and asks TMA for the tiles; a consumer waits on ``full[s]`` with the parity of fill
``it // stages``, issues its ``wgmma`` and, once they are done, arrives on ``empty[s]``. Cooperative: every
consumer works on every K-tile (its own rows of the tile). Ping-pong: consumer ``c`` owns tiles ``c, c + 2, ...``
and the two take turns (``turn[c]``), which a parity wait needs, because it cannot tell phase n from n - 2.
Faults to inject: ``expect_tx`` (the barrier told to expect more bytes than the copies bring: it never completes),
``parity`` (a consumer waits on the wrong parity: it reads a stage before it is full) and, in ping-pong,
``no_turns`` (the turns left out: a wait passes on the other consumer's fill).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable, Iterator

SCHEDULES = ("cooperative", "pingpong")
FAULTS = ("expect_tx", "parity", "no_turns")


class MBarrier:
    """An mbarrier: a phase completes when ``count`` arrivals have come and its transaction count is back to zero.
    A parity wait passes once the last completed phase has the other parity than asked for: it cannot tell phase
    n from n - 2."""

    def __init__(self, count: int) -> None:
        self.count, self.pending, self.tx, self.phase = count, count, 0, 0

    def arrive(self, expect_tx: int = 0) -> None:
        self.tx += expect_tx
        self.pending -= 1
        if self.pending < 0:
            raise ProtocolError("more arrivals than the barrier counts")
        self._complete()

    def complete_tx(self, nbytes: int) -> None:
        self.tx -= nbytes
        self._complete()

    def _complete(self) -> None:
        if self.pending == 0 and self.tx == 0:
            self.phase, self.pending = self.phase + 1, self.count

    def passes(self, parity: int) -> bool:
        """``mbarrier.try_wait.parity``: the phase of that parity has completed."""
        return (self.phase & 1) != parity

    def state(self) -> dict[str, int]:
        return {"phase": self.phase, "pending": self.pending, "tx": self.tx}


class ProtocolError(AssertionError):
    """Something the kernel relies on did not hold: a stage read before it was full, one overwritten in use."""


@dataclass(frozen=True)
class Step:
    """What an agent does next (``what``), once ``ready()`` holds; ``wait`` names what it waits for, if anything."""

    what: str
    ready: Callable[[], bool] = field(default=lambda: True, compare=False)
    wait: str = ""
    on_time: bool = False           # waits for cycles to pass, not for another agent or an engine


@dataclass(frozen=True)
class Config:
    """One block's work and its ring: ``tiles`` tiles of C of ``k_tiles`` K-tiles each, ``stages`` stages of
    ``stage_bytes`` (A's and B's tiles, two copies), and a fault to inject (None: the kernel as written)."""

    stages: int = 4
    consumers: int = 2
    schedule: str = "cooperative"
    tiles: int = 2
    k_tiles: int = 6
    fault: str | None = None
    stage_bytes: tuple[int, int] = (16384, 32768)       # A's 128 x 64 and B's 256 x 64 BF16 tiles

    def problems(self) -> list[str]:
        out = []
        if not 2 <= self.stages <= 8:      # a stage is released one K-tile late: a ring of one would wait on itself
            out.append(f"stages must be 2 to 8, got {self.stages}")
        if self.consumers not in (1, 2):
            out.append(f"consumers must be 1 or 2, got {self.consumers}")
        if self.schedule not in SCHEDULES:
            out.append(f"schedule must be one of {', '.join(SCHEDULES)}, got {self.schedule!r}")
        if self.schedule == "pingpong" and self.consumers != 2:
            out.append("the ping-pong schedule takes two consumers")
        if self.fault is not None and self.fault not in FAULTS:
            out.append(f"fault must be one of {', '.join(FAULTS)} or None, got {self.fault!r}")
        if self.fault == "no_turns" and self.schedule != "pingpong":
            out.append("only the ping-pong schedule has turns to leave out")
        if self.tiles < 0 or self.k_tiles < 1:
            out.append("tiles must be at least 0 and k_tiles at least 1")
        return out


class Block:
    """The agents and engines of one block under ``config``; :func:`play` runs them."""

    def __init__(self, config: Config) -> None:
        problems = config.problems()
        if problems:
            raise ValueError("; ".join(problems))
        self.config = c = config
        cooperative = c.schedule == "cooperative"
        self.full = [MBarrier(1) for _ in range(c.stages)]
        self.empty = [MBarrier(c.consumers if cooperative else 1) for _ in range(c.stages)]
        self.turn = [MBarrier(1) for _ in range(c.consumers)] if not cooperative else []
        self.stage: list[tuple[int | None, int]] = [(None, 0)] * c.stages     # (K-tile held, bytes landed)
        self.now = 0                                      # the cycle, where a Timed scheduler runs the block
        self.store_cycles = 0                             # how long an epilogue lasts (Timed); 0: no time passes
        self.tensor_queue: list[tuple[int, int]] = []     # wgmma groups in issue order: (consumer, cycle issued)
        self.tensor_free = 0                              # the cycle the tensor cores finished their last group
        self.copies: list[tuple[int, int, int, int]] = []  # in flight: (stage, K-tile, bytes, cycle issued)
        self.groups: dict[int, list[tuple[int, int]]] = {n: [] for n in range(c.consumers)}  # wgmma: (stage, issued)
        self.stored: list[tuple[int, int]] = []           # (consumer, tile) in the order the epilogues ran
        self.main_loops = 0                               # tiles whose main loop has begun, in ping-pong
        self.agents: dict[str, Iterator[Step]] = {"producer": self._producer()}
        self.agents.update({f"consumer {n}": self._consumer(n) for n in range(c.consumers)})

    @property
    def fills(self) -> int:
        c = self.config
        return c.tiles * c.k_tiles

    def _producer(self) -> Iterator[Step]:
        c = self.config
        expect = sum(c.stage_bytes) + (16 if c.fault == "expect_tx" else 0)
        for it in range(self.fills):
            s, n = it % c.stages, it // c.stages
            if it >= c.stages:                                  # the consumers have released the fill before
                yield Step(f"wait until stage {s} is empty", lambda: self.empty[s].passes((n - 1) & 1),
                           f"empty[{s}] phase {n - 1}")
            yield Step(f"expect {expect:,} bytes on full[{s}], copy K-tile {it} into stage {s}")
            self.full[s].arrive(expect_tx=expect)
            for nbytes in c.stage_bytes:
                self.copies.append((s, it, nbytes, self.now))

    def _my_tiles(self, n: int) -> range:
        c = self.config
        return range(self.config.tiles) if c.schedule == "cooperative" else range(n, c.tiles, 2)

    def _consumer(self, n: int) -> Iterator[Step]:
        c = self.config
        for i in self._my_tiles(n):
            if c.schedule == "pingpong" and i > 0 and c.fault != "no_turns":
                other = self.turn[1 - n]
                yield Step(f"wait for tile {i - 1}'s main loop (consumer {1 - n})",
                           lambda: other.passes(((i - 1) // 2) & 1), f"turn[{1 - n}] phase {(i - 1) // 2}")
            if c.schedule == "pingpong" and c.fault != "no_turns" and self.main_loops != i:
                raise ProtocolError(f"tile {i}'s main loop began after {self.main_loops} others, not {i}")
            self.main_loops += 1
            for kt in range(c.k_tiles):
                it = i * c.k_tiles + kt
                s, fill = it % c.stages, it // c.stages
                parity = (fill & 1) ^ (1 if c.fault == "parity" else 0)
                yield Step(f"wait until stage {s} is full", lambda: self.full[s].passes(parity),
                           f"full[{s}] phase {fill}")
                held, landed = self.stage[s]
                if held != it or landed != sum(c.stage_bytes):
                    raise ProtocolError(f"consumer {n} read stage {s} before K-tile {it} was in it "
                                        f"(it holds {'nothing' if held is None else f'K-tile {held}'}, "
                                        f"{landed:,} of {sum(c.stage_bytes):,} bytes)")
                yield Step(f"issue wgmma on stage {s} (K-tile {it})")
                self.groups[n].append((s, self.now))
                self.tensor_queue.append((n, self.now))
                yield Step("wait for the wgmma before", lambda: len(self.groups[n]) <= 1, "wgmma.wait_group 1")
                if kt > 0:
                    prev = (it - 1) % c.stages
                    yield Step(f"release stage {prev}")
                    self.empty[prev].arrive()
            if c.schedule == "pingpong":
                yield Step(f"hand the tensor cores to consumer {1 - n}")
                self.turn[n].arrive()
            yield Step("wait for the last wgmma", lambda: not self.groups[n], "wgmma.wait_group 0")
            last = (i * c.k_tiles + c.k_tiles - 1) % c.stages
            yield Step(f"release stage {last}")
            self.empty[last].arrive()
            yield Step(f"store tile {i}")
            started = self.now
            yield Step(f"tile {i} stored", lambda: self.now - started >= self.store_cycles, "its stores", on_time=True)
            self.stored.append((n, i))

    # The engines: what may complete now, and completing it.
    def engine_events(self) -> list[tuple[str, int]]:
        return [("copy", j) for j in range(len(self.copies))] + [("wgmma", n) for n, g in self.groups.items() if g]

    def complete(self, event: tuple[str, int]) -> str:
        kind, what = event
        if kind == "copy":
            s, it, nbytes, _ = self.copies.pop(what)
            if any(s == reading for g in self.groups.values() for reading, _ in g):
                raise ProtocolError(f"TMA overwrote stage {s} while a wgmma reads it")
            held, landed = self.stage[s]
            self.stage[s] = (it, (landed if held == it else 0) + nbytes)
            self.full[s].complete_tx(nbytes)
            return f"TMA: {nbytes:,} bytes of K-tile {it} land in stage {s}"
        s, _ = self.groups[what].pop(0)
        self.tensor_queue.remove(next(q for q in self.tensor_queue if q[0] == what))
        return f"tensor cores: consumer {what}'s wgmma on stage {s} done"

    def snapshot(self) -> dict:
        return {"full": [b.state() for b in self.full], "empty": [b.state() for b in self.empty],
                "turn": [b.state() for b in self.turn],
                "stages": [{"k_tile": held, "bytes": landed} for held, landed in self.stage],
                "copies": len(self.copies), "groups": {str(n): [s for s, _ in g] for n, g in self.groups.items()}}


@dataclass
class Outcome:
    """How a play ended: ``error`` is None when every agent ran to its end; ``trace`` one entry per scheduler step."""

    error: str | None
    trace: list[dict]
    stored: list[tuple[int, int]]


class Shuffled:
    """Random interleavings: an engine event with probability ``engine_bias`` whenever a thread could move too."""

    def __init__(self, seed: int = 0, engine_bias: float = 0.5) -> None:
        self.rng, self.engine_bias = random.Random(seed), engine_bias

    def pick(self, ready: list[str], events: list[tuple[str, int]]) -> tuple[list[str], list[tuple[str, int]]]:
        if events and (not ready or self.rng.random() < self.engine_bias):
            return [], [self.rng.choice(events)]
        return [self.rng.choice(ready)], []


class Timed:
    """Cycle by cycle: every agent that can move takes one step per cycle; a copy lands ``copy_cycles`` after it
    was issued; the tensor cores complete one consumer's wgmma group (a K-tile of its share of the tile) every
    ``mma_cycles``, the groups of all consumers in the order they were issued; and a tile's epilogue keeps its
    consumer busy for ``store_cycles``, with no wgmma of its own meanwhile."""

    def __init__(self, copy_cycles: int = 6, mma_cycles: int = 4, store_cycles: int = 12) -> None:
        self.copy_cycles, self.mma_cycles, self.store_cycles = copy_cycles, mma_cycles, store_cycles


def play(config: Config, scheduler: Shuffled | Timed | None = None, max_steps: int = 100_000) -> Outcome:
    """Run one block to its end (or until something goes wrong) and return the outcome with its trace."""
    block = Block(config)
    scheduler = scheduler or Timed()
    if isinstance(scheduler, Timed):
        block.store_cycles = scheduler.store_cycles
    return _play_timed(block, scheduler, max_steps) if isinstance(scheduler, Timed) \
        else _play_shuffled(block, scheduler, max_steps)


def _advance(agents: dict[str, Iterator[Step]], waiting: dict[str, Step | None], name: str) -> None:
    try:
        waiting[name] = next(agents[name])
    except StopIteration:
        waiting[name] = None


def _stall(waiting: dict[str, Step | None]) -> str:
    stuck = {n: s for n, s in waiting.items() if s is not None}
    return "hang: " + "; ".join(f"{n} waits forever on {s.wait}" for n, s in stuck.items())


def _play_shuffled(block: Block, scheduler: Shuffled, max_steps: int) -> Outcome:
    trace: list[dict] = []

    def fire(event: tuple[str, int]) -> None:
        trace.append({"engine": block.complete(event)})

    error = interleave(block.agents, block.engine_events, fire, scheduler, max_steps,
                       lambda name, step: trace.append({"agent": name, "did": step.what}))
    return Outcome(error, trace, block.stored)


def interleave(agents: dict[str, Iterator[Step]], events: Callable[[], list[tuple[str, int]]],
               fire: Callable[[tuple[str, int]], object], scheduler: Shuffled, max_steps: int = 100_000,
               took: Callable[[str, Step], object] = lambda name, step: None) -> str | None:
    """Run ``agents`` and the engines (``events()`` lists what they may complete now, ``fire(event)`` completes it)
    to the end under ``scheduler``: None, or what went wrong (a :class:`ProtocolError`'s message, or a stall).
    ``took(name, step)`` hears every step an agent takes. Other protocols of the chapter (the storer's hand-over)
    run on it too."""
    waiting: dict[str, Step | None] = {}
    try:
        for name in agents:
            _advance(agents, waiting, name)
        for _ in range(max_steps):
            ready = [n for n, s in waiting.items() if s is not None and s.ready()]
            engine = events()
            if not ready and not engine:
                return _stall(waiting) if any(s is not None for s in waiting.values()) else None
            moving, fired = scheduler.pick(ready, engine)
            for event in fired:
                fire(event)
            for name in moving:
                step = waiting[name]
                assert step is not None
                took(name, step)
                _advance(agents, waiting, name)
    except ProtocolError as e:
        return str(e)
    return f"no end after {max_steps} steps"


def _play_timed(block: Block, clock: Timed, max_steps: int) -> Outcome:
    waiting: dict[str, Step | None] = {}
    trace: list[dict] = []
    for name in block.agents:
        _advance(block.agents, waiting, name)
    for cycle in range(max_steps):
        block.now = cycle
        row: dict = {"cycle": cycle, "engines": [], "agents": {}}
        trace.append(row)
        try:
            row["engines"] = _complete_due(block, clock)
            moved = False
            for name in block.agents:
                step = waiting[name]
                if step is None:
                    row["agents"][name] = "done"
                elif step.ready():
                    row["agents"][name] = step.what
                    _advance(block.agents, waiting, name)
                    moved = True
                else:
                    row["agents"][name] = f"waits on {step.wait}"
        except ProtocolError as e:                       # the row shows the step that went wrong, then the error
            for name in block.agents:                    # those after it in this cycle never moved
                row["agents"].setdefault(name, "stopped: the block went wrong")
            row.update(block.snapshot(), error=str(e))
            return Outcome(str(e), trace, block.stored)
        row.update(block.snapshot())
        if all(s is None for s in waiting.values()):
            return Outcome(None, trace, block.stored)
        timing = any(s is not None and s.on_time for s in waiting.values())
        if not moved and not row["engines"] and not block.engine_events() and not timing:
            row["error"] = _stall(waiting)
            return Outcome(row["error"], trace, block.stored)
    return Outcome(f"no end after {max_steps} cycles", trace, block.stored)


def _complete_due(block: Block, clock: Timed) -> list[str]:
    """The engine work whose time has come, completed: every copy issued ``copy_cycles`` ago or more (in the order
    they were issued), and the oldest wgmma group once ``mma_cycles`` have passed since it was issued and since the
    tensor cores finished the group before it. The SM's tensor cores take the groups of all consumers one after
    the other, in the order they were issued: two consumers share them, they do not double them."""
    done: list[str] = []
    for j in reversed([j for j, (_, _, _, issued) in enumerate(block.copies)
                       if block.now - issued >= clock.copy_cycles]):
        done.insert(0, block.complete(("copy", j)))
    if block.tensor_queue:
        consumer, issued = block.tensor_queue[0]
        if block.now - max(issued, block.tensor_free) >= clock.mma_cycles:
            done.append(block.complete(("wgmma", consumer)))
            block.tensor_free = block.now
    return done
