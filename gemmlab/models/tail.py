"""Chapter 8's last wave, shared out (``TAIL``, the stream-K tail of ``kernels/08_tensor_core.cu``), without a GPU.

A grid of T tiles, one block each and one block per SM at a time, runs in waves of S (the SMs; chapter 7's wave
model, :mod:`gemmlab.models.shapes`). Where T is not a
multiple of S the last wave is partly empty: at 8192^3 in tiles of 128 x 256, 2,048 tiles on 132 SMs are 15 full
waves and one of 68 tiles, so 64 SMs idle through the last sixteenth of the time. :func:`split` decides, as the
launcher does, how many tiles run whole (the full waves) and over how many more blocks (``units``, one wave) the
K-tiles of the rest are shared out evenly; the kernel adds those parts into C, zeroed there first.

Sharing costs something: the parts of a tile meet in C through atomic adds, and each part fills the ring of stages
anew. Measured on the H200 (``results/streamk-tail-tc-inner-h200.txt`` and ``results/tail-variants-h200.txt``,
interleaved with ``tc_inner``): it pays at 8192^3 (last wave 52% full, 132 K-tiles per unit) and loses where the last
wave is fuller or the shares are short (4096^3: 88% full, 7-9% slower; 3000 x 5000 x 1234: 64% full and 25 K-tiles
per unit, 15% slower). Hence the rule: share only a last wave under :data:`FILL_LIMIT` full, in shares of at least
:data:`MIN_SHARE` K-tiles. Pure Python.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from . import shapes

FILL_LIMIT = 0.6
"""Share the last wave only where it is less full than this (a fraction of the SMs)."""
MIN_SHARE = 64
"""... and where each unit's share is at least this many K-tiles, so that the adds and the ring's start-up are a
small part of its work."""


@dataclass(frozen=True)
class Split:
    """How a launch of the tail kernel divides C's ``tiles``: ``whole`` of them one block each, the K-tiles of the
    rest over ``units`` more blocks (0 where nothing is shared)."""

    tiles: int
    k_tiles: int
    sms: int
    whole: int
    units: int

    @property
    def blocks(self) -> int:
        """The blocks of the grid, one per whole tile and then the units."""
        return self.whole + self.units

    @property
    def shared_tiles(self) -> int:
        return self.tiles - self.whole

    @property
    def share(self) -> float:
        """K-tiles per unit (0 where nothing is shared)."""
        return self.shared_tiles * self.k_tiles / self.units if self.units else 0.0

    @property
    def last_wave_fill(self) -> float:
        """How full the last wave of one block per tile would be, 1.0 where every wave is full."""
        left = self.tiles % self.sms
        return left / self.sms if left else 1.0

    @property
    def last_wave_share(self) -> float:
        """K-tiles per unit, were the last wave's tiles shared over ``sms`` units (what :data:`MIN_SHARE` bounds)."""
        return self.tiles % self.sms * self.k_tiles / self.sms

    def waves(self) -> float:
        """The time of the launch in waves of whole tiles, counting a shared K-tile as its share of a tile and
        nothing for the adds: a full wave per ``sms`` whole tiles begun, plus the units' share."""
        return -(-self.whole // self.sms) + self.share / self.k_tiles

    def waves_unshared(self) -> int:
        """The same product with one block per tile: every wave, the last one too, takes a whole wave's time."""
        return shapes.Waves(self.tiles, self.sms).waves


def split(tiles: int, k_tiles: int, sms: int, whole: int | None = None) -> Split:
    """The launcher's choice for ``tiles`` tiles of ``k_tiles`` K-tiles on ``sms`` SMs (:data:`FILL_LIMIT`,
    :data:`MIN_SHARE`). ``whole`` forces another split (tests of odd cases): that many tiles whole, the rest
    shared over ``sms`` units."""
    if min(tiles, k_tiles, sms) < 1:
        raise ValueError(f"tiles, K-tiles and SMs must be at least 1, got {tiles}, {k_tiles}, {sms}")
    if whole is not None:
        if not 0 <= whole <= tiles:
            raise ValueError(f"whole tiles must lie in 0..{tiles}, got {whole}")
        return Split(tiles, k_tiles, sms, whole, sms if whole < tiles else 0)
    unshared = Split(tiles, k_tiles, sms, tiles, 0)
    if unshared.last_wave_fill >= FILL_LIMIT or unshared.last_wave_share < MIN_SHARE:
        return unshared
    return replace(unshared, whole=tiles - tiles % sms, units=sms)


def parts(s: Split, unit: int) -> list[tuple[int, int, int]]:
    """The work of block ``unit`` of a launch split as ``s``, as ``(tile, kt_lo, kt_hi)``: its whole tile, or its
    parts of the shared tiles, K-tiles ``[kt_lo, kt_hi)`` each (``tc_tail`` in the kernel, the same arithmetic)."""
    if not 0 <= unit < s.blocks:
        raise ValueError(f"unit must lie in 0..{s.blocks - 1}, got {unit}")
    if unit < s.whole:
        return [(unit, 0, s.k_tiles)]
    u, work = unit - s.whole, s.shared_tiles * s.k_tiles
    lo, hi = u * work // s.units, (u + 1) * work // s.units
    out = []
    while lo < hi:
        t, kt = lo // s.k_tiles, lo % s.k_tiles
        end = min(hi, (t + 1) * s.k_tiles)
        out.append((s.whole + t, kt, kt + end - lo))
        lo = end
    return out
