"""The tensor-core fragment model (gemmlab.models.mma) against the GPU, through kernels/08_mma_probe.cu.

* mma.sync: each lane's registers are filled as the model says it holds A, B and C, and D is read back
  where the model says it sits. Only the right layout gives D = A·B + C (small integers: exact in every
  type). That is all a layout can mean to the instruction: rows and columns are named through the product.
* ldmatrix: a shared-memory tile whose entries are their own indices, plain or swizzled, is loaded with
  the row addresses the model gives each lane; the registers then say which element each lane received.
* both together: A and B loaded by ldmatrix as gemmlab.models.mma.LDMATRIX_LOADS says, straight into mma.sync.

On a GPU older than sm_80 (or with GEMMLAB_ARCH=compute_75) the sm_80 forms must write the sentinel.
Run alone with ``python3 -m pytest tests/gpu/test_mma_probe.py`` on a machine with a GPU.
"""

import numpy as np
import pytest

from gemmlab.gemm import units
from gemmlab.measure import probes
from gemmlab.models import mma
from gemmlab.runtime import compiler, gpu

IDS = [f"{i.shape}-{i.dtype}" for i in mma.INSTRUCTIONS]


@pytest.fixture(scope="module")
def arch() -> int:
    """The architecture the probe is compiled for (75 where GEMMLAB_ARCH=compute_75 on a newer GPU)."""
    return probes._arch_number(units.load(probes.MMA_PROBES, quiet=True).arch)


def operands(ins, seed):
    """Small integers (|A|, |B| <= 3, |C| <= 8): exact in FP16, BF16 and TF32, and so is every sum."""
    rng = np.random.default_rng(seed)
    return [rng.integers(-lim, lim + 1, ins.dims(op)).astype(np.float32) for op, lim in (("A", 3), ("B", 3), ("C", 8))]


def indices(words: np.ndarray) -> np.ndarray:
    """The 16-bit values of ldmatrix's registers, element 2j + h = half h of register j: ``[lane][element]``."""
    return np.stack([words & 0xFFFF, words >> 16], axis=-1).reshape(words.shape[0], -1)


@pytest.mark.parametrize("ins", mma.INSTRUCTIONS, ids=IDS)
def test_the_model_layout_gives_the_product(ins, arch):
    A, B, C = operands(ins, seed=ins.mnk[2])
    if arch < ins.sm:
        a = mma.pack(mma.lane_values(A, ins.shape, ins.dtype, "A"), ins.dtype)
        b = mma.pack(mma.lane_values(B, ins.shape, ins.dtype, "B"), ins.dtype)
        d = probes.mma_registers(ins.shape, ins.dtype, a, b, mma.lane_values(C, ins.shape, ins.dtype, "C"))
        assert (d == probes.SENTINEL).all(), f"{ins.ptx} compiled for sm_{arch} must write the sentinel"
        with pytest.raises(gpu.GPUUnavailable, match=f"needs sm_{ins.sm}"):
            probes.mma_product(A, B, C, ins.shape, ins.dtype)
        return
    for seed in range(3):
        A, B, C = operands(ins, seed)
        D = probes.mma_product(A, B, C, ins.shape, ins.dtype)
        assert np.array_equal(D, A.astype(np.float64) @ B + C), f"{ins.ptx}, seed {seed}"


@pytest.mark.parametrize("ins", mma.INSTRUCTIONS, ids=IDS)
def test_a_wrong_layout_gives_a_wrong_product(ins, arch):
    """The check has teeth: the same run with A's last two elements of every lane swapped (a layout one
    detail off the ISA's) does not give the product."""
    if arch < ins.sm:
        pytest.skip(f"{ins.ptx} needs sm_{ins.sm}; the probe is compiled for sm_{arch}")
    A, B, C = operands(ins, seed=11)
    wrong = mma.lane_values(A, ins.shape, ins.dtype, "A")[:, list(range(ins.elements("A") - 2)) + [-1, -2]]
    d = probes.mma_registers(ins.shape, ins.dtype, mma.pack(wrong, ins.dtype),
                             mma.pack(mma.lane_values(B, ins.shape, ins.dtype, "B"), ins.dtype),
                             mma.lane_values(C, ins.shape, ins.dtype, "C"))
    D = mma.from_lanes(mma.unpack(d, "f32"), ins.shape, ins.dtype, "C")
    assert not np.array_equal(D, A.astype(np.float64) @ B + C)


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True], ids=["", "trans"])
@pytest.mark.parametrize("row_bytes", [32, 64, 128])
@pytest.mark.parametrize("swizzle", [False, True], ids=["plain", "swizzled"])
def test_ldmatrix_delivers_what_the_model_says(num, trans, row_bytes, swizzle):
    """A 16-row tile whose 16-bit entries are their indices; matrices at the A load's origins (x4), or the
    first one or two of them."""
    cols = row_bytes // 2
    tile = np.arange(16 * cols, dtype=np.uint16).reshape(16, cols)
    origins = mma.LDMATRIX_LOADS["m16n8k16", "A"][0][:num]
    shifted = tuple((r, c + 8) for r, c in origins)
    if all(c + 8 <= cols for _, c in shifted):                          # off chunk 0 where the row has room
        origins = shifted
    words = probes.ldmatrix_registers(mma.shared_image(tile, row_bytes, swizzle),
                                      mma.ldmatrix_addresses(origins, row_bytes, swizzle), num, trans)
    got = [[divmod(int(i), cols) for i in lane] for lane in indices(words)]
    assert got == mma.ldmatrix_tile_fragment(origins, trans)


@pytest.mark.parametrize("shape", ["m16n8k16", "m16n8k8"])
def test_ldmatrix_feeds_mma(shape, arch):
    """A (M x K) and B (K x N) stored row-major in shared memory, A swizzled, loaded by ldmatrix as
    LDMATRIX_LOADS says, multiplied by mma.sync .f16: the product, with no layout code on the way."""
    ins = mma.instruction(shape, "f16")
    if arch < ins.sm:
        pytest.skip(f"{ins.ptx} needs sm_{ins.sm}; the probe is compiled for sm_{arch}")
    A, B, _ = operands(ins, seed=5)
    regs = {}
    for name, X in (("A", A), ("B", B)):
        origins, trans = mma.LDMATRIX_LOADS[shape, name]
        row_bytes = 2 * X.shape[1]
        image = mma.shared_image(X.astype(np.float16).view(np.uint16), row_bytes, swizzle=name == "A")
        regs[name] = probes.ldmatrix_registers(image, mma.ldmatrix_addresses(origins, row_bytes, name == "A"),
                                               len(origins), trans)
    d = probes.mma_registers(shape, "f16", regs["A"], regs["B"], np.zeros((32, 4), np.float32))
    assert np.array_equal(mma.from_lanes(mma.unpack(d, "f32"), shape, "f16", "C"), A.astype(np.float64) @ B)
