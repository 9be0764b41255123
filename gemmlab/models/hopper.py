"""Hopper's copy engine and warpgroup MMA, modelled in Python (groundwork for chapter 9). Pure Python, no GPU.

Three parts, each a rule of the hardware written once, so that a kernel's parameters can be checked (and
drawn) before anything runs:

* **Swizzled shared memory.** The tensor copy engine (TMA) writes a tile into shared memory in one of three
  swizzled layouts, and ``wgmma`` reads them: within each 1024-byte-aligned block, the 16-byte chunk bits of a
  byte offset (bits 4 and up) are XORed with the bits just above a 128-byte line (bits 7 and up): 3 bits for the
  128-byte swizzle, 2 for 64 bytes, 1 for 32 bytes (CUTLASS calls them ``Swizzle<3,4,3>``, ``<2,4,3>``,
  ``<1,4,3>``). :func:`swizzled_offset` applies it. For a tile whose rows are exactly the swizzle's width it is
  chapter 8's swizzle, :func:`gemmlab.models.mma.swizzle_chunk`, which a test checks.
* **Tensor maps.** ``cuTensorMapEncodeTiled`` describes a global tensor (dimensions innermost first, strides in
  bytes) and the box one copy moves. :class:`TensorMap` holds those parameters and :meth:`TensorMap.problems`
  lists the driver's documented requirements they break (CUDA Driver API, "Tensor Map Object Managment"), so
  a bad stride is named in a sentence instead of a bare ``CUDA_ERROR_INVALID_VALUE``.
* **Shared-memory matrix descriptors.** ``wgmma`` takes each shared-memory operand as a 64-bit descriptor (PTX
  ISA, "Matrix Descriptor Format"): start address, leading and stride byte offsets (each stored divided by 16 in
  14 bits), a 3-bit base offset and the swizzle mode in the top two bits. :func:`smem_descriptor` packs one and
  :func:`unpack_descriptor` reads it back.
* **The accumulators.** :func:`wgmma_d_position` says which element of D each register of each thread of the
  warpgroup holds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SWIZZLES = {"none": 0, "32B": 32, "64B": 64, "128B": 128}
"""The swizzle modes of TMA and ``wgmma``, by name, with the width in bytes each one permutes (0: none)."""
SWIZZLE_ATOM_BYTES = 1024
"""The block a swizzle pattern repeats over, 8 lines of 128 bytes (a swizzled tile starts 1024-byte aligned)."""

# ---------------------------------------------------------------------------------------------------
# Swizzled shared memory


def _require_swizzle(swizzle: str) -> None:
    if swizzle not in SWIZZLES:
        raise ValueError(f"swizzle must be one of {', '.join(SWIZZLES)}, got {swizzle!r}")


def swizzled_offset(offset: int, swizzle: str) -> int:
    """Where byte ``offset`` of a tile (counted from a 1024-byte-aligned start) is stored under ``swizzle``:
    its 16-byte chunk index (bits 4 and up, as many bits as the swizzle spans: 3 for 128 bytes, 2 for 64,
    1 for 32) XORed with the 128-byte line index above it (bits 7 and up, the same number of bits)."""
    _require_swizzle(swizzle)
    if offset < 0:
        raise ValueError(f"offsets are non-negative, got {offset}")
    bits = {0: 0, 32: 1, 64: 2, 128: 3}[SWIZZLES[swizzle]]
    mask = (1 << bits) - 1
    return offset ^ (((offset >> 7) & mask) << 4)


def tile_offsets(rows: int, row_bytes: int, swizzle: str) -> list[list[int]]:
    """``[row][chunk]``: where each 16-byte chunk of a ``rows`` x ``row_bytes`` tile lands in shared memory."""
    if row_bytes <= 0 or row_bytes % 16:
        raise ValueError(f"rows must be a positive multiple of 16 bytes, got {row_bytes}")
    return [[swizzled_offset(r * row_bytes + 16 * c, swizzle) for c in range(row_bytes // 16)] for r in range(rows)]


# ---------------------------------------------------------------------------------------------------
# Tensor maps (cuTensorMapEncodeTiled)

DATA_TYPES = {"FP16": (6, 2), "FP32": (7, 4), "BF16": (9, 2), "TF32": (11, 4)}
"""``CUtensorMapDataType`` value and element bytes of the formats the course copies."""
MAX_RANK = 5
MAX_BOX = 256
MAX_ELEMENT_STRIDE = 8
MAX_GLOBAL_DIM = 2**32
MAX_GLOBAL_STRIDE = 2**40
GLOBAL_ALIGNMENT = 16


@dataclass(frozen=True)
class TensorMap:
    """The parameters of one ``cuTensorMapEncodeTiled`` call (interleave none), innermost dimension first.

    ``global_strides`` are in bytes and have one entry fewer than ``global_dims`` (the innermost dimension's
    stride is the element size); ``address`` is the global tensor's start (only its alignment matters here)."""

    dtype: str
    global_dims: tuple[int, ...]
    global_strides: tuple[int, ...]
    box_dims: tuple[int, ...]
    element_strides: tuple[int, ...] | None = None
    swizzle: str = "128B"
    address: int = 0

    @property
    def element_bytes(self) -> int:
        return DATA_TYPES[self.dtype][1]

    @property
    def box_bytes(self) -> int:
        """The bytes one copy writes into shared memory (and the ``mbarrier`` must expect)."""
        n = self.element_bytes
        for d in self.box_dims:
            n *= d
        return n

    def problems(self) -> list[str]:
        """Every documented requirement these parameters break, one sentence each (empty: the driver accepts them)."""
        out = []
        if self.dtype not in DATA_TYPES:
            return [f"dtype must be one of {', '.join(DATA_TYPES)}, got {self.dtype!r}"]
        if self.swizzle not in SWIZZLES:
            return [f"swizzle must be one of {', '.join(SWIZZLES)}, got {self.swizzle!r}"]
        rank = len(self.global_dims)
        strides = self.element_strides or (1,) * rank
        if not 1 <= rank <= MAX_RANK:
            out.append(f"the rank must be 1 to {MAX_RANK}, got {rank}")
        if len(self.global_strides) != rank - 1 or len(self.box_dims) != rank or len(strides) != rank:
            out.append(f"a rank-{rank} map takes {rank - 1} global strides and {rank} box dimensions and element strides")
            return out
        if self.address % GLOBAL_ALIGNMENT:
            out.append(f"the global address must be {GLOBAL_ALIGNMENT}-byte aligned, it is {self.address % GLOBAL_ALIGNMENT} bytes off")
        for i, d in enumerate(self.global_dims):
            if not 0 < d <= MAX_GLOBAL_DIM:
                out.append(f"global dimension {i} must be 1 to 2^32, got {d}")
        for i, s in enumerate(self.global_strides):
            if s % 16 or not 0 < s < MAX_GLOBAL_STRIDE:
                out.append(f"global stride {i + 1} must be a positive multiple of 16 bytes below 2^40, got {s} "
                           "(a row of a row-major matrix must be a multiple of 16 bytes long)")
        for i, b in enumerate(self.box_dims):
            if not 0 < b <= MAX_BOX:
                out.append(f"box dimension {i} must be 1 to {MAX_BOX}, got {b}")
        for i, e in enumerate(strides):
            if not 0 < e <= MAX_ELEMENT_STRIDE:
                out.append(f"element stride {i} must be 1 to {MAX_ELEMENT_STRIDE}, got {e}")
        inner = self.box_dims[0] * self.element_bytes
        if inner % 16:
            out.append(f"the box's inner dimension must span a multiple of 16 bytes, it spans {inner}")
        width = SWIZZLES[self.swizzle]
        if width and inner > width:
            out.append(f"with the {self.swizzle} swizzle the box's inner dimension may span at most {width} bytes, "
                       f"it spans {inner}")
        return out


def matrix_map(rows: int, cols: int, dtype: str, box_rows: int, box_cols: int, swizzle: str = "128B",
               row_stride_bytes: int | None = None, address: int = 0) -> TensorMap:
    """The tensor map of a row-major ``rows`` x ``cols`` matrix (rows ``row_stride_bytes`` apart, by default
    packed), copied ``box_rows`` x ``box_cols`` at a time: TMA names the innermost dimension (the columns) first."""
    if dtype not in DATA_TYPES:
        raise ValueError(f"dtype must be one of {', '.join(DATA_TYPES)}, got {dtype!r}")
    stride = cols * DATA_TYPES[dtype][1] if row_stride_bytes is None else row_stride_bytes
    return TensorMap(dtype, (cols, rows), (stride,), (box_cols, box_rows), swizzle=swizzle, address=address)


# ---------------------------------------------------------------------------------------------------
# wgmma shared-memory matrix descriptors

DESCRIPTOR_SWIZZLE = {"none": 0, "128B": 1, "64B": 2, "32B": 3}
"""The 2-bit swizzle field (bits 62-63) of a ``wgmma`` descriptor."""
_FIELD = (1 << 14) - 1


def _field(name: str, value: int) -> int:
    if value < 0 or value % 16 or value >> 4 > _FIELD:
        raise ValueError(f"{name} must be a multiple of 16 bytes from 0 to {16 * _FIELD:,}, got {value}")
    return value >> 4


def smem_descriptor(address: int, leading_byte_offset: int, stride_byte_offset: int, swizzle: str = "128B",
                    base_offset: int = 0) -> int:
    """The 64-bit ``wgmma`` descriptor of a shared-memory operand at byte ``address`` (its shared-window address):
    bits 0-13 the address / 16, 16-29 the leading byte offset / 16, 32-45 the stride byte offset / 16, 49-51 the
    base offset, 62-63 the swizzle mode."""
    if swizzle not in DESCRIPTOR_SWIZZLE:
        raise ValueError(f"swizzle must be one of {', '.join(DESCRIPTOR_SWIZZLE)}, got {swizzle!r}")
    if not 0 <= base_offset < 8:
        raise ValueError(f"the base offset is 3 bits, got {base_offset}")
    return (_field("the address", address) | _field("the leading byte offset", leading_byte_offset) << 16
            | _field("the stride byte offset", stride_byte_offset) << 32 | base_offset << 49
            | DESCRIPTOR_SWIZZLE[swizzle] << 62)


def unpack_descriptor(desc: int) -> dict:
    """The fields of a ``wgmma`` descriptor, in bytes where they are offsets."""
    if not 0 <= desc < 2**64:
        raise ValueError(f"a descriptor is 64 bits, got {desc}")
    names = {v: k for k, v in DESCRIPTOR_SWIZZLE.items()}
    return {"address": (desc & _FIELD) << 4, "leading_byte_offset": (desc >> 16 & _FIELD) << 4,
            "stride_byte_offset": (desc >> 32 & _FIELD) << 4, "base_offset": desc >> 49 & 7,
            "swizzle": names[desc >> 62 & 3]}


def box_image(matrix: np.ndarray, box_rows: int, box_cols: int, swizzle: str = "128B", x: int = 0,
              y: int = 0) -> np.ndarray:
    """What the copy engine writes into shared memory for the ``box_rows`` x ``box_cols`` box whose first element
    is column ``x``, row ``y`` of the row-major ``matrix`` (any NumPy dtype): the box's rows packed one after the
    other, elements outside the matrix as zeros, every 16-byte chunk moved by :func:`swizzled_offset`. Bytes
    (``uint8``), the model that ``kernels/09_hopper.cu`` is checked against."""
    M = np.asarray(matrix)
    rows, cols = M.shape
    box = np.zeros((box_rows, box_cols), M.dtype)
    r1, c1 = min(rows, y + box_rows), min(cols, x + box_cols)
    if y < rows and x < cols:
        box[: r1 - y, : c1 - x] = M[y:r1, x:c1]
    plain = box.view(np.uint8).ravel()
    image = np.zeros_like(plain)
    for start in range(0, plain.size, 16):
        dst = swizzled_offset(start, swizzle)
        image[dst:dst + 16] = plain[start:start + 16]
    return image


# ---------------------------------------------------------------------------------------------------
# wgmma's accumulators

WARPGROUP = 128
"""Threads of a warpgroup, the four consecutive warps that issue a ``wgmma`` together."""


def wgmma_d_position(thread: int, register: int, n: int = 64) -> tuple[int, int]:
    """(row, column) of the 64 x ``n`` FP32 accumulator D that register ``register`` of warpgroup thread ``thread``
    holds after ``wgmma.mma_async.m64n<n>k16``: warp w of the group owns rows 16w to 16w + 15, and within them each
    8 columns are laid out as ``mma.sync``'s C (chapter 8): register 4j + e of lane l is row l // 4 + 8 (e // 2),
    column 8j + 2 (l % 4) + e % 2 (PTX ISA, "Register Fragments and Shared Memory Matrix Layouts" for wgmma)."""
    if not 0 <= thread < WARPGROUP:
        raise ValueError(f"a warpgroup has threads 0..{WARPGROUP - 1}, got {thread}")
    if n % 8 or not 8 <= n <= 256:
        raise ValueError(f"n must be a multiple of 8 from 8 to 256, got {n}")
    if not 0 <= register < n // 2:
        raise ValueError(f"m64n{n} leaves {n // 2} accumulators per thread, got register {register}")
    warp, lane = divmod(thread, 32)
    j, e = divmod(register, 4)
    return 16 * warp + lane // 4 + 8 * (e // 2), 8 * j + 2 * (lane % 4) + e % 2
