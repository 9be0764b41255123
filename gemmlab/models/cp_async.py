"""Chapter 8's ``cp.async`` ring over time, without a GPU: when each K-tile's copy is issued, when it lands, when the
warps compute on it, and what they wait for in between.

The kernel (``kernels/08_tensor_core.cu``, region ``pipeline``, the loop without ``PREFETCH``): the block's warps
issue their own 16-byte ``cp.async`` copies into a ring of ``stages`` stages. First ``stages - 1`` K-tiles, one
commit group each; then, for every K-tile ``kt``: ``cp.async.wait_group stages - 2`` (at most that many younger
groups still pending, so K-tile ``kt``'s group has landed), ``__syncthreads()`` (every warp's copies are visible,
and every warp is past K-tile ``kt - 1``), the copies of K-tile ``kt + stages - 1`` into the stage ``kt - 1`` used,
one commit (an empty group past the last K-tile), then the ``ldmatrix`` and ``mma`` of K-tile ``kt``.
:data:`LOOP` is that order; ``tests/test_cp_async.py`` reads it from the kernel.

Time is counted in cycles of a simple clock (:class:`Timing`): issuing one K-tile's copies, a barrier, a copy's
flight and one K-tile's compute each take a fixed number of cycles. The numbers are for pictures, not measurements.
"""

from __future__ import annotations

from dataclasses import dataclass

LOOP = ("wait_group", "__syncthreads", "issue", "commit", "compute")
"""The steps of one K-tile of the main loop, in the kernel's order."""


@dataclass(frozen=True)
class Timing:
    """Cycles per step: issuing one K-tile's copies, ``__syncthreads()``, a copy from issue to landing, and the
    ``ldmatrix`` and ``mma`` of one K-tile."""

    issue: int = 1
    sync: int = 1
    copy: int = 9
    compute: int = 4


@dataclass(frozen=True)
class KTile:
    """One K-tile's life: the stage it uses, when its copies were issued and landed, and when its compute ran
    (``computed`` to ``done``)."""

    k_tile: int
    stage: int
    issued: int
    landed: int
    computed: int
    done: int


@dataclass(frozen=True)
class Span:
    """What the block's warps do from ``start`` to ``end``: one of :data:`LOOP`'s steps (``commit`` takes no time
    and has no span), for K-tile ``k_tile`` (for ``issue``: the K-tile whose copies are issued)."""

    what: str
    k_tile: int
    start: int
    end: int


@dataclass(frozen=True)
class Ring:
    """The timeline of one block's main loop: every K-tile (:class:`KTile`, in order) and the warps' spans."""

    stages: int
    k_tiles: list[KTile]
    warps: list[Span]

    @property
    def wait_depth(self) -> int:
        """The N of ``cp.async.wait_group N``: the groups that may still be pending when the warps go on."""
        return wait_depth(self.stages)

    @property
    def cycles(self) -> int:
        """When the last K-tile's compute ends."""
        return max((t.done for t in self.k_tiles), default=0)


def wait_depth(stages: int) -> int:
    """``cp.async.wait_group``'s argument in a ring of ``stages``: ``stages - 1`` groups are in flight, and the
    oldest must have landed."""
    return stages - 2


def ring(stages: int = 3, k_tiles: int = 8, timing: Timing = Timing()) -> Ring:
    """Play the kernel's ring of ``stages`` stages over ``k_tiles`` K-tiles: the prologue's ``stages - 1`` commit
    groups, then :data:`LOOP` per K-tile. ``cp.async.wait_group N`` waits until all but the ``N`` youngest
    committed groups have landed (an empty group has landed when it is committed)."""
    if stages < 2:
        raise ValueError(f"a ring has at least 2 stages, got {stages}")
    if k_tiles < 1:
        raise ValueError(f"k_tiles must be at least 1, got {k_tiles}")
    t = 0
    groups: list[int] = []                       # when each committed group has landed, in commit order
    issued: dict[int, int] = {}
    warps: list[Span] = []

    def issue(kt: int) -> None:
        nonlocal t
        if kt < k_tiles:
            warps.append(Span("issue", kt, t, t + timing.issue))
            t += timing.issue
            issued[kt] = t - timing.issue
            groups.append(issued[kt] + timing.copy)
        else:
            groups.append(t)                     # the commit of an empty group

    for kt in range(stages - 1):                 # the prologue: one group per K-tile, committed even if empty
        issue(kt)
    out: list[KTile] = []
    for kt in range(k_tiles):
        ready = max(groups[:len(groups) - wait_depth(stages)], default=t)
        if ready > t:
            warps.append(Span("wait_group", kt, t, ready))
            t = ready
        warps.append(Span("__syncthreads", kt, t, t + timing.sync))
        t += timing.sync
        issue(kt + stages - 1)                   # into the stage K-tile kt - 1 used
        warps.append(Span("compute", kt, t, t + timing.compute))
        out.append(KTile(kt, kt % stages, issued[kt], issued[kt] + timing.copy, t, t + timing.compute))
        t += timing.compute
    return Ring(stages, out, warps)
