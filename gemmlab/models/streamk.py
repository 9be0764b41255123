"""Chapter 9's stream-K tail without a GPU: who computes which K-tiles of which tile (``StreamK`` in
``kernels/09_hopper.cu``, the same arithmetic line for line), and the order in which the parts of a tile cut between
units meet in C.

A persistent grid of G units walks T tiles of k K-tiles each. Where T is not a multiple of G the last round leaves
units idle; :class:`StreamK` shares its K-tiles out evenly instead (:func:`balance` says what that saves). A tile cut
between units comes in parts; the part holding the tile's last K-tile stores its sums, and each other part waits
for the part after it to be in C, then adds its own (:func:`waits_for`), so the additions happen in one order at
every launch. :func:`check` asserts what the kernel relies on; ``tests/test_streamk_split.py`` runs it over
thousands of cases and plays the hand-off under random schedules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


class StreamK:
    """One unit's walk: whole tiles ``unit, unit + units, ...``, then (with ``share``) its range of the shared
    K-tiles, as portions ``(tile, kb, ke)`` from :meth:`next`."""

    def __init__(self, tiles: int, k_tiles: int, units: int, unit: int, share: bool = True):
        self.k, self.units = k_tiles, units
        rounds, left = tiles // units, tiles % units
        # The partial round alone where it keeps at least half the units busy, else the last whole round with it.
        self.whole = tiles if not share or left == 0 else (
            rounds if 2 * left >= units else (rounds - 1 if rounds > 1 else 0)) * units
        self.shared = (tiles - self.whole) * k_tiles
        self.t = unit
        self.i, self.end = self.begin(unit), self.begin(unit + 1)

    def begin(self, u: int) -> int:
        """Where unit ``u``'s shared range begins (and unit ``u - 1``'s ends)."""
        return self.shared * u // self.units

    def next(self) -> tuple[int, int, int] | None:
        """The next portion ``(tile, kb, ke)``: K-tiles ``[kb, ke)`` of ``tile``; None once the unit is done."""
        if self.t < self.whole:
            tile, self.t = self.t, self.t + self.units
            return tile, 0, self.k
        if self.i >= self.end:
            return None
        tile, kb = self.whole + self.i // self.k, self.i % self.k
        ke = kb + (self.end - self.i) if self.end - self.i < self.k - kb else self.k
        self.i += ke - kb
        return tile, kb, ke

    def holder(self, tile: int, kt: int) -> int:
        """The unit whose range holds K-tile ``kt`` of shared tile ``tile``."""
        x = (tile - self.whole) * self.k + kt
        u = x * self.units // self.shared
        while u + 1 < self.units and self.begin(u + 1) <= x:
            u += 1
        while u > 0 and self.begin(u) > x:
            u -= 1
        return u


def plan(tiles: int, k_tiles: int, units: int, share: bool = True) -> list[list[tuple[int, int, int]]]:
    """Each unit's portions, in the order it computes them."""
    out = []
    for u in range(units):
        walk, mine = StreamK(tiles, k_tiles, units, u, share), []
        while (p := walk.next()) is not None:
            mine.append(p)
        out.append(mine)
    return out


def waits_for(walk: StreamK, tile: int, kb: int, ke: int) -> int | None:
    """The unit a portion waits for before its sums go into C: the one holding the part after it (K-tile ``ke``),
    or None for a whole tile or a tile's last part, which store."""
    return walk.holder(tile, ke) if ke < walk.k else None


# One step of a unit's program, ("raise", None) when it raises its flag or ("wait", unit).
Event = tuple[str, int | None]


def check(tiles: int, k_tiles: int, units: int) -> int:
    """Assert what the kernel relies on for T tiles, k K-tiles, G units; return the most K-tiles a unit computes.

    Every (tile, K-tile) is computed once; a part that starts inside a tile (the only kind the unit after it waits
    for) is its unit's first shared portion, so one flag per unit is enough; a part waits only for a later unit,
    for the part that starts where it ends; and with every unit resident at once, nothing stalls."""
    portions = plan(tiles, k_tiles, units)
    walk = StreamK(tiles, k_tiles, units, 0)
    first_shared = walk.whole // units
    seen = [[0] * k_tiles for _ in range(tiles)]
    events: list[list[Event]] = []                       # per unit: ("raise", None) and ("wait", unit) in program order
    for u, mine in enumerate(portions):
        ev: list[Event] = []
        for n, (tile, kb, ke) in enumerate(mine):
            assert 0 <= tile < tiles and 0 <= kb < ke <= k_tiles, (u, tile, kb, ke)
            for kt in range(kb, ke):
                seen[tile][kt] += 1
            h = waits_for(walk, tile, kb, ke)
            if h is not None:
                assert h > u and (tile, ke) in {(t, b) for t, b, _ in portions[h]}, (tiles, k_tiles, units, u, tile)
                ev.append(("wait", h))
            if kb > 0:
                assert n == first_shared, f"unit {u} starts a part inside a tile twice: one flag is not enough"
                ev.append(("raise", None))
        events.append(ev)
    assert all(c == 1 for row in seen for c in row), "a (tile, K-tile) computed twice or never"
    assert runs_to_the_end(events), f"a stall at tiles={tiles} k={k_tiles} units={units}"
    return max((sum(ke - kb for _, kb, ke in mine) for mine in portions), default=0)


def runs_to_the_end(events: Sequence[Sequence[Event]]) -> bool:
    """Whether units that are all resident at once, each going as far as it can, all finish: no cycle of waits."""
    pos, raised = [0] * len(events), set()
    while any(p < len(ev) for p, ev in zip(pos, events)):
        moved = False
        for u, ev in enumerate(events):
            while pos[u] < len(ev) and (ev[pos[u]][0] == "raise" or ev[pos[u]][1] in raised):
                if ev[pos[u]][0] == "raise":
                    raised.add(u)
                pos[u] += 1
                moved = True
        if not moved:
            return False
    return True


def tiles_of(M: int, N: int, BM: int = 128, BN: int = 256, cluster: int = 2) -> int:
    """The units of work of chapter 9's persistent kernels: tiles of C, or pairs of them in clusters of two."""
    return -(-M // (BM * cluster)) * -(-N // BN)


@dataclass(frozen=True)
class Balance:
    """What the busiest unit computes, in tiles of work, with whole tiles only and with the last round shared."""

    tiles: int
    units: int
    whole_tiles_only: int
    shared: float

    @property
    def saving(self) -> float:
        """The fraction of the time the split can save at most (the busiest unit's work is the launch's time)."""
        return 1 - self.shared / self.whole_tiles_only


def balance(M: int, N: int, K: int, units: int, BK: int = 64, **tile: int) -> Balance:
    """The busiest unit's work at one size on ``units`` units (66 clusters on an H200), with and without the split."""
    tiles, k = tiles_of(M, N, **tile), -(-K // BK)
    units = min(units, tiles)
    return Balance(tiles, units, -(-tiles // units), check(tiles, k, units) / k)
