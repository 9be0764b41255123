"""Models of what the kernels do: work, traffic, arithmetic intensity, the roofline, shared-memory
banks and occupancy.

Pure NumPy and arithmetic, no GPU. The chapters' tables, the figures and the tests all call
these same functions, so a number printed in one place is the number checked in another.
Counts are *load requests by threads* (one per float32 element a thread reads from global
memory), before the hardware merges or caches anything.
"""

from __future__ import annotations

from dataclasses import dataclass

FLOAT_BYTES = 4


def gemm_flops(M: int, N: int, K: int) -> int:
    """One multiply and one add per (i, j, k): 2·M·N·K floating-point operations."""
    return 2 * M * N * K


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Traffic:
    """Global-memory load requests of a GEMM kernel and what they imply."""

    kernel: str
    flops: int
    loads_A: int
    loads_B: int

    @property
    def loads(self) -> int:
        return self.loads_A + self.loads_B

    @property
    def bytes(self) -> int:
        return FLOAT_BYTES * self.loads

    @property
    def intensity(self) -> float:
        """FLOP per byte requested from global memory."""
        return self.flops / self.bytes


def naive_traffic(M: int, N: int, K: int) -> Traffic:
    """The naive kernel: each of the M·N threads reads K elements of A and K of B.

    Row i of A is read N times (once per thread of row i of C), column j of B M times.
    """
    return Traffic("naive", gemm_flops(M, N, K), M * N * K, M * N * K)


def tiled_traffic(M: int, N: int, K: int, T: int) -> Traffic:
    """The T×T shared-memory tiled kernel, counting only in-range loads (the padding is zeros).

    Each of the ceil(N/T) block columns reads all of A once; each of the ceil(M/T) block
    rows reads all of B once: A is read ceil(N/T) times instead of N.
    """
    return Traffic(f"tiled{T}", gemm_flops(M, N, K), M * K * ceil_div(N, T), K * N * ceil_div(M, T))


def thread_of(row: int, col: int, T: int = 32) -> tuple[tuple[int, int], tuple[int, int]]:
    """Which thread of a T×T-block grid computes C[row, col]: ((blockIdx.x, blockIdx.y), (threadIdx.x, threadIdx.y)).

    x runs along the columns of C and y along its rows, as in the naive and tiled kernels.
    """
    return (col // T, row // T), (col % T, row % T)


def grid_for(M: int, N: int, T: int = 32) -> tuple[int, int]:
    """(gridDim.x, gridDim.y) = (ceil(N/T), ceil(M/T)): enough T×T blocks to cover C."""
    return ceil_div(N, T), ceil_div(M, T)


def compulsory_bytes(M: int, N: int, K: int) -> int:
    """Read A and B once and write C once: the least traffic any GEMM kernel can have."""
    return FLOAT_BYTES * (M * K + K * N + M * N)


def naive_intensity() -> float:
    """2 FLOPs per 2 float32 loads: 2 / (2·4) = 0.25 FLOP/B, whatever the size."""
    return 2 / (2 * FLOAT_BYTES)


def tiled_intensity(T: int) -> float:
    """T times the naive intensity for large sizes: T/4 FLOP/B (8 at T = 32)."""
    return T * naive_intensity()


def tiled_shared_loads(M: int, N: int, K: int, T: int) -> int:
    """Shared-memory reads of the T×T tiled kernel: every thread of every block reads 2·T values
    (a row of ``As`` and a column of ``Bs``) in each of the ceil(K/T) phases, padding included."""
    return ceil_div(M, T) * ceil_div(N, T) * ceil_div(K, T) * T * T * 2 * T


def tiled_shared_bytes(T: int) -> int:
    """Shared memory per block of the T×T tiled kernel: one T×T tile of A and one of B, 2·T²·4 bytes."""
    return 2 * T * T * FLOAT_BYTES


def roofline(intensity, peak_flops: float, peak_bandwidth: float):
    """Attainable FLOP/s at an arithmetic intensity: min(peak compute, intensity × bandwidth)."""
    import numpy as np

    return np.minimum(peak_flops, np.asarray(intensity, dtype=float) * peak_bandwidth)


def ridge_point(peak_flops: float, peak_bandwidth: float) -> float:
    """The intensity (FLOP/B) where the bandwidth roof meets the compute roof."""
    return peak_flops / peak_bandwidth


# ---------------------------------------------------------------- what a warp asks of L1

WARP = 32
SECTOR_BYTES = 32


@dataclass(frozen=True)
class WarpTraffic:
    """Global loads as warps issue them: one *request* per warp-wide load instruction, split into
    32-byte *sectors* (the distinct 32-byte pieces of memory its active lanes touch)."""

    kernel: str
    requests_A: int
    requests_B: int
    sectors_A: int
    sectors_B: int

    @property
    def requests(self) -> int:
        return self.requests_A + self.requests_B

    @property
    def sectors(self) -> int:
        return self.sectors_A + self.sectors_B

    @property
    def bytes(self) -> int:
        return SECTOR_BYTES * self.sectors


def _require_multiples(M: int, N: int, K: int, of: int) -> None:
    bad = [f"{d}={v}" for d, v in (("M", M), ("N", N), ("K", K)) if v % of]
    if bad:
        raise ValueError(f"the warp model assumes M, N and K are multiples of {of}; got {', '.join(bad)}")


def naive_warp_traffic(M: int, N: int, K: int) -> WarpTraffic:
    """The naive kernel's requests and sectors (32x32 blocks; a warp is 32 neighbours in a row of C).

    Every lane of a warp reads the same A[row, k]: one sector, broadcast to all 32 lanes. The lanes
    read 32 neighbouring floats of row k of B: 128 bytes, four sectors (coalesced).
    """
    _require_multiples(M, N, K, WARP)
    requests = M * (N // WARP) * K
    return WarpTraffic("naive", requests, requests, requests * 1, requests * 4)


def tiled_warp_traffic(M: int, N: int, K: int, T: int) -> WarpTraffic:
    """The T×T tiled kernel: per phase, each warp loads its lanes' elements of one A and one B tile.

    A warp covers 32/T rows of T neighbouring floats in each tile: 32 floats, four sectors per
    request for T >= 8.
    """
    if T < 8 or T * T % WARP:
        raise ValueError(f"the warp model covers T = 8, 16 and 32, got T = {T}")
    _require_multiples(M, N, K, max(T, WARP))
    warps_per_block = T * T // WARP
    requests = (M // T) * (N // T) * (K // T) * warps_per_block
    return WarpTraffic(f"tiled{T}", requests, requests, requests * 4, requests * 4)


def warp_traffic(kernel: str, M: int, N: int, K: int) -> WarpTraffic:
    """The warp model of a course kernel by name (``naive``, ``tiled8``, ``tiled16``, ``tiled32``)."""
    if kernel == "naive":
        return naive_warp_traffic(M, N, K)
    if kernel.startswith("tiled"):
        return tiled_warp_traffic(M, N, K, int(kernel[5:]))
    raise ValueError(f"no warp model for kernel {kernel!r}")


def thread_traffic(kernel: str, M: int, N: int, K: int) -> Traffic:
    """The per-thread load model of a course kernel by name."""
    if kernel == "naive":
        return naive_traffic(M, N, K)
    if kernel.startswith("tiled"):
        return tiled_traffic(M, N, K, int(kernel[5:]))
    raise ValueError(f"no traffic model for kernel {kernel!r}")


def early_return_affected(M: int, N: int, T: int = 32):
    """Which elements of C the early-return tiled kernel (chapter 3) can get wrong: a boolean M×N mask.

    In a block on the right edge (when T does not divide N) the threads whose column lies outside C
    return before loading their element of the A tile, so ``As[ty][k]`` for those k is never written
    in that block; every surviving thread of the block reads it, and loses the true products
    A[row, k0 + k]·B[k0 + k, col]. On the bottom edge the same happens to ``Bs``. Every element of C
    in the last block column (if N % T) and the last block row (if M % T) is exposed; no other is.
    """
    import numpy as np

    mask = np.zeros((M, N), dtype=bool)
    if N % T:
        mask[:, (N // T) * T:] = True
    if M % T:
        mask[(M // T) * T:, :] = True
    return mask


# ---------------------------------------------------------------- shared-memory banks (chapter 4)

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
    words_per_bank: tuple           # distinct words requested from each of the 32 banks (whole warp)
    ideal: int = 1                  # passes it would need without any bank conflict (one per group)

    @property
    def extra_wavefronts(self) -> int:
        """The wavefronts beyond the ideal, which Nsight Compute reports as bank conflicts."""
        return max(0, self.wavefronts - self.ideal)


def _lanes_pair_up(addrs: list) -> bool:
    """Lanes n and n^1 (or n and n^2) read the same address, for every lane present in both."""
    def same(step):
        return all(addrs[n] == addrs[n ^ step] for n in range(len(addrs)) if (n ^ step) < len(addrs))
    return len(addrs) > 1 and (same(1) or same(2))


def _words_per_bank(addrs, per_lane: int) -> list[int]:
    words = {a // BANK_BYTES + i for a in addrs for i in range(per_lane)}
    per_bank = [0] * BANKS
    for w in words:
        per_bank[w % BANKS] += 1
    return per_bank


def bank_access(byte_addresses, access_bytes: int = 4) -> BankAccess:
    """The bank model for one warp's shared-memory instruction: ``byte_addresses`` holds each lane's
    address in lane order (at most 32), ``access_bytes`` what each lane reads (4 for a ``float``, 8 for a
    ``float2``, 16 for a ``float4``; addresses aligned to it). Word w = address // 4 lives in bank w % 32."""
    if access_bytes not in (4, 8, 16):
        raise ValueError(f"the bank model covers 4-, 8- and 16-byte accesses, got {access_bytes}-byte ones")
    addrs = list(byte_addresses)
    if len(addrs) > 32:
        raise ValueError(f"a warp has 32 lanes, got {len(addrs)} addresses")
    if any(a % access_bytes for a in addrs):
        raise ValueError(f"{access_bytes}-byte accesses must be {access_bytes}-byte aligned")
    per_lane = access_bytes // BANK_BYTES
    group = 32 // per_lane * (2 if per_lane > 1 and _lanes_pair_up(addrs) else 1)
    groups = [addrs[i:i + group] for i in range(0, len(addrs), group)]
    wavefronts = sum(max(_words_per_bank(g, per_lane)) for g in groups)
    return BankAccess(wavefronts, tuple(_words_per_bank(addrs, per_lane)), len(groups))


def array_addresses(rows, cols, row_stride: int, base: int = 0) -> list[int]:
    """Byte addresses of float elements [r][c] of a row-major array whose rows are ``row_stride``
    floats long (pass T + 1 for a padded T×T tile), for the pairs (rows[i], cols[i])."""
    return [base + 4 * (r * row_stride + c) for r, c in zip(rows, cols)]


TILE_LAYOUTS = ("plain", "transposed", "padded")   # 02_tiled.cu, and the two B-tile layouts of 04_banks.cu


@dataclass(frozen=True)
class SharedInstruction:
    """One shared-memory instruction of a tiled kernel's phase, as the compiler emits it."""

    what: str                       # the source expression it implements
    opcode: str                     # LDS (4 bytes per lane), LDS.128 (16 bytes), STS
    per_phase: int                  # how often each warp executes it per tile phase (one k0 step)
    access: BankAccess              # its cost for one warp

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
    a_read = SharedInstruction("As[ty][k..k+3]", "LDS.128", T // 4,
                               bank_access(array_addresses(ty, [k] * 32, T), 16))
    a_store = SharedInstruction("As[ty][tx] =", "STS", 1, bank_access(array_addresses(ty, tx, T)))
    if layout == "plain":
        b_read = SharedInstruction("Bs[k][tx]", "LDS", T, bank_access(array_addresses([k] * 32, tx, T, bs)))
        b_store = SharedInstruction("Bs[ty][tx] =", "STS", 1, bank_access(array_addresses(ty, tx, T, bs)))
    elif layout == "transposed":
        b_read = SharedInstruction("Bs[tx][k..k+3]", "LDS.128", T // 4,
                                   bank_access(array_addresses(tx, [k] * 32, row, bs), 16))
        b_store = SharedInstruction("Bs[tx][ty] =", "STS", 1, bank_access(array_addresses(tx, ty, row, bs)))
    else:
        b_read = SharedInstruction("Bs[tx][k]", "LDS", T, bank_access(array_addresses(tx, [k] * 32, row, bs)))
        b_store = SharedInstruction("Bs[tx][ty] =", "STS", 1, bank_access(array_addresses(tx, ty, row, bs)))
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

    def total(load: bool, f) -> int:
        return n * sum(i.per_phase * f(i) for i in ins if i.is_load == load)

    return SharedTraffic(total(True, lambda i: 1), total(True, lambda i: i.access.wavefronts), total(True, lambda i: i.access.ideal),
                         total(False, lambda i: 1), total(False, lambda i: i.access.wavefronts), total(False, lambda i: i.access.ideal))


@dataclass(frozen=True)
class TileIntensity:
    """FLOP per byte moved at the two levels of a tiled kernel (chapter 6)."""

    global_to_shared: float         # per byte loaded from global memory into the shared tiles
    shared_to_registers: float      # per byte read from shared memory into registers


def tile_intensity(BM: int, BN: int, TM: int = 1, TN: int = 1) -> TileIntensity:
    """A block that computes a BM×BN tile of C loads BM + BN floats per k for 2·BM·BN FLOP; a thread that
    computes TM×TN outputs reads TM + TN floats from shared memory per k for 2·TM·TN FLOP (large sizes,
    no padding). The tiled kernel of chapter 2 is BM = BN = T, TM = TN = 1."""
    if min(BM, BN, TM, TN) < 1:
        raise ValueError(f"tile sizes must be positive, got BM={BM}, BN={BN}, TM={TM}, TN={TN}")
    return TileIntensity(2 * BM * BN / (FLOAT_BYTES * (BM + BN)), 2 * TM * TN / (FLOAT_BYTES * (TM + TN)))


def shared_bandwidth_ceiling(sms: int, clock_hz: float, wavefronts_per_warp_fma: float) -> float:
    """FLOP/s that shared memory alone allows: each SM's banks deliver one wavefront per clock (32 banks
    of 4 bytes), and a warp-wide FMA is 64 floating-point operations (32 lanes, multiply and add)."""
    return sms * clock_hz / wavefronts_per_warp_fma * 64


# ---------------------------------------------------------------- occupancy (chapter 5)

REGISTER_ALLOCATION_UNIT = 256      # registers are given to a warp in chunks of 256 (8 per thread)
SHARED_ALLOCATION_UNIT = 128        # bytes; a block's shared memory is rounded up to this (sm_80 and later)
SUB_PARTITIONS = 4                  # an SM's register file is split among 4 schedulers (sm_70 and later)


@dataclass(frozen=True)
class Occupancy:
    """How many blocks of a kernel fit on one SM, and which limit decides it."""

    blocks_per_sm: int
    warps_per_sm: int
    max_warps_per_sm: int
    limits: dict                    # blocks allowed by each resource

    @property
    def occupancy(self) -> float:
        return self.warps_per_sm / self.max_warps_per_sm

    @property
    def binding(self) -> list[str]:
        """The limits that allow no more blocks than the answer (several can tie)."""
        return [name for name, n in self.limits.items() if n == self.blocks_per_sm]


def occupancy(spec, threads_per_block: int, registers_per_thread: int, shared_bytes_per_block: int = 0) -> Occupancy:
    """Active blocks and warps per SM for a kernel on a device (``spec``: a :class:`gemmlab.device.DeviceSpec`).

    Each resource allows some number of blocks: threads (max threads per SM), the hardware's block
    slots, registers and shared memory; the smallest number wins. Registers are allocated per warp
    in units of 256 and live in one of the SM's four sub-partitions, so a sub-partition holds
    ``(registers per SM / 4) // registers per warp`` warps. Shared memory is the block's bytes plus
    the per-block reservation of sm_80 and later, rounded up to 128 bytes, against the SM's capacity
    (the driver's default carveout gives a kernel all of it). These are the rules of the
    ``include/cuda_occupancy.h`` header that ships with the CUDA toolkit; chapter 5 compares
    the result with the driver's ``cuOccupancyMaxActiveBlocksPerMultiprocessor``.
    """
    if not 1 <= threads_per_block <= spec.max_threads_per_block:
        raise ValueError(f"threads_per_block = {threads_per_block} must be between 1 and {spec.max_threads_per_block}")
    if not 0 <= registers_per_thread <= 255:
        raise ValueError(f"registers_per_thread = {registers_per_thread} must be between 0 and 255")
    if shared_bytes_per_block > spec.shared_per_block_optin:
        raise ValueError(f"{shared_bytes_per_block:,} bytes of shared memory per block exceed this device's "
                         f"maximum of {spec.shared_per_block_optin:,}")
    warps_per_block = ceil_div(threads_per_block, spec.warp_size)
    max_warps = spec.max_threads_per_sm // spec.warp_size
    regs_per_warp = ceil_div(max(registers_per_thread, 1) * spec.warp_size, REGISTER_ALLOCATION_UNIT) * REGISTER_ALLOCATION_UNIT
    # The hardware checks a block's registers as if its warps were spread over all four sub-partitions.
    if regs_per_warp * ceil_div(warps_per_block, SUB_PARTITIONS) * SUB_PARTITIONS > spec.registers_per_block:
        raise ValueError(f"{threads_per_block} threads x {registers_per_thread} registers exceed the "
                         f"{spec.registers_per_block:,} registers a block may use")
    warps_by_registers = (spec.registers_per_sm // SUB_PARTITIONS // regs_per_warp) * SUB_PARTITIONS
    smem = ceil_div(shared_bytes_per_block + spec.reserved_shared_per_block, SHARED_ALLOCATION_UNIT) * SHARED_ALLOCATION_UNIT
    limits = {
        "threads": max_warps // warps_per_block,
        "blocks": spec.max_blocks_per_sm,
        "registers": warps_by_registers // warps_per_block,
    }
    if smem:                        # a block that needs no shared memory is not limited by it
        limits["shared memory"] = spec.shared_per_sm // smem
    blocks = min(limits.values())
    return Occupancy(blocks, blocks * warps_per_block, max_warps, limits)
