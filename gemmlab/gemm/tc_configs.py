"""The configurations of chapter 8's tensor-core kernel (``kernels/08_tensor_core.cu``), by name.

``tc_gemm`` is one template switched per configuration: block tile ``BM x BN x BK`` (``BK`` in elements of
the input format), warp tile ``WM x WN``, ``STAGES`` shared-memory tiles in the ring, and six switches, each a
step of the chapter or a variant it tries: ``SWIZZLE`` (the XOR swizzle of 16-byte chunks, :func:`gemmlab.models.mma.swizzle_chunk`),
``ASYNC`` (``cp.async`` copies, on sm_80 and later), ``PREFETCH`` (the next k-step's fragments loaded during
this one's ``mma``), ``SPREAD`` (the next tile's copies issued a share per k-step), ``INNER`` (tiles wholly
inside the matrices copied without bounds checks) and ``TAIL`` (the last wave's K-tiles shared out over more blocks,
stream-K; where and how: :mod:`gemmlab.models.tail`). Python owns the list:
:func:`entry_points` writes the ``extern "C"`` kernels that :mod:`gemmlab.gemm.units` appends to the file,
one per configuration and input format (``precisions``), as :mod:`gemmlab.gemm.fast_configs` does for chapter 7.
Pure Python, no GPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from . import fast_configs

SOURCE = "08_tensor_core.cu"
SUFFIXES = {"FP16": "f16", "BF16": "bf16", "TF32": "tf32"}
"""The input formats and the suffix of their entry points."""
KINDS = {"FP16": "F16", "BF16": "BF16", "TF32": "TF32"}
"""The ``Kind`` constant of the kernel's template for each input format."""
ELEMENT_BYTES = {"FP16": 2, "BF16": 2, "TF32": 4}
"""Bytes per element of each input format, as the kernels store it (TF32 in a 32-bit word)."""
SIXTEEN_BIT = ("FP16", "BF16")


@dataclass(frozen=True)
class TcConfig:
    """One instantiation of ``tc_gemm``."""

    BM: int
    BN: int
    BK: int
    WM: int
    WN: int
    STAGES: int
    SWIZZLE: bool
    ASYNC: bool
    PREFETCH: bool = False
    SPREAD: bool = False
    INNER: bool = False
    TAIL: bool = False
    precisions: tuple[str, ...] = SIXTEEN_BIT
    MIN_BLOCKS: int = 1

    @property
    def function(self) -> str:
        """The entry point's name without its precision suffix."""
        return (f"tc_mma_{self.BM}x{self.BN}x{self.BK}_{self.WM}x{self.WN}_s{self.STAGES}"
                + ("_swz" if self.SWIZZLE else "") + ("_async" if self.ASYNC else "") + ("_pf" if self.PREFETCH else "")
                + ("_sp" if self.SPREAD else "") + ("_in" if self.INNER else "") + ("_tail" if self.TAIL else "")
                + (f"_b{self.MIN_BLOCKS}" if self.MIN_BLOCKS > 1 else ""))

    @property
    def threads(self) -> int:
        return 32 * (self.BM // self.WM) * (self.BN // self.WN)

    def ring(self, capability: tuple[int, int] = (8, 0)) -> int:
        """The tiles the kernel's ring holds when compiled for compute capability ``capability``: ``STAGES`` from
        sm_80 on; 2 before it, where there is no ``cp.async`` and the kernel copies synchronously (its ``RING``)."""
        return self.STAGES if tuple(capability) >= (8, 0) else 2

    def shared_bytes(self, precision: str = "FP16", capability: tuple[int, int] = (8, 0)) -> int:
        """The dynamic shared memory a block asks for, in bytes, when compiled for ``capability``: :meth:`ring` tiles
        of A (BM x BK) and of B (BK x BN), at :data:`ELEMENT_BYTES` an element."""
        return self.ring(capability) * ELEMENT_BYTES[precision] * (self.BM * self.BK + self.BK * self.BN)

    def problems(self) -> list[str]:
        """What the template's ``static_assert`` lines would refuse, said before compiling anything."""
        out = []
        unknown = [p for p in self.precisions if p not in SUFFIXES]
        if unknown or not self.precisions:
            out.append(f"precisions must be some of {', '.join(SUFFIXES)}, got {self.precisions!r}")
            return out
        if self.BM % self.WM or self.BN % self.WN or self.WM % 16 or self.WN % 16:
            out.append("BM and BN must be multiples of the warp tile, the warp tile of 16")
        for p in self.precisions:
            row = self.BK * ELEMENT_BYTES[p]
            if row % 64:
                out.append(f"{p}: a row of BK = {self.BK} elements is {row} bytes; it must be a multiple of 64 (two k-steps)")
            elif (self.BM * row // 16) % self.threads or (self.BN * row // 16) % self.threads:
                out.append(f"{p}: the {self.threads} threads must copy whole 16-byte chunks of both tiles")
        if self.STAGES < 2 or (not self.ASYNC and self.STAGES != 2):
            out.append("at least 2 stages, and more than 2 only with ASYNC (cp.async)")
        if self.SPREAD and not self.PREFETCH:
            out.append("SPREAD is part of the PREFETCH loop")
        return out

    def entry_points(self) -> str:
        """The C++ appended to ``08_tensor_core.cu`` for this configuration: a kernel per input format."""
        if self.problems():
            raise ValueError(f"{self.function}: {'; '.join(self.problems())}")
        args = (f"{self.BM}, {self.BN}, {self.BK}, {self.WM}, {self.WN}, {self.STAGES}, "
                + ", ".join("true" if f else "false" for f in (self.SWIZZLE, self.ASYNC, self.PREFETCH, self.SPREAD,
                                                                     self.INNER)))
        # TAIL: two more parameters, the whole tiles and the units that share the rest (gemmlab.models.tail.split)
        params, call, extra = ((", int full_tiles, int units", "tc_tail", ", full_tiles, units") if self.TAIL
                               else ("", "tc_tile", ""))
        return "".join(
            f'extern "C" __global__ void __launch_bounds__({self.threads}, {self.MIN_BLOCKS})\n'
            f"{self.function}_{SUFFIXES[p]}(const void* A, const void* B, float* C, int M, int N, int K{params})\n"
            f"{{\n    {call}<{args}, {KINDS[p]}>(A, B, C, M, N, K{extra});\n}}\n"
            for p in self.precisions)


# Chapter 8's steps, each named once: the ladder for FP16 and BF16 inputs, the TF32 ladder, and the variants that
# were measured and not kept (the lab notes time them).
MMA = TcConfig(128, 128, 32, 64, 64, 2, False, False)                      # mma.sync + ldmatrix
SWIZZLE = TcConfig(128, 128, 32, 64, 64, 2, True, False)                   # + the swizzle
ASYNC = TcConfig(128, 128, 32, 64, 64, 2, True, True)                      # + cp.async
STAGES = TcConfig(128, 128, 32, 64, 64, 4, True, True)                     # + 4 stages
PREFETCH = TcConfig(128, 128, 32, 64, 64, 4, True, True, True)             # + fragment prefetch
WIDE = TcConfig(128, 256, 32, 64, 64, 4, True, True, True)                 # + 128 x 256 blocks
INNER = TcConfig(128, 256, 32, 64, 64, 4, True, True, True, INNER=True)    # + inner tiles copied without checks
TAIL = TcConfig(128, 256, 32, 64, 64, 4, True, True, True, INNER=True, TAIL=True)   # + a stream-K last wave
SPREAD = TcConfig(128, 256, 32, 64, 64, 4, True, True, True, True)         # tried: copies spread over the k-steps
WIDE_NO_PREFETCH = TcConfig(128, 256, 32, 64, 64, 4, True, True)           # tried: 128 x 256 without the prefetch
DEEP = TcConfig(128, 256, 64, 64, 64, 3, True, True, True)                 # tried: deeper tiles, half the barriers
TURNED = TcConfig(256, 128, 32, 64, 64, 4, True, True, True)               # tried: the tile turned around
TF32_PREFETCH = TcConfig(128, 128, 16, 64, 64, 4, True, True, True, precisions=("TF32",))   # BK in 4-byte elements
TF32_WIDE = TcConfig(128, 256, 16, 64, 64, 4, True, True, True, precisions=("TF32",))
TF32_INNER = TcConfig(128, 256, 16, 64, 64, 4, True, True, True, INNER=True, precisions=("TF32",))
TF32_TAIL = TcConfig(128, 256, 16, 64, 64, 4, True, True, True, INNER=True, TAIL=True, precisions=("TF32",))

CONFIGS = (MMA, SWIZZLE, ASYNC, STAGES, PREFETCH, WIDE, SPREAD, WIDE_NO_PREFETCH, DEEP, TURNED, TF32_PREFETCH, TF32_WIDE,
           INNER, TF32_INNER, TAIL, TF32_TAIL)
"""Every configuration compiled into the course's unit (each one compiles without spills on sm_75-sm_90), in the
order of their entry points in the unit's generated text."""
TRIED = (SPREAD, WIDE_NO_PREFETCH, DEEP, TURNED)
"""The variants chapter 8 measured and did not keep."""


def entry_points(configs: Iterable[TcConfig] = CONFIGS) -> str:
    """The C++ appended to ``08_tensor_core.cu``: the entry points of every configuration."""
    fast_configs.check_unique(c.function for c in configs)
    return "\n".join(c.entry_points() for c in configs)


@dataclass(frozen=True)
class TmaWsConfig:
    """``tc_tma_ws`` (Hopper only): ``tc_inner``'s 128 x 256 tile and 64 x 64 warp tiles, its K-tiles of ``BK``
    16-bit elements copied by the SM's copy engine into a ring of ``STAGES`` stages for a producer warpgroup of its
    own (:mod:`gemmlab.gemm.tensor_tma` launches it). FP16 and BF16 inputs only: TF32's B is stored K-major, another kernel."""

    BK: int = 64
    STAGES: int = 4
    BM = 128
    BN = 256
    THREADS = 384
    """8 warps that multiply and a producer warpgroup of 4."""
    precisions = SIXTEEN_BIT
    ARCH = "sm_90a"
    """``setmaxnreg`` and the tensor copies are Hopper's own instructions: the unit compiles for sm_90a alone."""
    DEFINE = "TC_TMA_WS"
    """The macro that opens the kernel's region of ``08_tensor_core.cu`` (and its include of ``09_hopper.cu``)."""

    @property
    def function(self) -> str:
        return f"tc_tma_ws_k{self.BK}_s{self.STAGES}"

    @property
    def shared_bytes(self) -> int:
        """The ring of stages (A's BM x BK tile, B's BK x BN) at 2 bytes an element, and 1 KiB to align it to 1,024
        bytes, where the copy engine's swizzle pattern starts."""
        return self.STAGES * (self.BM + self.BN) * self.BK * 2 + 1024

    def entry_points(self) -> str:
        """The C++ appended to ``08_tensor_core.cu`` in its Hopper unit: a kernel per input format."""
        return "".join(
            f'extern "C" __global__ void __launch_bounds__({self.THREADS}, 1)\n'
            f"{self.function}_{SUFFIXES[p]}(const __grid_constant__ CUtensorMap a_map, "
            f"const __grid_constant__ CUtensorMap b_map, float* C, int M, int N, int K)\n"
            f"{{\n    tc_tma_ws<{self.BK}, {self.STAGES}, {KINDS[p]}>(&a_map, &b_map, C, M, N, K);\n}}\n"
            for p in self.precisions)


TMA_WS = TmaWsConfig()
"""The configuration of chapter 8's Hopper step, 64-deep tiles in a ring of 4 stages (193 KiB). In the experiment
that chose it (``results/tma-ws-h200.txt``) 32-deep tiles in rings of 4 and 6 were 7-10% slower."""


def config(function: str) -> TcConfig:
    """The configuration whose entry point (without its precision suffix) is ``function``."""
    for c in CONFIGS:
        if c.function == function:
            return c
    raise KeyError(f"{function!r} is not a configuration of {SOURCE}; see gemmlab.gemm.tc_configs.CONFIGS")
