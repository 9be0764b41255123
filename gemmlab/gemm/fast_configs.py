"""The fast kernel's configurations (chapter 7): named in Python, compiled from ``kernels/07_fast.cu``.

``07_fast.cu`` holds one template, ``fast::gemm<Config>``, and no entry points. Each
:class:`FastConfig` in :data:`CONFIGS` becomes one ``extern "C"`` kernel: :meth:`FastConfig.entry_point`
writes a ``struct`` with the configuration's named constants and a kernel that instantiates the
template with it, and :mod:`gemmlab.gemm.units` appends those to the file's text before nvcc
sees it. Adding a configuration is one line in :data:`CONFIGS`; the compile tests, the registry
and the GPU tests pick it up from there.

:meth:`FastConfig.problems` says why a configuration cannot compile, rule for rule what the
template's ``static_assert``\\ s and the compiler reject (a CPU test compiles invalid ones and checks
that nvcc agrees). Pure Python: no GPU, no compiler.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ..models import limits

SOURCE = "07_fast.cu"
_INT_CONSTANTS = ("BM", "BN", "BK", "WM", "WN", "TM", "TN", "THREADS", "STORE", "GROUP", "STAGES", "SPLITK")
_BOOL_CONSTANTS = ("VEC", "SKEW", "ASYNC", "EDGES_FIRST")


@dataclass(frozen=True)
class FastConfig:
    """One parameter set of the fast kernel (names as in the template's ``Config``)."""

    BM: int                         # block tile: rows of C
    BN: int                         # block tile: columns of C
    BK: int                         # K-step: depth of the shared tiles
    WM: int                         # warp tile rows
    WN: int                         # warp tile columns
    TM: int                         # thread tile rows
    TN: int                         # thread tile columns
    STORE: int | None = None        # k-step at which the next tile's loads are stored (default BK - 1)
    MIN_BLOCKS: int = 1             # __launch_bounds__: blocks per SM ptxas must leave registers for
    GROUP: int = 8                  # block rows per swizzle group (L2 locality); 1: row-major order
    STAGES: int = 2                 # shared-memory stages: 2 double buffers, 1 loads between two barriers
    VEC: bool = True                # float4 global loads where legal (False: scalar only)
    SKEW: bool = True               # A tile padded every four rows (False: every row, by 4 floats)
    ASYNC: bool = False             # cp.async copies instead of loads and stores through registers
    SPLITK: int = 1                 # blocks along K (grid z), each summing whole K-tiles into a zeroed C
    EDGES_FIRST: bool = True        # blocks numbered from the end: the checked edge tiles run in the first wave

    # ------------------------------------------------------------ derived once, here

    @property
    def warps(self) -> int:
        return (self.BM // self.WM) * (self.BN // self.WN) if self.WM > 0 and self.WN > 0 else 0

    @property
    def THREADS(self) -> int:  # noqa: N802 - the template's name for it
        """Threads per block, one warp per warp tile."""
        return 32 * self.warps

    @property
    def store_step(self) -> int:
        return self.BK - 1 if self.STORE is None else self.STORE

    @property
    def is_ablation(self) -> bool:
        """One of chapter 7's entries with a technique switched off (not a candidate for tuning)."""
        return not (self.VEC and self.SKEW and self.STAGES == 2 and self.GROUP > 1 and self.EDGES_FIRST)

    @property
    def is_split(self) -> bool:
        """Whether K is split, for shapes whose grid of tiles is too small for the GPU (see :mod:`gemmlab.models.shapes`)."""
        return self.SPLITK > 1

    @property
    def function(self) -> str:
        """The entry point's name, made of the tile shapes and then of what differs from the tuned kernel."""
        switches = [("async", self.ASYNC), ("scalar", not self.VEC), ("onestage", self.STAGES == 1),
                    ("padded", not self.SKEW), ("rowmajor", self.GROUP == 1), ("edgeslast", not self.EDGES_FIRST)]
        return (f"gemm_fast_{self.BM}x{self.BN}x{self.BK}_{self.WM}x{self.WN}_{self.TM}x{self.TN}"
                + "".join(f"_{name}" for name, on in switches if on) + (f"_splitk{self.SPLITK}" if self.is_split else ""))

    @property
    def label(self) -> str:
        off = [name for name, on in (("scalar loads", self.VEC), ("one stage", self.STAGES == 2),
                                     ("padded A", self.SKEW), ("row-major blocks", self.GROUP > 1),
                                     ("edge blocks last", self.EDGES_FIRST)) if not on]
        extras = (["cp.async"] if self.ASYNC else []) + off + ([f"split-K {self.SPLITK}"] if self.is_split else [])
        return (f"{self.BM}x{self.BN}x{self.BK} warp {self.WM}x{self.WN} thread {self.TM}x{self.TN} "
                f"({self.THREADS} threads)" + (f" [{', '.join(extras)}]" if extras else ""))

    # ------------------------------------------------------------ the shared-memory layout (bank model)

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
    def shared_bytes(self) -> int:
        """STAGES stages of the transposed A tile and of the B tile."""
        return self.STAGES * (self.a_tile_floats + self.BK * self.BN) * 4

    def a_offset(self, k: int, m: int) -> int:
        """Where element (k, m) of the transposed A tile lies in a stage, in floats (``ATile::at``)."""
        row, group = self._a_layout
        return (k // 4) * group + (k % 4) * row + m

    def a_store_addresses(self, warp: int, j: int, i: int = 0) -> list[int]:
        """Byte addresses of one warp's transposing store number ``j`` (0-3) of its ``i``-th float4 of A:
        thread t holds row t // (BK/4) + i * THREADS // (BK/4), k-quad (t % (BK/4)) * 4."""
        kq = self.BK // 4
        return [4 * self.a_offset(((32 * warp + lane) % kq) * 4 + j, (32 * warp + lane) // kq + i * (self.THREADS // kq))
                for lane in range(32)]

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

    # ------------------------------------------------------------ what compiles

    def problems(self) -> list[str]:
        """Why this configuration cannot be compiled, one sentence each (empty: it compiles). Each rule
        is one of the template's ``static_assert``\\ s or a limit the compiler enforces."""
        if min(self.BM, self.BN, self.BK, self.WM, self.WN, self.TM, self.TN, self.GROUP, self.MIN_BLOCKS, self.SPLITK) < 1:
            return ["every tile size, GROUP, MIN_BLOCKS and SPLITK must be positive"]
        p = []
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
        if self.THREADS > limits.MAX_THREADS_PER_BLOCK:
            p.append(f"{self.warps} warp tiles need {self.THREADS} threads, above {limits.MAX_THREADS_PER_BLOCK} per block")
        if self.BK % 4:
            p.append(f"BK = {self.BK} must be a multiple of 4 (float4 loads of A along k)")
        threads = max(self.THREADS, 1)
        for name, total, per_row in (("A", self.BM * self.BK // 4, self.BK // 4), ("B", self.BK * self.BN // 4, self.BN // 4)):
            if not (total % threads == 0 or threads % max(total, 1) == 0) or threads % max(per_row, 1):
                p.append(f"the tile of {name} ({total} float4) does not split into whole float4 loads over {threads} threads")
        if not 0 <= self.store_step < self.BK:
            p.append(f"STORE = {self.store_step} must be a k-step of the tile (0 to {self.BK - 1})")
        if self.STAGES not in (1, 2):
            p.append(f"STAGES = {self.STAGES} must be 1 or 2")
        if self.ASYNC and self.STAGES != 2:
            p.append("cp.async copies into the second stage: ASYNC needs STAGES = 2")
        if self.SKEW and (self.BK > 32 or self.BM % 32):
            p.append(f"the skewed A tile needs BK <= 32 and BM a multiple of 32 (BK = {self.BK}, BM = {self.BM})")
        if self.STAGES in (1, 2) and self.shared_bytes > limits.STATIC_SHARED_BYTES:
            p.append(f"{self.STAGES} stage(s) of the tiles need {self.shared_bytes:,} bytes of shared memory, above the "
                     f"{limits.STATIC_SHARED_BYTES:,} a kernel may declare statically")
        return p

    @property
    def register_floor(self) -> int:
        """The fewest registers a thread can have, for its accumulators, two sets of fragments and the next
        tile in flight. Above :data:`gemmlab.models.limits.MAX_REGISTERS_PER_THREAD` the kernel compiles but spills."""
        in_flight = 0 if self.ASYNC else (self.BM * self.BK + self.BK * self.BN) // max(self.THREADS, 1)
        return self.TM * self.TN + 2 * (self.TM + self.TN) + in_flight

    def validate(self) -> FastConfig:
        """This configuration, or a ValueError listing every reason it cannot compile."""
        p = self.problems()
        if p:
            raise ValueError(f"invalid fast-kernel configuration {self.label}: " + "; ".join(p))
        return self

    def entry_point(self) -> str:
        """The C++ that gemmlab appends to ``07_fast.cu`` for this configuration: its constants, named,
        and an ``extern "C"`` kernel that instantiates the template with them."""
        ints = ", ".join(f"{n} = {self.store_step if n == 'STORE' else getattr(self, n)}" for n in _INT_CONSTANTS)
        bools = ", ".join(f"{n} = {'true' if getattr(self, n) else 'false'}" for n in _BOOL_CONSTANTS)
        return (f"// {self.label}\n"
                f"struct {self.function}_config {{\n"
                f"    static constexpr int {ints};\n"
                f"    static constexpr bool {bools};\n"
                f"}};\n"
                f'extern "C" __global__ void __launch_bounds__({self.THREADS}, {self.MIN_BLOCKS})\n'
                f"{self.function}(const float* A, const float* B, float* C, int M, int N, int K)\n"
                f"{{\n    fast::gemm<{self.function}_config>(A, B, C, M, N, K);\n}}\n")


FAST = FastConfig(128, 128, 16, 32, 64, 8, 8, MIN_BLOCKS=2)
"""The course's chapter-7 kernel, ``fast`` in :mod:`gemmlab.gemm.registry`, one member of the tuned plateau."""

CONFIGS: tuple[FastConfig, ...] = (
    # 128x128 block, K-step 8, 8 warps of 32x64 or 64x32, 8x8 per thread: 256 threads, 2 blocks per SM
    # (at most 128 registers). The classic configuration.
    FastConfig(128, 128, 8, 32, 64, 8, 8, STORE=6, MIN_BLOCKS=2),
    FastConfig(128, 128, 8, 64, 32, 8, 8, STORE=6, MIN_BLOCKS=2),
    # K-step 16: half the barriers and loop overhead per FMA.
    FAST,
    FastConfig(128, 128, 16, 64, 32, 8, 8, MIN_BLOCKS=2),
    # cp.async copies instead of loads and stores through registers (sm_80 and later).
    FastConfig(128, 128, 16, 32, 64, 8, 8, MIN_BLOCKS=2, ASYNC=True),
    FastConfig(128, 128, 16, 64, 32, 8, 8, MIN_BLOCKS=2, ASYNC=True),
    # Warps of 16x128: each warp spans the block's width, as the rows of threads of chapter 6 do.
    FastConfig(128, 128, 16, 16, 128, 8, 8, MIN_BLOCKS=2),
    # 4 warps of 64x64, 8x16 or 16x8 per thread: 128 threads, 2 blocks per SM (up to 255 registers);
    # 6 float4 shared loads feed 128 FMAs.
    FastConfig(128, 128, 16, 64, 64, 8, 16, MIN_BLOCKS=2),
    FastConfig(128, 128, 16, 64, 64, 16, 8, MIN_BLOCKS=2),
    FastConfig(128, 128, 8, 64, 64, 8, 16, MIN_BLOCKS=2),
    FastConfig(128, 128, 8, 64, 64, 16, 8, MIN_BLOCKS=2),
    # Larger blocks, 1 per SM: 128x256 (8 warps of 64x64, or 16 warps of 32x64), 256x128 (cuBLAS's own SIMT tile).
    FastConfig(128, 256, 8, 64, 64, 8, 16, MIN_BLOCKS=1),
    FastConfig(128, 256, 8, 32, 64, 8, 8, MIN_BLOCKS=1),
    FastConfig(256, 128, 8, 64, 64, 16, 8, MIN_BLOCKS=1),
    # Smaller blocks, 4 per SM: more blocks for small sizes.
    FastConfig(64, 128, 8, 32, 64, 8, 8, MIN_BLOCKS=4),
    FastConfig(128, 64, 8, 64, 32, 8, 8, MIN_BLOCKS=4),
    # One technique off at a time, from FAST (chapter 7 measures each): scalar global loads only; one
    # stage of shared memory (the next tile loaded between two barriers); every row of As padded by 4
    # floats (2-way conflicts in the A stores); blocks in row-major order (no swizzle for L2); the edge
    # tiles in the last wave.
    FastConfig(128, 128, 16, 32, 64, 8, 8, MIN_BLOCKS=2, VEC=False),
    FastConfig(128, 128, 16, 32, 64, 8, 8, MIN_BLOCKS=2, STAGES=1),
    FastConfig(128, 128, 16, 32, 64, 8, 8, MIN_BLOCKS=2, SKEW=False),
    FastConfig(128, 128, 16, 32, 64, 8, 8, MIN_BLOCKS=2, GROUP=1),
    FastConfig(128, 128, 16, 32, 64, 8, 8, MIN_BLOCKS=2, EDGES_FIRST=False),
    # FAST split along K into 2, 4 or 8 parts: more blocks where the grid of tiles is smaller than the
    # GPU (chapter 7's size-aware choice, gemmlab.models.shapes).
    FastConfig(128, 128, 16, 32, 64, 8, 8, MIN_BLOCKS=2, SPLITK=2),
    FastConfig(128, 128, 16, 32, 64, 8, 8, MIN_BLOCKS=2, SPLITK=4),
    FastConfig(128, 128, 16, 32, 64, 8, 8, MIN_BLOCKS=2, SPLITK=8),
)
"""Every configuration compiled into ``07_fast.cu``: the tuned ones, chapter 7's ablations, FAST split along K."""


def search_space(ablations: bool = False) -> list[FastConfig]:
    """The configurations with every technique on, not split along K (split-K is chosen per shape, not
    tuned); with ``ablations=True`` also those with one technique switched off."""
    return [c for c in CONFIGS if not c.is_split and (ablations or not c.is_ablation)]


def config(function: str) -> FastConfig:
    """The configuration whose entry point is called ``function`` (ablations included)."""
    for c in CONFIGS:
        if c.function == function:
            return c
    raise KeyError(f"{function!r} is not an entry point of {SOURCE}; the configurations are in gemmlab.gemm.fast_configs.CONFIGS")


def check_unique(names: Iterable[str]) -> None:
    """Refuse configurations whose entry points would share a name (here and in chapter 8's)."""
    listed = list(names)
    duplicated = sorted({n for n in listed if listed.count(n) > 1})
    if duplicated:
        raise ValueError(f"two configurations compile to the same entry point: {', '.join(duplicated)}")


def entry_points(configs: Iterable[FastConfig] = CONFIGS) -> str:
    """The C++ appended to ``07_fast.cu``: one entry point per configuration."""
    check_unique(c.function for c in configs)
    return "\n".join(c.entry_point() for c in configs)
