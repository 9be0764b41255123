"""Choosing the fast kernel's tile parameters for the GPU at hand (chapter 7).

``kernels/07_fast.cu`` compiles one template, ``fast::gemm<BM, BN, BK, WM, WN, TM, TN, THREADS,
PHASES, STORE, GROUP, ORDER>``, for a list of parameter sets, each an ``extern "C"`` entry point.
:func:`search_space` reads those sets from the source, :meth:`FastConfig.problems` checks one the way
the template's ``static_assert``\\ s do (so a configuration can be judged without a compiler), and
:func:`tune` times every entry point on this GPU and ranks them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields

from . import provenance

SOURCE = "07_fast.cu"
MAX_STATIC_SHARED = 48 * 1024       # static __shared__ arrays may not exceed this on any GPU
MAX_REGISTERS = 255


@dataclass(frozen=True)
class FastConfig:
    """One parameter set of the fast kernel (names as in the template)."""

    BM: int                         # block tile: rows of C
    BN: int                         # block tile: columns of C
    BK: int                         # K-step: depth of the shared tiles
    WM: int                         # warp tile rows
    WN: int                         # warp tile columns
    TM: int                         # thread tile rows
    TN: int                         # thread tile columns
    THREADS: int                    # threads per block (one warp per warp tile)
    PHASES: int = 1                 # the next tile's global loads are issued in this many groups
    STORE: int = 3                  # k-step (within a phase) at which loaded values are stored
    GROUP: int = 8                  # block rows per swizzle group (L2 locality)
    ORDER: int = 0                  # order of the TM x TN FMAs (0 rows, 1 columns, 2 snake)
    function: str = ""              # the entry point compiled with these parameters, if any

    @property
    def warps(self) -> int:
        return (self.BM // self.WM) * (self.BN // self.WN) if self.WM and self.WN else 0

    @property
    def shared_bytes(self) -> int:
        """Two stages of the transposed A tile (rows padded by 4 floats) and of the B tile."""
        return 2 * self.BK * (self.BM + 4 + self.BN) * 4

    @property
    def min_registers(self) -> int:
        """The fewest registers a thread can have (its accumulators, two sets of fragments and the tiles in flight)."""
        in_flight = 4 * (self.BM * self.BK + self.BK * self.BN) // 4 // max(self.THREADS, 1)
        return self.TM * self.TN + 2 * (self.TM + self.TN) + in_flight

    def problems(self) -> list[str]:
        """Why this configuration cannot be compiled or run, one sentence each (empty: it can)."""
        p = []
        if min(self.BM, self.BN, self.BK, self.WM, self.WN, self.TM, self.TN, self.THREADS, self.PHASES) < 1:
            return ["every tile size, THREADS and PHASES must be positive"]
        if self.TM % 4 or self.TN % 4:
            p.append(f"the thread tile {self.TM}x{self.TN} must be made of 4x4 sub-blocks (float4 fragments)")
        if self.BM % self.WM or self.BN % self.WN:
            p.append(f"the warp tile {self.WM}x{self.WN} must divide the block tile {self.BM}x{self.BN}")
        lanes_m, lanes_n = self.WM // self.TM, self.WN // self.TN
        if self.WM % self.TM or self.WN % self.TN or lanes_m * lanes_n != 32:
            p.append(f"a warp tile must hold exactly 32 thread tiles: {self.WM}x{self.WN} holds "
                     f"{self.WM * self.WN / (self.TM * self.TN):g} of {self.TM}x{self.TN}")
        elif lanes_m % 2:
            p.append(f"the lane layout pairs lanes along M, so WM/TM = {lanes_m} must be even")
        if self.THREADS != self.warps * 32:
            p.append(f"THREADS = {self.THREADS} must be 32 per warp tile: {self.warps} warp tiles need {self.warps * 32}")
        if self.THREADS > 1024:
            p.append(f"THREADS = {self.THREADS} exceeds 1024 threads per block")
        if self.BK % 4:
            p.append(f"BK = {self.BK} must be a multiple of 4 (float4 loads of A along k)")
        for name, total, per_row in (("A", self.BM * self.BK // 4, self.BK // 4), ("B", self.BK * self.BN // 4, self.BN // 4)):
            if not (total % self.THREADS == 0 or self.THREADS % max(total, 1) == 0) or self.THREADS % max(per_row, 1):
                p.append(f"the tile of {name} ({total} float4) does not split into whole float4 loads over {self.THREADS} threads")
        a_f4 = -(-self.BM * self.BK // 4 // self.THREADS)
        b_f4 = -(-self.BK * self.BN // 4 // self.THREADS)
        if a_f4 % self.PHASES or b_f4 % self.PHASES or self.BK % self.PHASES:
            p.append(f"PHASES = {self.PHASES} must divide BK and each thread's float4 loads of A ({a_f4}) and B ({b_f4})")
        elif not 0 <= self.STORE < self.BK // self.PHASES:
            p.append(f"STORE = {self.STORE} must be a k-step within a phase (0 to {self.BK // self.PHASES - 1})")
        if self.shared_bytes > MAX_STATIC_SHARED:
            p.append(f"two stages of the tiles need {self.shared_bytes:,} bytes of shared memory, above the "
                     f"{MAX_STATIC_SHARED:,} a kernel may declare statically")
        if self.min_registers > MAX_REGISTERS:
            p.append(f"a thread would need at least {self.min_registers} registers, above the {MAX_REGISTERS} allowed")
        return p

    def validate(self) -> FastConfig:
        """This configuration, or a ValueError listing every problem."""
        p = self.problems()
        if p:
            raise ValueError(f"invalid fast-kernel configuration {self.label}: " + "; ".join(p))
        return self

    @property
    def label(self) -> str:
        return (f"{self.BM}x{self.BN}x{self.BK} warp {self.WM}x{self.WN} thread {self.TM}x{self.TN} "
                f"({self.THREADS} threads)")


_ENTRY = re.compile(r"__global__\s+void\s+__launch_bounds__\(\s*\d+(?:\s*,\s*\d+)?\s*\)\s+(\w+)\s*\([^)]*\)\s*"
                    r"\{\s*fast::gemm<([^>]*)>")


def search_space(text: str | None = None) -> list[FastConfig]:
    """The parameter sets compiled in ``kernels/07_fast.cu`` (or in ``text``), one per entry point."""
    if text is None:
        text = (provenance.KERNELS_DIR / SOURCE).read_text(encoding="utf-8")
    names = [f.name for f in fields(FastConfig) if f.name != "function"]
    configs = []
    for function, args in _ENTRY.findall(text):
        values = [int(a) for a in args.split(",")]
        configs.append(FastConfig(**dict(zip(names, values)), function=function))
    return configs


@dataclass(frozen=True)
class Trial:
    config: FastConfig
    tflops: float
    correct: bool


def tune(M: int = 4096, N: int = 4096, K: int = 4096, configs=None, repeat: int = 3, log=print) -> list[Trial]:
    """Time every configuration (default: :func:`search_space`) at M×N×K on this GPU, check each
    result, and return the trials fastest first (wrong results last)."""
    from . import bench, launch, verify

    configs = list(configs or search_space())
    A, B = verify.random_operands(M, N, K, seed=7)
    ref = verify.Reference(A, B)
    trials = []
    for c in configs:
        c.validate()
        k = launch.GemmKernel(c.function, 7, SOURCE, c.function, (c.THREADS, 1, 1), (c.BM, c.BN))
        r = bench.time_gemm(k, A, B, repeat, ref)
        trials.append(Trial(c, r.tflops, r.correct))
        log(f"{c.label:<48} {r.tflops:6.2f} TFLOP/s{'' if r.correct else '  WRONG'}")
    return sorted(trials, key=lambda t: (not t.correct, -t.tflops))
