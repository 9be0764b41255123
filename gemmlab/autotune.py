"""Choosing the fast kernel's tile parameters for the GPU at hand (chapter 7).

``kernels/07_fast.cu`` compiles one template, ``fast::gemm<BM, BN, BK, WM, WN, TM, TN, THREADS,
PHASES, STORE, GROUP, STAGES, VEC, SKEW, ASYNC>``, for a list of parameter sets, each an ``extern "C"``
entry point. :func:`search_space` reads those sets from the source (the tuned ones, with every
technique on; ``ablations=True`` adds the entries that switch one technique off),
:meth:`FastConfig.problems` checks one the way the template's ``static_assert``\\ s do (so a
configuration can be judged without a compiler), and :func:`tune` times the entry points on this GPU
and ranks them.
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
    GROUP: int = 8                  # block rows per swizzle group (L2 locality); 1: row-major order
    STAGES: int = 2                 # shared-memory stages: 2 double buffers, 1 loads between two barriers
    VEC: bool = True                # float4 global loads where legal (False: scalar only)
    SKEW: bool = True               # A tile padded every four rows (False: every row, by 4 floats)
    ASYNC: bool = False             # cp.async copies instead of loads and stores through registers
    function: str = ""              # the entry point compiled with these parameters, if any

    @property
    def is_ablation(self) -> bool:
        """One of chapter 7's entries with a technique switched off (not a candidate for tuning)."""
        return not (self.VEC and self.SKEW and self.STAGES == 2 and self.GROUP > 1)

    @property
    def _a_layout(self) -> tuple[int, int]:
        """Floats from one row of the transposed A tile to the next, and from one group of four rows to
        the next (the kernel's ``ATile::ROW`` and ``ATile::GROUP``)."""
        row = self.BM if self.SKEW else self.BM + 4
        return row, (4 * self.BM + 32 // max(self.BK // 4, 1) if self.SKEW else 4 * row)

    @property
    def a_tile_floats(self) -> int:
        """Floats in one stage of the transposed A tile (the kernel's ``ATile::FLOATS``)."""
        return -(-self.BK // 4) * self._a_layout[1]

    @property
    def warps(self) -> int:
        return (self.BM // self.WM) * (self.BN // self.WN) if self.WM and self.WN else 0

    def a_offset(self, k: int, m: int) -> int:
        """Where element (k, m) of the transposed A tile lies in a stage, in floats (``ATile::at``)."""
        row, group = self._a_layout
        return (k // 4) * group + (k % 4) * row + m

    def a_store_addresses(self, warp: int, j: int, i: int = 0) -> list[int]:
        """Byte addresses of one warp's transposing store number ``j`` (0-3) of its ``i``-th float4 of A:
        thread t holds row t // (BK/4) + i * THREADS // (BK/4), k-quad (t % (BK/4)) * 4."""
        kq = self.BK // 4
        out = []
        for lane in range(32):
            t = 32 * warp + lane
            out.append(4 * self.a_offset((t % kq) * 4 + j, t // kq + i * (self.THREADS // kq)))
        return out

    def fragment_addresses(self, warp: int, operand: str, s: int, k: int = 0) -> list[int]:
        """Byte addresses (within a stage) of one warp's float4 fragment read number ``s`` of ``operand``
        ("A" or "B") at step ``k``, with the kernel's lane layout: lanes in pairs along M, each quarter
        warp a 2 x 4 patch, sub-blocks 4 * lanes-across apart."""
        lanes_m, lanes_n = self.WM // self.TM, self.WN // self.TN
        warps_n = self.BN // self.WN
        out = []
        for lane in range(32):
            lm = (lane // (2 * lanes_n)) * 2 + lane % 2
            ln = (lane // 2) % lanes_n
            if operand == "A":
                out.append(4 * self.a_offset(k, (warp // warps_n) * self.WM + lm * 4 + s * lanes_m * 4))
            else:
                out.append(4 * (k * self.BN + (warp % warps_n) * self.WN + ln * 4 + s * lanes_n * 4))
        return out

    @property
    def shared_bytes(self) -> int:
        """STAGES stages of the transposed A tile and of the B tile."""
        return self.STAGES * (self.a_tile_floats + self.BK * self.BN) * 4

    @property
    def min_registers(self) -> int:
        """The fewest registers a thread can have (its accumulators, two sets of fragments and the tiles in flight)."""
        in_flight = 0 if self.ASYNC else (self.BM * self.BK + self.BK * self.BN) // max(self.THREADS, 1)
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
        if self.STAGES not in (1, 2):
            p.append(f"STAGES = {self.STAGES} must be 1 or 2")
        if self.ASYNC and self.STAGES != 2:
            p.append("cp.async copies into the second stage: ASYNC needs STAGES = 2")
        if self.SKEW and (self.BK > 32 or self.BM % 32):
            p.append(f"the skewed A tile needs BK <= 32 and BM a multiple of 32 (BK = {self.BK}, BM = {self.BM})")
        if self.STAGES in (1, 2) and self.shared_bytes > MAX_STATIC_SHARED:
            p.append(f"{self.STAGES} stage(s) of the tiles need {self.shared_bytes:,} bytes of shared memory, above the "
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
        off = [name for name, on in (("scalar loads", self.VEC), ("one stage", self.STAGES == 2),
                                     ("padded A", self.SKEW), ("row-major blocks", self.GROUP > 1)) if not on]
        extras = (["cp.async"] if self.ASYNC else []) + off
        return (f"{self.BM}x{self.BN}x{self.BK} warp {self.WM}x{self.WN} thread {self.TM}x{self.TN} "
                f"({self.THREADS} threads)" + (f" [{', '.join(extras)}]" if extras else ""))


_ENTRY = re.compile(r"__global__\s+void\s+__launch_bounds__\(\s*\d+(?:\s*,\s*\d+)?\s*\)\s+(\w+)\s*\([^)]*\)\s*"
                    r"\{\s*fast::gemm<([^>]*)>")


def _argument(text: str) -> int | bool:
    text = text.strip()
    if text in ("true", "false"):
        return text == "true"
    return int(text)


def search_space(text: str | None = None, ablations: bool = False) -> list[FastConfig]:
    """The parameter sets compiled in ``kernels/07_fast.cu`` (or in ``text``), one per entry point:
    those with every technique on, and with ``ablations=True`` also those with one switched off."""
    if text is None:
        text = (provenance.KERNELS_DIR / SOURCE).read_text(encoding="utf-8")
    names = [f.name for f in fields(FastConfig) if f.name != "function"]
    configs = []
    for function, args in _ENTRY.findall(text):
        values = [_argument(a) for a in args.split(",")]
        if len(values) > len(names):
            raise ValueError(f"{function}: {len(values)} template arguments, FastConfig knows {len(names)}")
        c = FastConfig(**dict(zip(names, values)), function=function)
        if ablations or not c.is_ablation:
            configs.append(c)
    return configs


def config(function: str) -> FastConfig:
    """The configuration of the entry point called ``function`` (ablations included)."""
    found = [c for c in search_space(ablations=True) if c.function == function]
    if not found:
        raise KeyError(f"{function!r} is not an entry point of {SOURCE}")
    return found[0]


def kernel(c: FastConfig):
    """The launchable kernel of a compiled configuration."""
    from . import launch

    return launch.GemmKernel(c.function, 7, SOURCE, c.function, (c.THREADS, 1, 1), (c.BM, c.BN), c.label)


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
        r = bench.time_gemm(kernel(c), A, B, repeat, ref)
        trials.append(Trial(c, r.tflops, r.correct))
        log(f"{c.label:<48} {r.tflops:6.2f} TFLOP/s{'' if r.correct else '  WRONG'}")
    return sorted(trials, key=lambda t: (not t.correct, -t.tflops))
