"""Tensor-core fragments (groundwork for chapter 8): which lane of a warp holds which element of a
warp-level ``mma.sync``'s A, B and C, what ``ldmatrix`` delivers, and what it costs in shared memory.

Three parts, all pure Python (NumPy only for packing values), no GPU:

* **The instruction.** :data:`INSTRUCTIONS` lists the ``mma.sync`` forms the course uses, each with
  FP32 accumulators: ``m16n8k16`` with ``.f16`` or ``.bf16`` operands (sm_80), ``m16n8k8`` with
  ``.f16`` (sm_75, a T4) and ``m16n8k8`` with ``.tf32`` (sm_80). :func:`fragment` says, for every lane
  and register element, which ``(row, col)`` of A, B or C that element is, from the formulas of the
  PTX ISA's sections "Matrix Fragments for mma.m16n8k16 with floating point type" and "Matrix
  Fragments for mma.m16n8k8" (written once, in the module's ``_position``). Element *i* of an
  operand is the PTX ISA's ``ai`` / ``bi`` / ``ci``; 16-bit elements are packed two to a 32-bit
  register, the lower-numbered one in the low half (:meth:`Instruction.register_of`, :func:`pack`).
* **ldmatrix.** :func:`ldmatrix_fragment` models ``ldmatrix.sync.aligned.m8n8{.x1,.x2,.x4}{.trans}.b16``
  (PTX ISA, "Warp-level matrix load instruction: ldmatrix"): lane ``8*j + i`` gives the address of row
  *i* of matrix *j*; lane *l* receives, in register *j*, the two elements of row ``l // 4``, columns
  ``2*(l % 4)`` and ``2*(l % 4) + 1`` of matrix *j* (with ``.trans``: of column ``l // 4``, rows
  ``2*(l % 4)`` and ``+ 1``). :func:`ldmatrix_tile_fragment` places the matrices in a tile;
  :data:`LDMATRIX_LOADS` are the placements that deliver exactly the A and B fragments of the
  16-bit instructions (a test checks that they do).
* **Shared memory.** A row-major tile of 16-bit elements, ``row_bytes`` per row, plain or with the XOR
  swizzle of 16-byte chunks (:func:`swizzle_chunk`). :func:`ldmatrix_addresses` and
  :func:`tile_store_addresses` give the byte addresses a warp's ``ldmatrix`` and its 16-byte tile
  stores touch; :func:`ldmatrix_access` and :func:`tile_store_access` cost them with chapter 4's bank
  model (:func:`gemmlab.models.banks.bank_access`, 16-byte accesses: served 8 lanes, 128 bytes, at a time,
  which for ``ldmatrix`` is one 8x8 matrix per pass).

Which ``(row, col)`` a register element "is" has a meaning only through the product
``D = A·B + C`` (and, for ``ldmatrix``, through shared-memory addresses); the GPU test
(``tests/gpu/test_mma_probe.py``, with ``kernels/08_mma_probe.cu``) checks the model both ways.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np
from numpy.typing import ArrayLike

from . import banks

WARP = 32
CHUNK_BYTES = 16
"""The unit the swizzle moves, in bytes, which is one ``ldmatrix`` row (eight 16-bit elements) and one 16-byte access."""
LINE_BYTES = banks.BANKS * banks.BANK_BYTES
"""What one pass through the 32 banks of 4 bytes serves, in bytes (128)."""
OPERANDS = ("A", "B", "C")
"""The operands of ``D = A·B + C``; D has C's layout (the PTX ISA gives one layout for "C or D")."""


# ---------------------------------------------------------------------------------------------------
# The instruction


@dataclass(frozen=True)
class Instruction:
    """One form of ``mma.sync.aligned.<shape>.row.col.f32.<dtype>.<dtype>.f32``: A (M x K) row-major,
    B (K x N) column-major, C and D (M x N) in FP32."""

    shape: str          # "m16n8k16" or "m16n8k8"
    dtype: str          # what A and B hold: "f16", "bf16" or "tf32"
    sm: int             # the oldest architecture that runs it (PTX ISA, mma, "Target ISA Notes")

    @property
    def mnk(self) -> tuple[int, int, int]:
        m, rest = self.shape[1:].split("n")
        n, k = rest.split("k")
        return int(m), int(n), int(k)

    @property
    def ptx(self) -> str:
        return f"mma.sync.aligned.{self.shape}.row.col.f32.{self.dtype}.{self.dtype}.f32"

    @property
    def probe(self) -> str:
        """The ``extern "C"`` kernel of ``kernels/08_mma_probe.cu`` that runs this instruction once."""
        return f"mma_probe_{self.shape}_{self.dtype}"

    def dims(self, operand: str) -> tuple[int, int]:
        """(rows, cols) of an operand: A is M x K, B is K x N, C (and D) M x N."""
        m, n, k = self.mnk
        return {"A": (m, k), "B": (k, n), "C": (m, n)}[_operand(operand)]

    def element_type(self, operand: str) -> str:
        """``f16``, ``bf16`` or ``tf32`` for A and B; ``f32`` for the accumulators."""
        return "f32" if _operand(operand) == "C" else self.dtype

    def elements(self, operand: str) -> int:
        """Elements of the operand each lane holds: its size over the warp's 32 lanes."""
        rows, cols = self.dims(operand)
        return rows * cols // WARP

    def per_register(self, operand: str) -> int:
        """Elements in one 32-bit register: two 16-bit values (``.f16x2``), or one 32-bit value."""
        return 2 if self.element_type(operand) in ("f16", "bf16") else 1

    def registers(self, operand: str) -> int:
        """32-bit registers each lane gives the instruction for the operand."""
        return self.elements(operand) // self.per_register(operand)

    def register_of(self, operand: str, element: int) -> tuple[int, int]:
        """(register, half) of element ``element``: 16-bit elements go two to a register, the even one
        in the low half (half 0); 32-bit elements one to a register (half 0)."""
        per = self.per_register(operand)
        return element // per, element % per


INSTRUCTIONS: tuple[Instruction, ...] = (
    Instruction("m16n8k16", "f16", 80),
    Instruction("m16n8k16", "bf16", 80),
    Instruction("m16n8k8", "f16", 75),
    Instruction("m16n8k8", "tf32", 80),
)
"""The forms the model covers, each with FP32 accumulation."""


def instruction(shape: str, dtype: str) -> Instruction:
    """The :class:`Instruction` of ``shape`` (``"m16n8k16"``, ``"m16n8k8"``) and ``dtype``."""
    for ins in INSTRUCTIONS:
        if (ins.shape, ins.dtype) == (shape, dtype):
            return ins
    known = ", ".join(f"{i.shape} .{i.dtype}" for i in INSTRUCTIONS)
    raise ValueError(f"the model covers {known}; not {shape} .{dtype}")


def _operand(operand: str) -> str:
    op = operand.upper()
    op = "C" if op == "D" else op
    if op not in OPERANDS:
        raise ValueError(f"operand must be A, B, C or D, got {operand!r}")
    return op


def _position(shape: str, dtype: str, operand: str, lane: int, i: int) -> tuple[int, int]:
    """(row, col) of element ``i`` of ``operand`` in lane ``lane``: the PTX ISA's formulas, case by case.

    PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type" and "Matrix Fragments for
    mma.m16n8k8" (9.7.14.5.8 and 9.7.14.5.7 in the edition read; the numbers move between editions,
    the anchors ``#warp-level-matrix-fragment-mma-16816-float`` and ``#warp-level-matrix-fragment-mma-1688``
    of https://docs.nvidia.com/cuda/parallel-thread-execution/ do not).
    """
    group = lane >> 2               # groupID: the 8 groups of 4 consecutive lanes
    t = lane % 4                    # threadID_in_group
    if operand == "C":              # the same for both shapes: c0, c1 in row groupID, c2, c3 eight rows below
        return (group if i < 2 else group + 8), t * 2 + (i & 1)
    if shape == "m16n8k16":         # .f16 and .bf16 alike
        if operand == "A":          # a0..a7: rows groupID / +8 alternate in pairs, columns +8 for a4..a7
            row = group if i in (0, 1, 4, 5) else group + 8
            col = t * 2 + (i & 1) + (8 if i >= 4 else 0)
            return row, col
        row = t * 2 + (i & 1) + (8 if i >= 2 else 0)      # B: b0, b1 in rows 2t, 2t+1; b2, b3 eight below
        return row, group
    if dtype == "tf32":             # m16n8k8 .tf32: one 32-bit element per register
        if operand == "A":
            row = group if i in (0, 2) else group + 8
            col = t if i < 2 else t + 4
            return row, col
        return (t if i == 0 else t + 4), group
    if operand == "A":              # m16n8k8 .f16 / .bf16
        return (group if i < 2 else group + 8), t * 2 + (i & 1)
    return t * 2 + i, group         # B: b0, b1


def fragment(shape: str, dtype: str, operand: str) -> list[list[tuple[int, int]]]:
    """For each lane 0..31 and each of its register elements, the (row, col) of ``operand`` (A, B, C
    or D) it holds: ``fragment(...)[lane][i]`` is the PTX ISA's ``ai`` / ``bi`` / ``ci`` of that lane.
    Rows and columns count in the operand's own shape (:meth:`Instruction.dims`): B is K x N, so a
    B element's row is its k."""
    ins = instruction(shape, dtype)
    op = _operand(operand)
    return [[_position(shape, dtype, op, lane, i) for i in range(ins.elements(op))] for lane in range(WARP)]


def owners(shape: str, dtype: str, operand: str) -> list[list[tuple[int, int]]]:
    """The inverse of :func:`fragment`, as a grid: ``owners(...)[row][col]`` is the (lane, element)
    that holds the element. What a figure of the layout draws."""
    ins = instruction(shape, dtype)
    rows, cols = ins.dims(operand)
    grid: list[list] = [[None] * cols for _ in range(rows)]
    for lane, elements in enumerate(fragment(shape, dtype, operand)):
        for i, (r, c) in enumerate(elements):
            if grid[r][c] is not None:
                raise AssertionError(f"{operand}[{r}][{c}] is held twice: by {grid[r][c]} and {(lane, i)}")
            grid[r][c] = (lane, i)
    return grid


def lane_values(matrix: ArrayLike, shape: str, dtype: str, operand: str) -> np.ndarray:
    """What each lane holds of ``matrix`` (the operand as a rows x cols array): ``[lane][element]``."""
    ins = instruction(shape, dtype)
    X = np.asarray(matrix)
    if X.shape != ins.dims(operand):
        raise ValueError(f"{_operand(operand)} of {shape} is {ins.dims(operand)[0]}x{ins.dims(operand)[1]}, got shape {X.shape}")
    index = np.array(fragment(shape, dtype, operand))            # [lane][element][row, col]
    return X[index[..., 0], index[..., 1]]


def from_lanes(values: ArrayLike, shape: str, dtype: str, operand: str) -> np.ndarray:
    """The operand as a matrix, from what each lane holds (``[lane][element]``): :func:`lane_values` undone."""
    ins = instruction(shape, dtype)
    V = np.asarray(values)
    if V.shape != (WARP, ins.elements(operand)):
        raise ValueError(f"need {WARP} x {ins.elements(operand)} values for {_operand(operand)} of {shape}, got {V.shape}")
    index = np.array(fragment(shape, dtype, operand))
    X = np.zeros(ins.dims(operand), V.dtype)
    X[index[..., 0], index[..., 1]] = V
    return X


# ---------------------------------------------------------------------------------------------------
# Register contents


def to_bf16_bits(x: ArrayLike) -> np.ndarray:
    """FP32 to BF16, rounded to nearest even (a NaN stays a NaN), as uint16 bit patterns: NumPy has no
    bfloat16 type."""
    x = np.ascontiguousarray(x, np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), ((bits >> 16) | 0x40).astype(np.uint16), rounded)


def to_tf32(x: ArrayLike) -> np.ndarray:
    """FP32 rounded to TF32 (a 10-bit mantissa, FP32's exponent), to nearest even, kept in float32: the
    low 13 bits are zero. A NaN stays a NaN, an infinity infinite; a value that rounds past FP32's largest
    finite one becomes an infinity, as any rounding to nearest would make it."""
    x = np.ascontiguousarray(x, np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    rounded = (((bits + 0xFFF + ((bits >> 13) & 1)) >> 13) << 13).astype(np.uint32)
    return np.where(np.isfinite(x), rounded.view(np.float32), x)


def bf16_to_f32(bits: ArrayLike) -> np.ndarray:
    """BF16 bit patterns (uint16) as the float32 values they are exactly."""
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


def _bits16(values: np.ndarray, element_type: str) -> np.ndarray:
    if element_type == "f16":
        return values.astype(np.float16).view(np.uint16).astype(np.uint32)
    return to_bf16_bits(values).astype(np.uint32)


def pack(values: ArrayLike, element_type: str) -> np.ndarray:
    """The 32-bit registers that hold ``values`` (``[lane][element]``, as :func:`lane_values` gives
    them): ``uint32[lane][register]``. ``f16``/``bf16``: two elements per register, element 2r in the
    low half; ``tf32``: the FP32 bit pattern rounded to TF32's 10 mantissa bits; ``f32``: the bits."""
    V = np.asarray(values, np.float64)
    if element_type in ("f16", "bf16"):
        if V.shape[-1] % 2:
            raise ValueError(f"16-bit elements go two to a register; got {V.shape[-1]} per lane")
        b = _bits16(V, element_type)
        return (b[..., 0::2] | (b[..., 1::2] << 16)).astype(np.uint32)
    if element_type == "tf32":
        bits = V.astype(np.float32).view(np.uint32).astype(np.uint64)
        return ((bits + 0x1000) & 0xFFFFE000).astype(np.uint32)          # round half away, keep 19 bits
    if element_type == "f32":
        return V.astype(np.float32).view(np.uint32)
    raise ValueError(f"element_type must be f16, bf16, tf32 or f32, got {element_type!r}")


def unpack(words: ArrayLike, element_type: str) -> np.ndarray:
    """:func:`pack` undone: ``float64[lane][element]`` from ``uint32[lane][register]``."""
    W = np.asarray(words, np.uint32)
    if element_type in ("f16", "bf16"):
        halves = np.stack([W & 0xFFFF, W >> 16], axis=-1).reshape(*W.shape[:-1], 2 * W.shape[-1])
        if element_type == "f16":
            return halves.astype(np.uint16).view(np.float16).astype(np.float64)
        return (halves << 16).astype(np.uint32).view(np.float32).astype(np.float64)
    if element_type in ("tf32", "f32"):
        return W.view(np.float32).astype(np.float64)
    raise ValueError(f"element_type must be f16, bf16, tf32 or f32, got {element_type!r}")


# ---------------------------------------------------------------------------------------------------
# ldmatrix


def _check_num(num: int) -> None:
    if num not in (1, 2, 4):
        raise ValueError(f"ldmatrix loads 1, 2 or 4 matrices (.x1, .x2, .x4), got {num}")


def ldmatrix_address_rows(num: int) -> list[tuple[int, int]]:
    """For each lane that gives ``ldmatrix.x<num>`` an address (lanes 0 .. 8*num - 1), the (matrix, row)
    whose 16 bytes start there: lanes 0-7 the rows of the first matrix, 8-15 the second, and so on.
    (Before sm_80 the other lanes must hold valid addresses too: copies of these.)"""
    _check_num(num)
    return [(lane // 8, lane % 8) for lane in range(8 * num)]


def ldmatrix_fragment(num: int, trans: bool = False) -> list[list[tuple[int, int, int]]]:
    """What ``ldmatrix.sync.aligned.m8n8.x<num>{.trans}.shared.b16`` delivers: for each lane and element,
    the (matrix, row, col) of the 8x8 matrices as stored (row *i* of matrix *j* at the address of lane
    ``8*j + i``). Element ``2*j + h`` is half *h* of destination register *j*. Without ``.trans`` lane *l*
    gets row ``l // 4``, columns ``2*(l % 4) + h``; with ``.trans`` column ``l // 4``, rows ``2*(l % 4) + h``."""
    _check_num(num)
    out = []
    for lane in range(WARP):
        group, t = lane >> 2, lane % 4
        out.append([(j, 2 * t + h, group) if trans else (j, group, 2 * t + h) for j in range(num) for h in (0, 1)])
    return out


def _check_origins(origins: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    origins = tuple((int(r), int(c)) for r, c in origins)
    _check_num(len(origins))
    for r, c in origins:
        if r < 0 or c < 0 or c % 8:
            raise ValueError(f"an 8x8 matrix starts at a row >= 0 and a column that is a multiple of 8 "
                             f"(16 bytes of 16-bit elements), got ({r}, {c})")
    return origins


def ldmatrix_tile_rows(origins: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """For a tile from which ``ldmatrix`` loads ``len(origins)`` 8x8 matrices, matrix *j* with its top-left
    element at tile position ``origins[j]``: the tile (row, col) at which each address-giving lane points."""
    origins = _check_origins(origins)
    return [(origins[j][0] + i, origins[j][1]) for j, i in ldmatrix_address_rows(len(origins))]


def ldmatrix_tile_fragment(origins: Iterable[tuple[int, int]], trans: bool = False) -> list[list[tuple[int, int]]]:
    """:func:`ldmatrix_fragment` in tile coordinates: matrix *j*'s element (r, c) is tile element
    ``(origins[j][0] + r, origins[j][1] + c)``; ``[lane][element]`` -> (row, col) of the tile."""
    origins = _check_origins(origins)
    return [[(origins[j][0] + r, origins[j][1] + c) for j, r, c in elements]
            for elements in ldmatrix_fragment(len(origins), trans)]


LDMATRIX_LOADS: dict[tuple[str, str], tuple[tuple[tuple[int, int], ...], bool]] = {
    ("m16n8k16", "A"): (((0, 0), (8, 0), (0, 8), (8, 8)), False),  # .x4: A, 16 x 16, row-major
    ("m16n8k16", "B"): (((0, 0), (8, 0)), True),                     # .x2.trans: B, 16 x 8, row-major (k, n)
    ("m16n8k8", "A"): (((0, 0), (8, 0)), False),                     # .x2: A, 16 x 8, row-major
    ("m16n8k8", "B"): (((0, 0),), True),                             # .x1.trans: B, 8 x 8, row-major (k, n)
}
"""(origins, trans) of the ``ldmatrix`` that loads a 16-bit operand, stored row-major in its own
shape, straight into its :func:`fragment`: ``ldmatrix_tile_fragment(*LDMATRIX_LOADS[shape, op])`` equals
``fragment(shape, "f16", op)``. (B stored transposed, N x K, loads without ``.trans`` from origins
``(0, 0), (0, 8)``.) Lane *l* of the A load of ``m16n8k16`` points at row ``l % 16``, column ``8 * (l // 16)``."""


# ---------------------------------------------------------------------------------------------------
# Shared memory: a row-major tile of 16-bit elements, plain or swizzled


def _check_row_bytes(row_bytes: int, swizzle: bool) -> None:
    if row_bytes < CHUNK_BYTES or row_bytes % CHUNK_BYTES:
        raise ValueError(f"rows must be a positive multiple of {CHUNK_BYTES} bytes (16-byte aligned rows), got {row_bytes}")
    if swizzle and not (LINE_BYTES % row_bytes == 0 or row_bytes % LINE_BYTES == 0):
        raise ValueError(f"the swizzle covers rows of 16, 32 or 64 bytes or a multiple of 128, got {row_bytes}")


def swizzle_chunk(row: int, chunk: int, row_bytes: int) -> int:
    """Where 16-byte chunk ``chunk`` of tile row ``row`` is stored, within the same row, under the XOR swizzle.

    Eight 16-byte chunks fill the 32 banks once (128 bytes); the swizzle makes the same logical chunk of
    eight consecutive rows land in eight different such slots. With rows of 128 bytes or more, a row
    is one or more whole 128-byte lines and ``chunk ^ (row % 8)`` does it (CUTLASS's ``Swizzle<3,4,3>``
    on the byte offsets of 128-byte rows). Shorter rows share a line: ``rows_per_line = 128 // row_bytes``
    rows, and the XOR takes the line's index, ``(row // rows_per_line)``, modulo the row's
    ``row_bytes // 16`` chunks: ``(row // 2) % 4`` for 64-byte rows, ``(row // 4) % 2`` for 32-byte
    rows, nothing for 16-byte rows (eight of them are one line already)."""
    _check_row_bytes(row_bytes, True)
    chunks = row_bytes // CHUNK_BYTES
    if not 0 <= chunk < chunks:
        raise ValueError(f"a row of {row_bytes} bytes has chunks 0..{chunks - 1}, got {chunk}")
    rows_per_line = max(1, LINE_BYTES // row_bytes)
    return chunk ^ ((row // rows_per_line) % min(8, chunks))


def tile_offset(row: int, col: int, row_bytes: int, swizzle: bool = False) -> int:
    """Byte offset of 16-bit element (row, col) of a row-major tile with rows of ``row_bytes`` bytes:
    ``row * row_bytes + 2 * col``, with the element's 16-byte chunk moved by :func:`swizzle_chunk`."""
    _check_row_bytes(row_bytes, swizzle)
    if not 0 <= 2 * col < row_bytes:
        raise ValueError(f"column {col} is outside a row of {row_bytes} bytes")
    chunk, within = divmod(2 * col, CHUNK_BYTES)
    if swizzle:
        chunk = swizzle_chunk(row, chunk, row_bytes)
    return row * row_bytes + chunk * CHUNK_BYTES + within


def shared_image(tile: ArrayLike, row_bytes: int, swizzle: bool = False) -> np.ndarray:
    """The tile (rows x cols of 16-bit values) as shared memory holds it: ``uint16[rows * row_bytes // 2]``,
    each element at :func:`tile_offset` (unused bytes of a padded row are zero)."""
    T = np.asarray(tile)
    rows, cols = T.shape
    image = np.zeros(rows * row_bytes // 2, np.uint16)
    for r in range(rows):
        for c in range(cols):
            image[tile_offset(r, c, row_bytes, swizzle) // 2] = T[r, c]
    return image


def ldmatrix_addresses(origins: Iterable[tuple[int, int]], row_bytes: int, swizzle: bool = False,
                       base: int = 0) -> list[int]:
    """The byte addresses the address-giving lanes pass to ``ldmatrix`` (lane order, 8 per matrix): the
    start of each matrix row in a tile at ``base`` stored by :func:`tile_offset`."""
    return [base + tile_offset(r, c, row_bytes, swizzle) for r, c in ldmatrix_tile_rows(origins)]


def ldmatrix_access(origins: Iterable[tuple[int, int]], row_bytes: int, swizzle: bool = False) -> banks.BankAccess:
    """The bank model's cost of that ``ldmatrix``: eight 16-byte rows per matrix, one matrix per group of
    8 lanes, so the ideal is one wavefront per matrix and each extra one is a bank conflict."""
    return banks.bank_access(ldmatrix_addresses(origins, row_bytes, swizzle), CHUNK_BYTES)


def tile_store_addresses(row_bytes: int, swizzle: bool = False, first_chunk: int = 0) -> list[int]:
    """Byte addresses of a warp's 16-byte stores into the tile (a ``float4``/``uint4`` store or a 16-byte
    ``cp.async`` per lane): lane *l* stores logical chunk ``first_chunk + l`` of the row-major tile, that is
    row ``(first_chunk + l) // (row_bytes // 16)``, consecutive chunks along each row."""
    _check_row_bytes(row_bytes, swizzle)
    chunks = row_bytes // CHUNK_BYTES
    out = []
    for lane in range(WARP):
        row, chunk = divmod(first_chunk + lane, chunks)
        out.append(tile_offset(row, chunk * CHUNK_BYTES // 2, row_bytes, swizzle))
    return out


def tile_store_access(row_bytes: int, swizzle: bool = False, first_chunk: int = 0) -> banks.BankAccess:
    """The bank model's cost of those stores (ideal: 4 wavefronts, 512 bytes at 128 per pass)."""
    return banks.bank_access(tile_store_addresses(row_bytes, swizzle, first_chunk), CHUNK_BYTES)
