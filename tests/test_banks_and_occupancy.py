"""The shared-memory bank model on known patterns, and the occupancy calculator on published limits."""

import pytest

from gemmlab.gemm import fast_configs
from gemmlab.models import banks, occupancy
from gemmlab.runtime import device

LANES = range(32)


@pytest.mark.parametrize("stride,wavefronts", [(1, 1), (2, 2), (4, 4), (3, 1), (32, 32), (33, 1), (16, 16), (0, 1)])
def test_strided_float_accesses(stride, wavefronts):
    assert banks.bank_access([4 * stride * lane for lane in LANES]).wavefronts == wavefronts


def test_broadcast_and_multicast():
    assert banks.bank_access([128] * 32).wavefronts == 1                               # one word, every lane
    assert banks.bank_access([4 * (lane % 4) for lane in LANES]).wavefronts == 1      # four words, 8 lanes each
    assert banks.bank_access([0, 128, 0, 128]).wavefronts == 2                         # two words of bank 0


def test_tiled_kernel_reads_are_conflict_free():
    """As[ty][k] (same row and k for a warp of 32 x-neighbours: broadcast) and Bs[k][tx] (one row)."""
    T, ty, k = 32, 5, 7
    As = banks.array_addresses([ty] * 32, [k] * 32, T)
    Bs = banks.array_addresses([k] * 32, list(LANES), T, base=4 * T * T)
    assert banks.bank_access(As).wavefronts == 1 and banks.bank_access(Bs).wavefronts == 1


def test_column_reads_conflict_and_padding_fixes_them():
    column = banks.array_addresses(list(LANES), [3] * 32, 32)          # Bs[tx][k]: a column of a 32x32 tile
    padded = banks.array_addresses(list(LANES), [3] * 32, 33)          # the same with [32][33]
    assert banks.bank_access(column).wavefronts == 32
    assert banks.bank_access(padded).wavefronts == 1
    assert banks.bank_access(column).extra_wavefronts == 31


def test_wide_accesses_are_served_in_groups_of_128_bytes():
    """A float4 per lane: groups of 8 lanes (16 when lanes pair up), each as many passes as its busiest bank."""
    consecutive = banks.bank_access([16 * lane for lane in LANES], access_bytes=16)
    assert (consecutive.wavefronts, consecutive.ideal, consecutive.extra_wavefronts) == (4, 4, 0)
    broadcast = banks.bank_access([256] * 32, access_bytes=16)       # As[ty][k..k+3] in the tiled kernel
    assert (broadcast.wavefronts, broadcast.extra_wavefronts) == (2, 0)
    quads = banks.bank_access([16 * (lane % 4) for lane in LANES], access_bytes=16)   # lanes n, n^1 differ
    assert (quads.wavefronts, quads.extra_wavefronts) == (4, 0)
    column = banks.bank_access([128 * lane for lane in LANES], access_bytes=16)       # Bs[tx][k..k+3], 32x32
    assert (column.wavefronts, column.extra_wavefronts) == (32, 28)
    strided = banks.bank_access([32 * (lane % 16) for lane in LANES], access_bytes=16)  # 8 lanes 32 bytes apart
    assert (strided.wavefronts, strided.extra_wavefronts) == (8, 4)
    two_rows = banks.bank_access([0] * 16 + [256] * 16, access_bytes=16)           # two rows 64 words apart
    assert (two_rows.wavefronts, two_rows.extra_wavefronts) == (2, 0)
    assert banks.bank_access([8 * lane for lane in LANES], access_bytes=8).wavefronts == 2


def test_bank_model_limits():
    with pytest.raises(ValueError, match="4-, 8- and 16-byte"):
        banks.bank_access([0], access_bytes=12)
    with pytest.raises(ValueError, match="aligned"):
        banks.bank_access([4], access_bytes=16)
    with pytest.raises(ValueError, match="32 lanes"):
        banks.bank_access(range(0, 4 * 33, 4))


# Published limits: CUDA C++ Programming Guide, technical specifications per compute capability.
@pytest.mark.parametrize("spec,threads,regs,smem,blocks,binding", [
    (device.H200, 1024, 31, 8192, 2, {"threads", "registers"}),     # the 32x32 tiled kernel: 2 blocks per SM
    (device.T4, 1024, 31, 8192, 1, {"threads"}),                    # ... and 1 on a T4
    (device.H200, 256, 128, 0, 2, {"registers"}),
    (device.T4, 256, 128, 0, 2, {"registers"}),
    (device.H200, 256, 32, 48 * 1024, 4, {"shared memory"}),
    (device.T4, 256, 32, 32 * 1024, 2, {"shared memory"}),
    (device.H200, 32, 16, 0, 32, {"blocks"}),
    (device.T4, 32, 16, 0, 16, {"blocks"}),
    (device.H200, 128, 40, 0, 12, {"registers"}),                   # 40 -> 40 regs/thread, 1280 per warp
    (device.H200, 96, 40, 0, 16, {"registers"}),                    # 12 warps per sub-partition, not 65536 // 1280 = 51
])
def test_occupancy_on_published_cases(spec, threads, regs, smem, blocks, binding):
    o = occupancy.calculate(spec, threads, regs, smem)
    assert o.blocks_per_sm == blocks
    assert set(o.binding) == binding
    assert o.warps_per_sm == blocks * -(-threads // 32)


def test_occupancy_fraction_and_errors():
    assert occupancy.calculate(device.H200, 1024, 31, 8192).occupancy == 1.0
    assert occupancy.calculate(device.H200, 256, 128, 0).occupancy == 0.25
    with pytest.raises(ValueError, match="between 1 and 1024"):
        occupancy.calculate(device.H200, 2048, 32)
    with pytest.raises(ValueError, match="exceed this device's maximum"):
        occupancy.calculate(device.T4, 128, 32, 65 * 1024)
    with pytest.raises(ValueError, match="registers a block may use"):
        occupancy.calculate(device.T4, 1024, 255)


def test_opcode_counts_reads_sass_listings():
    from gemmlab.runtime.compiler import opcode_counts

    sass = """
        /*0290*/                   LDS.U.128 R8, [R5] ;                 /* 0x0000000005087984 */
        /*02a0*/                   LDS.U R12, [R41+0x4] ;               /* 0x00000000290c7984 */
        /*02b0*/               @P0 STS [R3], R2 ;                       /* 0x0000000203007388 */
        /*02c0*/                   LDS R26, [R5] ;                      /* 0x00000000051a7984 */
        /*02d0*/                   FFMA R1, R2, R3, R1 ;                /* 0x0000000302017223 */
        /*02e0*/                   LDSM.16.M88.4 R4, [R6] ;             /* 0x000000000604783b */
    """
    assert opcode_counts(sass) == {"LDS": 2, "LDS.128": 1, "LDSM.16.M88.4": 1, "STS": 1}
    assert opcode_counts(sass, ("FFMA",)) == {"FFMA": 1}


def test_tiled_kernels_shared_traffic():
    """Per warp and phase: T/4 broadcast LDS.128 (2 wavefronts) and T conflict-free LDS in every plain
    kernel, so 1.2 wavefronts per load instruction whatever T; the transposed B tile costs 32 per LDS.128."""
    for T in (8, 16, 32):
        t = banks.tiled_shared_traffic(1024, 1024, 1024, T)
        assert t.load_instructions == 1024**3 // 32 * 5 // 4    # (T/4 + T) per warp-phase = 1.25 per FMA of a warp
        assert t.load_wavefronts * 5 == t.load_instructions * 6 and t.load_conflicts == 0 and t.store_conflicts == 0
        assert t.store_instructions == 2 * banks.tiled_warp_phases(1024, 1024, 1024, T)
    bad = banks.tiled_shared_traffic(1024, 1024, 1024, 32, "transposed")
    assert bad.load_wavefronts == banks.tiled_warp_phases(1024, 1024, 1024, 32) * (8 * 2 + 8 * 32)
    assert bad.store_conflicts == banks.tiled_warp_phases(1024, 1024, 1024, 32) * 31
    padded = banks.tiled_shared_traffic(1000, 1000, 1000, 32, "padded")
    assert padded == banks.tiled_shared_traffic(1000, 1000, 1000, 32, "plain")
    with pytest.raises(ValueError, match="layout"):
        banks.tiled_shared_instructions(32, "diagonal")
    with pytest.raises(ValueError, match="T = 8, 16 or 32"):
        banks.tiled_shared_instructions(64)


def test_parse_ptxas_report():
    from gemmlab.runtime.compiler import parse_ptxas

    report = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'gemm_regtile_2d' for 'sm_90'
ptxas info    : Function properties for gemm_regtile_2d
    0 bytes stack frame, 800 bytes spill stores, 672 bytes spill loads
ptxas info    : Used 80 registers, used 1 barriers, 8192 bytes smem, 388 bytes cmem[0]
ptxas info    : Compiling entry function 'hello' for 'sm_90'
ptxas info    : Function properties for hello
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 0 barriers
"""
    a, b = parse_ptxas(report)
    assert (a.function, a.registers, a.spill_store_bytes, a.spill_load_bytes, a.shared_bytes) == ("gemm_regtile_2d", 80, 800, 672, 8192)
    assert (b.function, b.registers, b.spill_store_bytes, b.shared_bytes) == ("hello", 12, 0, 0)


def test_fast_kernel_transposing_stores():
    """kernels/07_fast.cu stores each float4 of A as four scalars into the transposed tile. Lane l holds A
    row l / (BK/4), k-quad (l % (BK/4)) * 4. With every row padded by 4 floats (BM + 4), k-quads 0 and 8
    land in one bank once BK >= 16: every such store takes 2 wavefronts (the third of the store
    wavefronts Nsight Compute called conflicts for the 128x128x16 kernel). Rows of BM + 2 would avoid it
    but break the 16-byte alignment of the float4 fragment reads; the skewed layout (a pad of 32/(BK/4)
    floats every four rows) makes every store of every tuned configuration conflict-free."""
    base = fast_configs.config("gemm_fast_128x128x16_32x64_8x8")
    padded = fast_configs.config("gemm_fast_128x128x16_32x64_8x8_padded")
    assert base.SKEW and not padded.SKEW and (base.BM, base.BK) == (padded.BM, padded.BK) == (128, 16)
    for j in range(4):
        assert banks.bank_access(padded.a_store_addresses(0, j)).wavefronts == 2
        assert banks.bank_access(base.a_store_addresses(0, j)).wavefronts == 1
    plus2 = [4 * (((lane % 4) * 4) * (128 + 2) + lane // 4) for lane in LANES]
    assert banks.bank_access(plus2).wavefronts == 1 and (4 * (128 + 2)) % 16 != 0
    for c in fast_configs.search_space():
        assert c.SKEW and all(banks.bank_access(c.a_store_addresses(w, j, i)).wavefronts == 1
                              for w in range(c.THREADS // 32) for j in range(4)
                              for i in range(max(c.BM * c.BK // 4 // c.THREADS, 1))), c.function
        assert all(c.a_offset(k, 0) % 4 == 0 for k in range(c.BK)), "fragment reads must stay 16-byte aligned"
        offsets = {c.a_offset(k, m) for k in range(c.BK) for m in range(c.BM)}
        assert len(offsets) == c.BK * c.BM and max(offsets) < c.a_tile_floats, "the layout is one-to-one and fits"


def test_lane_groups_follow_the_128_byte_rule():
    assert banks.lane_groups([4 * lane for lane in LANES]) == [range(0, 32)]
    assert banks.lane_groups([16 * lane for lane in LANES], 16) == [range(i, i + 8) for i in (0, 8, 16, 24)]
    assert banks.lane_groups([8 * lane for lane in LANES], 8) == [range(0, 16), range(16, 32)]
    assert banks.lane_groups([16 * (lane // 2) for lane in LANES], 16) == [range(i, i + 16) for i in (0, 16)]   # pairs
    with pytest.raises(ValueError, match="aligned"):
        banks.lane_groups([4], 8)


def test_access_helpers_strided_padded_and_swizzled():
    assert banks.strided_addresses(3)[:3] == [0, 12, 24] and banks.strided_addresses(2, lanes=4, base=8) == [8, 16, 24, 32]
    assert banks.tile_addresses(LANES, [5] * 32, 33) == banks.array_addresses(LANES, [5] * 32, 33)
    for row in range(16):   # a chunk swizzle permutes each row's chunks and keeps a chunk's words together, in order
        stored = [banks.swizzled_word(row, w, "chunks") for w in range(64)]
        assert sorted(stored[:32]) == list(range(32)) and sorted(stored[32:]) == list(range(32, 64))
        assert all(stored[4 * c:4 * c + 4] == list(range(stored[4 * c], stored[4 * c] + 4)) for c in range(16))
    assert [banks.swizzled_word(r, 8, "chunks") for r in range(9)] == [8, 12, 0, 4, 24, 28, 16, 20, 8]
    assert [banks.swizzled_word(r, 5, "words") for r in (0, 1, 33)] == [5, 4, 4]
    assert banks.swizzled_word(3, 7, "none") == 7
    with pytest.raises(ValueError, match="multiple of 32 words"):
        banks.tile_addresses([1], [0], 48, "chunks")
    with pytest.raises(ValueError, match="swizzle must be one of"):
        banks.swizzled_word(0, 0, "bytes")


def test_the_chunk_swizzle_is_chapter_8s():
    """On rows of 128 and 256 bytes, swizzled_word moves a float's chunk where gemmlab.models.mma.tile_offset moves the
    16-bit elements of the same bytes (CUTLASS's Swizzle<3,4,3>)."""
    from gemmlab.models import mma

    for row_words in (32, 64):
        for r in range(16):
            got = banks.tile_addresses([r] * row_words, range(row_words), row_words, "chunks")
            assert got == [mma.tile_offset(r, 2 * w, 4 * row_words, swizzle=True) for w in range(row_words)]


def test_the_tiled_kernels_instructions_carry_their_addresses():
    for T in (8, 16, 32):
        for layout in banks.TILE_LAYOUTS:
            for ins in banks.tiled_shared_instructions(T, layout):
                assert len(ins.addresses) == 32 and ins.access_bytes == (16 if ins.opcode == "LDS.128" else 4)
                assert banks.bank_access(ins.addresses, ins.access_bytes) == ins.access
