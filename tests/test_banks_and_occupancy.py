"""The shared-memory bank model on known patterns, and the occupancy calculator on published limits."""

import pytest

from gemmlab import device, models

LANES = range(32)


@pytest.mark.parametrize("stride,wavefronts", [(1, 1), (2, 2), (4, 4), (3, 1), (32, 32), (33, 1), (16, 16), (0, 1)])
def test_strided_float_accesses(stride, wavefronts):
    assert models.bank_access([4 * stride * lane for lane in LANES]).wavefronts == wavefronts


def test_broadcast_and_multicast():
    assert models.bank_access([128] * 32).wavefronts == 1                               # one word, every lane
    assert models.bank_access([4 * (lane % 4) for lane in LANES]).wavefronts == 1      # four words, 8 lanes each
    assert models.bank_access([0, 128, 0, 128]).wavefronts == 2                         # two words of bank 0


def test_tiled_kernel_reads_are_conflict_free():
    """As[ty][k] (same row and k for a warp of 32 x-neighbours: broadcast) and Bs[k][tx] (one row)."""
    T, ty, k = 32, 5, 7
    As = models.array_addresses([ty] * 32, [k] * 32, T)
    Bs = models.array_addresses([k] * 32, list(LANES), T, base=4 * T * T)
    assert models.bank_access(As).wavefronts == 1 and models.bank_access(Bs).wavefronts == 1


def test_column_reads_conflict_and_padding_fixes_them():
    column = models.array_addresses(list(LANES), [3] * 32, 32)          # Bs[tx][k]: a column of a 32x32 tile
    padded = models.array_addresses(list(LANES), [3] * 32, 33)          # the same with [32][33]
    assert models.bank_access(column).wavefronts == 32
    assert models.bank_access(padded).wavefronts == 1
    assert models.bank_access(column).extra_wavefronts == 31


def test_bank_model_limits():
    with pytest.raises(ValueError, match="4-byte accesses"):
        models.bank_access([0], word_bytes=8)
    with pytest.raises(ValueError, match="32 lanes"):
        models.bank_access(range(0, 4 * 33, 4))


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
])
def test_occupancy_on_published_cases(spec, threads, regs, smem, blocks, binding):
    o = models.occupancy(spec, threads, regs, smem)
    assert o.blocks_per_sm == blocks
    assert set(o.binding) == binding
    assert o.warps_per_sm == blocks * -(-threads // 32)


def test_occupancy_fraction_and_errors():
    assert models.occupancy(device.H200, 1024, 31, 8192).occupancy == 1.0
    assert models.occupancy(device.H200, 256, 128, 0).occupancy == 0.25
    with pytest.raises(ValueError, match="between 1 and 1024"):
        models.occupancy(device.H200, 2048, 32)
    with pytest.raises(ValueError, match="exceed this device's maximum"):
        models.occupancy(device.T4, 128, 32, 65 * 1024)
    with pytest.raises(ValueError, match="registers a block may use"):
        models.occupancy(device.T4, 1024, 255)
