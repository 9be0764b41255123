"""The shared-memory bank model (chapter 4): what a warp's shared-memory instruction costs, in wavefronts.

:func:`bank_access` takes one warp's addresses and access width; :func:`tiled_shared_instructions`
and :func:`tiled_shared_traffic` apply it to the tiled kernels of chapters 2 and 4, instruction by
instruction and summed over a launch, which is what Nsight Compute counts. Pure Python, no GPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from .traffic import ceil_div

BANKS = 32
BANK_BYTES = 4


@dataclass(frozen=True)
class BankAccess:
    """What one warp-wide shared-memory instruction costs, in wavefronts (passes through the banks).

    The 32 banks serve one 4-byte word each per pass; lanes that read the *same* word share it
    (broadcast, or multicast to several lanes). The path back to the registers carries 128 bytes per
    pass, so a wide access is served in groups of lanes that ask for 128 bytes: 16 lanes for 8-byte
    and 8 lanes for 16-byte accesses, twice as many when neighbouring lanes read the same address
    (lanes n and n^1, or n and n^2, equal for every lane). Each group needs as many passes as its
    busiest bank has distinct words. The grouping rule is an NVIDIA engineer's answer on NVIDIA's
    developer forum (chapter 4 cites it and checks the whole model against Nsight Compute).
    """

    wavefronts: int                 # passes the instruction needs
    words_per_bank: tuple[int, ...] # distinct words requested from each of the 32 banks (whole warp)
    ideal: int = 1                  # passes it would need without any bank conflict (one per group)

    @property
    def extra_wavefronts(self) -> int:
        """The wavefronts beyond the ideal, which Nsight Compute reports as bank conflicts."""
        return max(0, self.wavefronts - self.ideal)


def _lanes_pair_up(addrs: Sequence[int]) -> bool:
    """Lanes n and n^1 (or n and n^2) read the same address, for every lane present in both."""
    def same(step: int) -> bool:
        return all(addrs[n] == addrs[n ^ step] for n in range(len(addrs)) if (n ^ step) < len(addrs))
    return len(addrs) > 1 and (same(1) or same(2))


def _words_per_bank(addrs: Iterable[int], per_lane: int) -> list[int]:
    words = {a // BANK_BYTES + i for a in addrs for i in range(per_lane)}
    per_bank = [0] * BANKS
    for w in words:
        per_bank[w % BANKS] += 1
    return per_bank


def _check(addrs: Sequence[int], access_bytes: int) -> None:
    if access_bytes not in (4, 8, 16):
        raise ValueError(f"the bank model covers 4-, 8- and 16-byte accesses, got {access_bytes}-byte ones")
    if len(addrs) > 32:
        raise ValueError(f"a warp has 32 lanes, got {len(addrs)} addresses")
    if any(a % access_bytes for a in addrs):
        raise ValueError(f"{access_bytes}-byte accesses must be {access_bytes}-byte aligned")


def lane_groups(byte_addresses: Iterable[int], access_bytes: int = 4) -> list[range]:
    """The groups of lanes that the banks serve together (see :class:`BankAccess`), in lane order: the
    whole warp for 4-byte accesses; 16 lanes for 8-byte and 8 lanes for 16-byte ones, twice as many when
    neighbouring lanes read the same address. Each group needs as many wavefronts as its busiest bank
    has distinct words."""
    addrs = list(byte_addresses)
    _check(addrs, access_bytes)
    per_lane = access_bytes // BANK_BYTES
    size = 32 // per_lane * (2 if per_lane > 1 and _lanes_pair_up(addrs) else 1)
    return [range(i, min(i + size, len(addrs))) for i in range(0, len(addrs), size)]


def bank_access(byte_addresses: Iterable[int], access_bytes: int = 4) -> BankAccess:
    """The bank model for one warp's shared-memory instruction: ``byte_addresses`` holds each lane's
    address in lane order (at most 32), ``access_bytes`` what each lane reads (4 for a ``float``, 8 for a
    ``float2``, 16 for a ``float4``; addresses aligned to it). Word w = address // 4 lives in bank w % 32."""
    addrs = list(byte_addresses)
    per_lane = access_bytes // BANK_BYTES
    groups = [[addrs[i] for i in g] for g in lane_groups(addrs, access_bytes)]
    wavefronts = sum(max(_words_per_bank(g, per_lane)) for g in groups)
    return BankAccess(wavefronts, tuple(_words_per_bank(addrs, per_lane)), len(groups))


def array_addresses(rows: Iterable[int], cols: Iterable[int], row_stride: int, base: int = 0) -> list[int]:
    """Byte addresses of float elements [r][c] of a row-major array whose rows are ``row_stride``
    floats long (pass T + 1 for a padded T×T tile), for the pairs (rows[i], cols[i])."""
    return [base + 4 * (r * row_stride + c) for r, c in zip(rows, cols)]


def strided_addresses(stride: int, lanes: int = 32, base: int = 0) -> list[int]:
    """Byte addresses of a warp whose lane l starts its access at word ``stride * l`` (a stride in
    4-byte words, whatever the access width) of an array at byte ``base``."""
    return [base + BANK_BYTES * stride * lane for lane in range(lanes)]


SWIZZLES = ("none", "chunks", "words")
"""How :func:`swizzled_word` stores a tile row: as it is, its 16-byte chunks XORed with the row, or its
words XORed with the row."""


def swizzled_word(row: int, word: int, swizzle: str = "chunks") -> int:
    """Where word ``word`` of row ``row`` of a float tile is stored within its row. ``none``: where it is;
    ``chunks``: its 16-byte chunk ``word // 4`` XORed with ``row % 8``, the four words of a chunk staying
    together and in order (what tensor-core kernels do; CUTLASS's ``Swizzle<3,4,3>`` on 128-byte rows);
    ``words``: the word XORed with ``row % 32`` (chapter 4's exercise 3, for 4-byte accesses only). Rows
    hold a multiple of 32 words, so the XOR stays within the row."""
    if swizzle not in SWIZZLES:
        raise ValueError(f"swizzle must be one of {', '.join(SWIZZLES)}, got {swizzle!r}")
    if swizzle == "chunks":
        return (word // 4 ^ row % 8) * 4 + word % 4
    return word ^ row % BANKS if swizzle == "words" else word


def tile_addresses(rows: Iterable[int], words: Iterable[int], row_words: int, swizzle: str = "none",
                   base: int = 0) -> list[int]:
    """Byte addresses of words (rows[i], words[i]) of a row-major float tile whose rows are ``row_words``
    words long, stored under ``swizzle`` (:func:`swizzled_word`); with ``none`` this is
    :func:`array_addresses`."""
    if swizzle != "none" and row_words % BANKS:
        raise ValueError(f"a swizzled row holds a multiple of {BANKS} words, got {row_words}")
    return [base + BANK_BYTES * (r * row_words + swizzled_word(r, w, swizzle)) for r, w in zip(rows, words)]


TILE_LAYOUTS = ("plain", "transposed", "padded")   # 02_tiled.cu, and the two B-tile layouts of 04_banks.cu


@dataclass(frozen=True)
class SharedInstruction:
    """One shared-memory instruction of a tiled kernel's phase, as the compiler emits it."""

    what: str                       # the source expression it implements
    opcode: str                     # LDS (4 bytes per lane), LDS.128 (16 bytes), STS
    per_phase: int                  # how often each warp executes it per tile phase (one k0 step)
    access: BankAccess              # its cost for one warp
    addresses: tuple[int, ...] = () # the byte address of each lane of warp 0, in lane order
    access_bytes: int = 4           # what each lane reads: 4, or 16 for LDS.128

    @property
    def is_load(self) -> bool:
        return self.opcode.startswith("LDS")


def tiled_shared_instructions(T: int, layout: str = "plain") -> list[SharedInstruction]:
    """The shared-memory instructions one warp executes per phase of the T×T tiled kernel, for the
    B-tile ``layout`` (``plain``: ``Bs[k][tx]``; ``transposed``: stored ``Bs[tx][ty]``, read ``Bs[tx][k]``;
    ``padded``: the same with rows of T + 1 floats).

    The compiler unrolls the k loop and merges four consecutive ``As[ty][k]`` (and, in the
    transposed layout, ``Bs[tx][k]``) into one 16-byte ``LDS.128``; with padding the rows are no longer
    16-byte aligned, so ``Bs[tx][k]`` stays a 4-byte ``LDS``. Chapter 4 checks this against the SASS.
    Lane l of warp 0 has tx = l % T, ty = l // T.
    """
    if layout not in TILE_LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(TILE_LAYOUTS)}, got {layout!r}")
    if T not in (8, 16, 32):
        raise ValueError(f"the tiled kernels use T = 8, 16 or 32, got {T}")
    lanes = range(32)
    tx = [l % T for l in lanes]
    ty = [l // T for l in lanes]
    k = 0                                                   # every k gives the same banks, shifted
    row = T + (layout == "padded")                          # floats per row of Bs
    bs = 4 * T * T                                          # Bs follows As in shared memory

    def instruction(what: str, opcode: str, per_phase: int, addrs: list[int]) -> SharedInstruction:
        width = 16 if opcode == "LDS.128" else 4
        return SharedInstruction(what, opcode, per_phase, bank_access(addrs, width), tuple(addrs), width)

    a_read = instruction("As[ty][k..k+3]", "LDS.128", T // 4, array_addresses(ty, [k] * 32, T))
    a_store = instruction("As[ty][tx] =", "STS", 1, array_addresses(ty, tx, T))
    if layout == "plain":
        b_read = instruction("Bs[k][tx]", "LDS", T, array_addresses([k] * 32, tx, T, bs))
        b_store = instruction("Bs[ty][tx] =", "STS", 1, array_addresses(ty, tx, T, bs))
    elif layout == "transposed":
        b_read = instruction("Bs[tx][k..k+3]", "LDS.128", T // 4, array_addresses(tx, [k] * 32, row, bs))
        b_store = instruction("Bs[tx][ty] =", "STS", 1, array_addresses(tx, ty, row, bs))
    else:
        b_read = instruction("Bs[tx][k]", "LDS", T, array_addresses(tx, [k] * 32, row, bs))
        b_store = instruction("Bs[tx][ty] =", "STS", 1, array_addresses(tx, ty, row, bs))
    return [a_read, b_read, a_store, b_store]


def tiled_warp_phases(M: int, N: int, K: int, T: int) -> int:
    """Warp-phases of the T×T tiled kernel: blocks × phases (k0 steps) × warps per block."""
    return ceil_div(M, T) * ceil_div(N, T) * ceil_div(K, T) * ceil_div(T * T, 32)


@dataclass(frozen=True)
class SharedTraffic:
    """Shared-memory instructions and wavefronts of a whole launch, loads and stores apart."""

    load_instructions: int
    load_wavefronts: int
    load_ideal: int
    store_instructions: int
    store_wavefronts: int
    store_ideal: int

    @property
    def load_conflicts(self) -> int:
        return self.load_wavefronts - self.load_ideal

    @property
    def store_conflicts(self) -> int:
        return self.store_wavefronts - self.store_ideal


def tiled_shared_traffic(M: int, N: int, K: int, T: int, layout: str = "plain") -> SharedTraffic:
    """:func:`tiled_shared_instructions` summed over a launch at M×N×K (what Nsight Compute counts)."""
    n = tiled_warp_phases(M, N, K, T)
    ins = tiled_shared_instructions(T, layout)

    def total(load: bool, f: Callable[[SharedInstruction], int]) -> int:
        return n * sum(i.per_phase * f(i) for i in ins if i.is_load == load)

    return SharedTraffic(total(True, lambda i: 1), total(True, lambda i: i.access.wavefronts), total(True, lambda i: i.access.ideal),
                         total(False, lambda i: 1), total(False, lambda i: i.access.wavefronts), total(False, lambda i: i.access.ideal))


def shared_bandwidth_ceiling(sms: int, clock_hz: float, wavefronts_per_warp_fma: float) -> float:
    """FLOP/s that shared memory alone allows: each SM's banks deliver one wavefront per clock (32 banks
    of 4 bytes), and a warp-wide FMA is 64 floating-point operations (32 lanes, multiply and add)."""
    return sms * clock_hz / wavefronts_per_warp_fma * 64
