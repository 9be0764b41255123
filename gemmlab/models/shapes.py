"""Waves of blocks, and the size-aware choice that splits K when a grid is too small for the GPU (chapter 7).

A GPU runs a grid in *waves*: with ``slots = SMs x blocks per SM`` resident at once, ``blocks`` take
``ceil(blocks / slots)`` rounds, and the last round may leave most slots idle. At 1024^3 the fast
kernel's 128x128 tiles make 64 blocks; the H200 holds 2 of them on each of its 132 SMs, so one wave
uses 64 of 264 slots. Splitting K into S parts gives S times the blocks, each with 1/S of the K-loop,
at the price of zeroing C and adding the parts atomically. :func:`choose_split` takes the smallest S
that makes the wave model's time shortest, that price included, for grids of less than one wave;
:func:`plan` says why. Pure Python: no GPU.
"""

from __future__ import annotations

import math
from typing import Sequence
from dataclasses import dataclass

SPLITS = (1, 2, 4, 8)
"""The split-K factors compiled into ``07_fast.cu`` (:data:`gemmlab.gemm.fast_configs.CONFIGS`)."""

MIN_K_TILES = 8
"""The fewest K-tiles a part keeps. Below that the prologue and the atomic store are no longer small next
to the loop (with a K-tile of 16, eight K-tiles are 128 columns of K per part)."""


SPLIT_COST_K_TILES = 2
"""What a split part pays beyond its K-loop (C zeroed first, its tile of C added atomically, one more
prologue), in K-tiles of the loop: a round figure, not a measurement (chapter 7 sets the model's times
next to measured ones)."""


@dataclass(frozen=True)
class Waves:
    """A grid of ``blocks`` on ``slots`` resident places (SMs x blocks per SM)."""

    blocks: int
    slots: int

    @property
    def waves(self) -> int:
        return math.ceil(self.blocks / self.slots)

    @property
    def fill(self) -> float:
        """The share of the slots the waves keep busy (1.0 when blocks is a multiple of slots)."""
        return self.blocks / (self.waves * self.slots)


def tiles(M: int, N: int, tile: tuple[int, int]) -> int:
    """Blocks of a grid that gives each block a ``tile`` = (rows, cols) of C."""
    return math.ceil(M / tile[0]) * math.ceil(N / tile[1])


def waves(M: int, N: int, tile: tuple[int, int], blocks_per_sm: int, sms: int, split: int = 1) -> Waves:
    if min(blocks_per_sm, sms, split) < 1:
        raise ValueError(f"blocks per SM ({blocks_per_sm}), SMs ({sms}) and the split ({split}) must be at least 1")
    return Waves(tiles(M, N, tile) * split, blocks_per_sm * sms)


def relative_time(M: int, N: int, K: int, tile: tuple[int, int], bk: int, blocks_per_sm: int, sms: int, split: int) -> int:
    """The wave model's time, in K-tiles one slot works through: waves x (K-tiles per part, plus
    :data:`SPLIT_COST_K_TILES` when K is split)."""
    per_part = math.ceil(math.ceil(K / bk) / split) + (SPLIT_COST_K_TILES if split > 1 else 0)
    return waves(M, N, tile, blocks_per_sm, sms, split).waves * per_part


def choose_split(M: int, N: int, K: int, tile: tuple[int, int], bk: int, blocks_per_sm: int, sms: int,
                 splits: Sequence[int] = SPLITS) -> int:
    """The smallest split of K with the shortest modelled time. K is split only when the tiles of C do
    not fill one wave (past that, the last wave's idle slots are a small share of the time, and the
    atomic traffic grows with M x N), and only into parts of at least :data:`MIN_K_TILES` K-tiles."""
    if tiles(M, N, tile) >= blocks_per_sm * sms:
        return 1
    allowed = [s for s in splits if s == 1 or math.ceil(K / bk) >= s * MIN_K_TILES]
    return min(allowed, key=lambda s: (relative_time(M, N, K, tile, bk, blocks_per_sm, sms, s), s))


def plan(M: int, N: int, K: int, tile: tuple[int, int], bk: int, blocks_per_sm: int, sms: int,
         splits: Sequence[int] = SPLITS) -> list[tuple[int, int, int, float, int, int, bool]]:
    """One row per split for the chapter's table: split, blocks, waves, fill, K-tiles per part, modelled time, chosen."""
    best = choose_split(M, N, K, tile, bk, blocks_per_sm, sms, splits)
    rows = []
    for s in splits:
        w = waves(M, N, tile, blocks_per_sm, sms, s)
        rows.append((s, w.blocks, w.waves, w.fill, math.ceil(math.ceil(K / bk) / s),
                     relative_time(M, N, K, tile, bk, blocks_per_sm, sms, s), s == best))
    return rows
