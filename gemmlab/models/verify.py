"""Checking a kernel's C against a float64 NumPy reference.

The tolerance is the classical error bound of a length-K dot product in float32:
``|C - A·B| <= gamma(K+2) · (|A|·|B|)`` element by element, with ``gamma(n) = n·u / (1 - n·u)``
and ``u = 2**-24``. It holds for any order of summation, so it never fails a correct kernel,
and it grows with K as rounding errors do. Any NaN or Inf fails.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

UNIT_ROUNDOFF = 2.0**-24


def reference(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A·B in float64 from the float32 inputs."""
    return A.astype(np.float64) @ B.astype(np.float64)


def tolerance(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Per-element bound ``gamma(K+2)·(|A|·|B|)`` (plus the smallest normal float32, for exact zeros)."""
    n = A.shape[1] + 2
    gamma = n * UNIT_ROUNDOFF / (1 - n * UNIT_ROUNDOFF)
    return gamma * (np.abs(A).astype(np.float64) @ np.abs(B).astype(np.float64)) + np.finfo(np.float32).tiny


@dataclass(frozen=True)
class Verdict:
    ok: bool
    total: int
    wrong: int
    nonfinite: int
    max_abs_error: float
    max_excess: float          # max of |error| / tolerance: below 1 means within bound
    worst: tuple[int, int] | None

    def __str__(self) -> str:
        if self.ok:
            return f"correct: all {self.total:,} elements within the float32 error bound"
        parts = [f"WRONG: {self.wrong:,} of {self.total:,} elements outside the error bound"]
        if self.nonfinite:
            parts.append(f"{self.nonfinite:,} NaN/Inf")
        if self.worst is not None:
            parts.append(f"worst at C[{self.worst[0]}, {self.worst[1]}]")
        return "; ".join(parts)


def _require_shape(C: np.ndarray, A: np.ndarray, B: np.ndarray) -> None:
    if C.shape != (A.shape[0], B.shape[1]):
        raise ValueError(f"C has shape {C.shape}, expected {(A.shape[0], B.shape[1])} for A {A.shape} times B {B.shape}")


class Reference:
    """A·B and its error bound, computed once for checking several kernels on the same operands."""

    def __init__(self, A: np.ndarray, B: np.ndarray):
        self.A, self.B = A, B
        self.value = reference(A, B)
        self.bound = tolerance(A, B)

    def errors(self, C: np.ndarray) -> np.ndarray:
        """``|C - A·B|`` element by element, infinite where C is NaN or infinite."""
        _require_shape(C, self.A, self.B)
        C64 = C.astype(np.float64)
        return np.where(np.isfinite(C64), np.abs(C64 - self.value), np.inf)

    def wrong(self, C: np.ndarray) -> np.ndarray:
        """Boolean map of the elements of C outside the error bound (or not finite)."""
        return ~(self.errors(C) <= self.bound)

    def check(self, C: np.ndarray) -> Verdict:
        """Compare a kernel's ``C``; report how many elements are wrong and where."""
        err = self.errors(C)
        bad = ~(err <= self.bound)
        excess = err / self.bound
        worst = None
        if bad.any():
            row, col = np.unravel_index(np.argmax(excess), excess.shape)
            worst = int(row), int(col)
        return Verdict(ok=not bad.any(), total=C.size, wrong=int(bad.sum()), nonfinite=int(np.isinf(err).sum()),
                       max_abs_error=float(np.max(err)) if C.size else 0.0,
                       max_excess=float(np.max(excess)) if C.size else 0.0, worst=worst)


def check(C: np.ndarray, A: np.ndarray, B: np.ndarray) -> Verdict:
    """Compare a kernel's ``C`` with A·B; report how many elements are wrong and where."""
    _require_shape(C, A, B)            # before the two float64 products a wrong shape would waste
    return Reference(A, B).check(C)


def wrong_mask(C: np.ndarray, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Boolean map of the elements of C outside the error bound (or not finite)."""
    _require_shape(C, A, B)
    return Reference(A, B).wrong(C)


def random_operands(M: int, N: int, K: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Reproducible float32 operands uniform in [-1, 1)."""
    rng = np.random.default_rng(seed)
    A = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    return A, B
