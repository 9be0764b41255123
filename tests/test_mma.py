"""The tensor-core fragment model (gemmlab.models.mma) on what the PTX ISA states, with no GPU: every element of
A, B and C held by exactly one lane and element, the register counts of the ISA, its formulas at sample
lanes, ldmatrix delivering exactly the mma fragments, and the XOR swizzle taking chapter 4's bank model
to the ideal where the plain layout conflicts. tests/gpu/test_mma_probe.py checks the same model on a GPU."""

import re
from collections import Counter

import numpy as np
import pytest

from gemmlab.gemm import units
from gemmlab.measure import probes
from gemmlab.models import banks, mma

INSTRUCTIONS = mma.INSTRUCTIONS
IDS = [f"{i.shape}-{i.dtype}" for i in INSTRUCTIONS]

# PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type" and "... for mma.m16n8k8":
# (32-bit registers, elements) per lane, for A, B and C, copied from the ISA's fragment tables.
PTX_REGISTERS = {
    ("m16n8k16", "f16"): {"A": (4, 8), "B": (2, 4), "C": (4, 4)},     # four .f16x2, two .f16x2, four .f32
    ("m16n8k16", "bf16"): {"A": (4, 8), "B": (2, 4), "C": (4, 4)},
    ("m16n8k8", "f16"): {"A": (2, 4), "B": (1, 2), "C": (4, 4)},      # two .f16x2, one .f16x2, four .f32
    ("m16n8k8", "tf32"): {"A": (4, 4), "B": (2, 2), "C": (4, 4)},     # four .b32, two .b32, four .f32
}


@pytest.mark.parametrize("ins", INSTRUCTIONS, ids=IDS)
@pytest.mark.parametrize("operand", ["A", "B", "C"])
def test_every_element_is_held_by_exactly_one_lane_and_element(ins, operand):
    rows, cols = ins.dims(operand)
    held = Counter(rc for lane in mma.fragment(ins.shape, ins.dtype, operand) for rc in lane)
    assert set(held) == {(r, c) for r in range(rows) for c in range(cols)}, "every element, and only those"
    assert set(held.values()) == {1}, f"held more than once: {[rc for rc, n in held.items() if n > 1][:4]}"
    grid = mma.owners(ins.shape, ins.dtype, operand)
    assert all(grid[r][c] is not None for r in range(rows) for c in range(cols))


@pytest.mark.parametrize("ins", INSTRUCTIONS, ids=IDS)
def test_register_counts_are_the_ptx_isas(ins):
    for operand, (registers, elements) in PTX_REGISTERS[ins.shape, ins.dtype].items():
        assert (ins.registers(operand), ins.elements(operand)) == (registers, elements), operand
        assert all(len(lane) == elements for lane in mma.fragment(ins.shape, ins.dtype, operand))
    assert ins.dims("A") == (16, ins.mnk[2]) and ins.dims("B") == (ins.mnk[2], 8) and ins.dims("D") == (16, 8)


def test_sample_lanes_against_the_ptx_formulas():
    """Lanes 0, 5 (groupID 1, threadID_in_group 1) and 31 (7, 3), worked out by hand from the ISA."""
    A16 = mma.fragment("m16n8k16", "f16", "A")
    assert A16[0] == [(0, 0), (0, 1), (8, 0), (8, 1), (0, 8), (0, 9), (8, 8), (8, 9)]
    assert A16[5] == [(1, 2), (1, 3), (9, 2), (9, 3), (1, 10), (1, 11), (9, 10), (9, 11)]
    assert A16[31] == [(7, 6), (7, 7), (15, 6), (15, 7), (7, 14), (7, 15), (15, 14), (15, 15)]
    assert mma.fragment("m16n8k16", "bf16", "A") == A16
    assert mma.fragment("m16n8k16", "f16", "B")[5] == [(2, 1), (3, 1), (10, 1), (11, 1)]
    assert mma.fragment("m16n8k16", "f16", "C")[31] == [(7, 6), (7, 7), (15, 6), (15, 7)]
    assert mma.fragment("m16n8k8", "f16", "A")[5] == [(1, 2), (1, 3), (9, 2), (9, 3)]
    assert mma.fragment("m16n8k8", "f16", "B")[31] == [(6, 7), (7, 7)]
    assert mma.fragment("m16n8k8", "tf32", "A")[5] == [(1, 1), (9, 1), (1, 5), (9, 5)]
    assert mma.fragment("m16n8k8", "tf32", "B")[31] == [(3, 7), (7, 7)]
    for ins in INSTRUCTIONS:                                        # one accumulator layout for all four
        assert mma.fragment(ins.shape, ins.dtype, "C") == mma.fragment("m16n8k16", "f16", "D")


@pytest.mark.parametrize("ins", [i for i in INSTRUCTIONS if i.dtype != "tf32"], ids=lambda i: f"{i.shape}-{i.dtype}")
def test_a_register_holds_two_neighbours_along_k(ins):
    """The two halves of an .f16x2 register are consecutive k of one row of A (row-major) and of one
    column of B (column-major): each lane's registers are dot-product-ready slices."""
    for operand, along_k in (("A", lambda p, q: p[0] == q[0] and q[1] == p[1] + 1),
                             ("B", lambda p, q: p[1] == q[1] and q[0] == p[0] + 1)):
        for lane in mma.fragment(ins.shape, ins.dtype, operand):
            assert all(along_k(lane[2 * r], lane[2 * r + 1]) for r in range(ins.registers(operand)))
            assert [ins.register_of(operand, e) for e in range(4)] == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_instruction_properties_and_refusals():
    ins = mma.instruction("m16n8k8", "tf32")
    assert ins.ptx == "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" and ins.sm == 80
    assert mma.instruction("m16n8k8", "f16").sm == 75 and ins.register_of("A", 3) == (3, 0)
    with pytest.raises(ValueError, match="m16n8k16 .f16"):
        mma.instruction("m16n8k32", "f16")
    with pytest.raises(ValueError, match="A, B, C or D"):
        mma.fragment("m16n8k16", "f16", "E")


@pytest.mark.parametrize("ins", INSTRUCTIONS, ids=IDS)
def test_lane_values_round_trip_and_pack(ins):
    rng = np.random.default_rng(7)
    for operand in "ABC":
        X = rng.integers(-8, 9, ins.dims(operand)).astype(np.float32)
        values = mma.lane_values(X, ins.shape, ins.dtype, operand)
        assert values.shape == (32, ins.elements(operand))
        assert np.array_equal(mma.from_lanes(values, ins.shape, ins.dtype, operand), X)
        kind = ins.element_type(operand)
        words = mma.pack(values, kind)
        assert words.shape == (32, ins.registers(operand)) and words.dtype == np.uint32
        assert np.array_equal(mma.unpack(words, kind), values)      # small integers are exact in every type
    with pytest.raises(ValueError, match="is 16x"):
        mma.lane_values(np.zeros((8, 8)), ins.shape, ins.dtype, "A")


def test_pack_puts_the_even_element_in_the_low_half():
    assert mma.pack([[1.0, 2.0]], "f16")[0, 0] == 0x4000_3C00      # f16: 2.0 = 0x4000, 1.0 = 0x3C00
    assert mma.pack([[1.0, -2.0]], "bf16")[0, 0] == 0xC000_3F80    # bf16: the top half of the FP32 bits
    assert mma.pack([[1.0 + 2**-11]], "tf32")[0, 0] == 0x3F80_2000   # rounded to 10 mantissa bits
    assert mma.pack([[1.5]], "f32")[0, 0] == 0x3FC0_0000


# ------------------------------------------------------------------------------------------ ldmatrix

@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_delivers_every_element_once(num, trans):
    assert mma.ldmatrix_address_rows(num) == [(lane // 8, lane % 8) for lane in range(8 * num)]
    got = mma.ldmatrix_fragment(num, trans)
    assert all(len(lane) == 2 * num for lane in got)
    held = Counter(e for lane in got for e in lane)
    assert set(held) == {(j, r, c) for j in range(num) for r in range(8) for c in range(8)} and set(held.values()) == {1}
    plain = mma.ldmatrix_fragment(num, False)
    assert got == (plain if not trans else [[(j, c, r) for j, r, c in lane] for lane in plain])
    assert plain[0][:2] == [(0, 0, 0), (0, 0, 1)] and plain[31][:2] == [(0, 7, 6), (0, 7, 7)]


SIXTEEN_BIT = [(i.shape, i.dtype, op) for i in INSTRUCTIONS if i.dtype != "tf32" for op in "AB"]


@pytest.mark.parametrize("shape,dtype,operand", SIXTEEN_BIT, ids=["-".join(x) for x in SIXTEEN_BIT])
def test_ldmatrix_loads_are_the_mma_fragments(shape, dtype, operand):
    origins, trans = mma.LDMATRIX_LOADS[shape, operand]
    assert mma.ldmatrix_tile_fragment(origins, trans) == mma.fragment(shape, dtype, operand)


def test_ldmatrix_x4_of_a_16x16_tile_is_the_a_fragment():
    """What a chapter will say: lane l points at row l % 16, column 8 * (l // 16) of the A tile, and
    ldmatrix.x4 hands every lane exactly its eight elements of m16n8k16's A, in register order."""
    origins, trans = mma.LDMATRIX_LOADS["m16n8k16", "A"]
    assert not trans and mma.ldmatrix_tile_rows(origins) == [(lane % 16, 8 * (lane // 16)) for lane in range(32)]
    assert mma.ldmatrix_tile_fragment(origins) == mma.fragment("m16n8k16", "f16", "A")


def test_b_stored_transposed_loads_without_trans():
    """B kept as N x K (each column of B contiguous, as .col names it): ldmatrix without .trans."""
    for shape, origins in (("m16n8k16", ((0, 0), (0, 8))), ("m16n8k8", ((0, 0),))):
        bt = mma.ldmatrix_tile_fragment(origins)                        # (n, k) of B^T
        assert [[(k, n) for n, k in lane] for lane in bt] == mma.fragment(shape, "f16", "B")


def test_ldmatrix_refusals():
    with pytest.raises(ValueError, match="1, 2 or 4"):
        mma.ldmatrix_fragment(3)
    with pytest.raises(ValueError, match="multiple of 8"):
        mma.ldmatrix_tile_rows(((0, 4),))


# ------------------------------------------------------------------------------------------ shared memory

ROW_BYTES = [16, 32, 64, 128, 256]


@pytest.mark.parametrize("row_bytes", ROW_BYTES)
def test_the_swizzle_permutes_chunks_within_each_row(row_bytes):
    chunks = row_bytes // 16
    for row in range(64):
        assert sorted(mma.swizzle_chunk(row, c, row_bytes) for c in range(chunks)) == list(range(chunks))
    offsets = {mma.tile_offset(r, c, row_bytes, True) for r in range(32) for c in range(row_bytes // 2)}
    assert offsets == set(range(0, 32 * row_bytes, 2)), "every element of the tile in its own 2 bytes"


def test_the_swizzle_of_128_byte_rows_is_chunk_xor_row():
    assert all(mma.swizzle_chunk(r, c, 128) == c ^ (r % 8) for r in range(32) for c in range(8))
    assert [mma.swizzle_chunk(r, 0, 64) for r in range(8)] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert mma.tile_offset(3, 9, 128, swizzle=True) == 3 * 128 + (1 ^ 3) * 16 + 2
    with pytest.raises(ValueError, match="16, 32 or 64 bytes or a multiple of 128"):
        mma.swizzle_chunk(0, 0, 96)
    with pytest.raises(ValueError, match="multiple of 16"):
        mma.tile_offset(0, 0, 40)


def test_shared_image_places_the_tile_by_the_layout():
    tile = np.arange(16 * 64, dtype=np.uint16).reshape(16, 64)
    for swizzle in (False, True):
        image = mma.shared_image(tile, 128, swizzle)
        assert all(image[mma.tile_offset(r, c, 128, swizzle) // 2] == tile[r, c] for r in range(16) for c in range(64))
    assert np.array_equal(mma.shared_image(tile, 128), tile.ravel())


def a_loads(row_bytes):
    """Every ldmatrix.x4 of a 16x16 A tile that a row of ``row_bytes`` bytes (16-bit elements) holds."""
    return [tuple((r0 + r, c0 + c) for r, c in mma.LDMATRIX_LOADS["m16n8k16", "A"][0])
            for r0 in (0, 16) for c0 in range(0, max(16, row_bytes // 2), 16) if 2 * (c0 + 16) <= row_bytes]


@pytest.mark.parametrize("row_bytes,plain_wavefronts", [(32, 8), (64, 16), (128, 32), (256, 32)])
def test_plain_rows_conflict_and_the_swizzle_takes_the_ideal(row_bytes, plain_wavefronts):
    """ldmatrix.x4 reads four 8x8 matrices, one per pass when conflict-free (ideal 4 wavefronts). Plain rows of
    64 bytes put rows r and r + 2 in the same banks (4 passes per matrix), rows of 128 or 256 bytes put all
    eight rows there (8 passes); the swizzle spreads every matrix over the 32 banks."""
    loads = a_loads(row_bytes)
    assert len(loads) == 2 * max(1, row_bytes // 32)
    for origins in loads:
        plain = mma.ldmatrix_access(origins, row_bytes)
        assert (plain.wavefronts, plain.ideal) == (plain_wavefronts, 4)
        assert plain.extra_wavefronts == plain_wavefronts - 4 > 0
        swizzled = mma.ldmatrix_access(origins, row_bytes, swizzle=True)
        assert (swizzled.wavefronts, swizzled.extra_wavefronts) == (4, 0)
        assert max(swizzled.words_per_bank) == 4                      # 4 matrices x 1 word in each bank


@pytest.mark.parametrize("row_bytes", [32, 64, 128, 256])
def test_swizzled_b_loads_are_conflict_free(row_bytes):
    for trans_origins in (((0, 0), (8, 0)), ((16, 8), (24, 8))):     # .x2.trans of B (K x N), as LDMATRIX_LOADS
        assert mma.ldmatrix_access(trans_origins, row_bytes, swizzle=True).extra_wavefronts == 0
    assert mma.ldmatrix_access(((0, 0), (0, 8)), row_bytes, swizzle=True).extra_wavefronts == 0   # B^T, N x K


def test_padding_by_one_chunk_also_avoids_the_conflicts():
    """Chapter 4's other cure: rows of 64 halves padded by 8 (144 bytes) shift each row by one 16-byte chunk."""
    assert mma.ldmatrix_access(((0, 0), (8, 0), (0, 8), (8, 8)), 144).extra_wavefronts == 0


@pytest.mark.parametrize("row_bytes", [32, 64, 128, 256])
@pytest.mark.parametrize("swizzle", [False, True])
def test_tile_stores_are_conflict_free_both_ways(row_bytes, swizzle):
    """A warp's 16-byte stores of consecutive chunks: 512 bytes, 4 passes, plain or swizzled (the swizzle
    only permutes chunks within a row, so 8 lanes still cover one 128-byte line)."""
    for first in (0, 32, 64, 96):
        access = mma.tile_store_access(row_bytes, swizzle, first)
        assert (access.wavefronts, access.ideal) == (4, 4)


def test_the_bank_model_is_chapter_4s():
    addresses = mma.ldmatrix_addresses(((0, 0), (8, 0), (0, 8), (8, 8)), 128)
    assert addresses[:9] == [128 * r for r in range(8)] + [128 * 8]
    assert mma.ldmatrix_access(((0, 0), (8, 0), (0, 8), (8, 8)), 128) == banks.bank_access(addresses, 16)


# ------------------------------------------------------------------------------------------ the probe kernel

PROBE = units.unit(probes.MMA_PROBES)


def test_the_probe_file_runs_every_instruction_of_the_model():
    text = PROBE.file_text
    for ins in INSTRUCTIONS:
        assert re.search(rf'extern "C" __global__ void __launch_bounds__\(32\)\s+{ins.probe}\(', text), ins.probe
        assert ins.ptx in text
    assert "ldmatrix_probe(" in text
    assert f"#define MMA_PROBE_SENTINEL 0x{probes.SENTINEL:X}u" in text
    assert f"#define LDMATRIX_IMAGE_BYTES {probes.LDMATRIX_IMAGE_BYTES}" in text
    for ins in INSTRUCTIONS:                                            # the sm_80 forms sit behind the guard
        at = text.index(ins.ptx)
        guarded = text.rfind("#if __CUDA_ARCH__ >= 800", 0, at) > text.rfind("#endif", 0, at)
        assert guarded == (ins.sm == 80), ins.ptx


def test_the_probe_launchers_check_their_inputs_before_any_gpu():
    with pytest.raises(ValueError, match="32 x 4"):
        probes.mma_registers("m16n8k16", "f16", np.zeros((32, 2)), np.zeros((32, 2)), np.zeros((32, 4)))
    with pytest.raises(ValueError, match="1, 2 or 4"):
        probes.ldmatrix_registers(np.zeros(64), [0] * 8, 3)
    with pytest.raises(ValueError, match="16-byte aligned"):
        probes.ldmatrix_registers(np.zeros(64), [8] * 8, 1)
    with pytest.raises(ValueError, match="takes 16 row addresses"):
        probes.ldmatrix_registers(np.zeros(64), [0] * 8, 2)
    with pytest.raises(ValueError, match="at most 8192 bytes"):
        probes.ldmatrix_registers(np.zeros(8192), [0] * 8, 1)
