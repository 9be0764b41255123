"""The course's ladder end to end, as one path of steps: the FP32 kernels of chapters 1,
2, 6 and 7, then chapter 8's tensor-core steps and chapter 9's Hopper steps in one input
format.

Each step is ``(name, chapter, precision, change)``: its registry name (the bench JSON's
``kernel``), the chapter that builds it, its input format and what it changes, as the
registry says it. The book's table and figure of the whole ladder
(:mod:`gemmlab.book.ladder_glance`) follow this path through a bench JSON. Lists only: no
GPU.

"""

from __future__ import annotations

from . import registry

FP32_STEPS = ("naive", "tiled32", "regtile2d_t", "fast")
"""One FP32 kernel for each chapter that builds one (the naive kernel, chapter 2's 32x32
tiles, chapter 6's register tiles with a transposed A tile, and chapter 7's kernel).
``fast_auto`` is the same kernel at square sizes, with K split only where the tiles fill
less than one wave."""

Step = tuple[str, int, str, str]
"""``(name, chapter, precision, change)``."""


def _change(summary: str) -> str:
    """A registry summary as a line of its own: chapters 8 and 9 write theirs as additions
    (``+ ...``)."""
    return summary.removeprefix("+ ").strip()


def steps(precision: str = "BF16") -> list[Step]:
    """The path in chapter order: :data:`FP32_STEPS`, then chapter 8's ladder with its
    Hopper step and chapter 9's ladder (without the kernels beside it) for ``precision``
    (FP16 or BF16)."""
    if precision not in ("FP16", "BF16"):
        raise ValueError("chapters 8 and 9 share the FP16 and BF16 formats; "
                         f"got {precision!r}")
    fp32 = registry.kernels()
    tensor = {**registry.tensor_kernels(precision), **registry.tma_kernels(precision),
              **registry.hopper_kernels(precision)}
    path = [(n, fp32[n].chapter, "FP32", _change(fp32[n].summary)) for n in FP32_STEPS]
    return path + [(n, k.chapter, precision, _change(k.summary))
                   for n, k in tensor.items()]
