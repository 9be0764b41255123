"""gemmlab.tma on a Hopper GPU: the driver encodes exactly the tensor maps that gemmlab.hopper's rules accept
(each rule broken once, and valid maps of every swizzle and format), and a valid map is 128 bytes. On an older
GPU every call says, in one sentence, that tensor maps need Hopper."""

import numpy as np
import pytest

from gemmlab import device, gpu, hopper, tma

CASES = [
    dict(rows=4096, cols=4096, dtype="BF16", box_rows=128, box_cols=64),
    dict(rows=4096, cols=4096, dtype="FP16", box_rows=256, box_cols=64),
    dict(rows=300, cols=520, dtype="FP16", box_rows=64, box_cols=32, swizzle="64B"),
    dict(rows=300, cols=520, dtype="FP32", box_rows=64, box_cols=8, swizzle="32B"),
    dict(rows=300, cols=520, dtype="TF32", box_rows=64, box_cols=32),
    dict(rows=64, cols=64, dtype="FP16", box_rows=64, box_cols=64, swizzle="none"),
    dict(rows=100, cols=1234, dtype="FP16", box_rows=64, box_cols=64),                       # row stride 2468 B
    dict(rows=100, cols=1024, dtype="FP16", box_rows=300, box_cols=64),                      # box > 256
    dict(rows=100, cols=1024, dtype="FP16", box_rows=64, box_cols=128),                      # 256 B > 128B swizzle
    dict(rows=100, cols=1024, dtype="FP16", box_rows=64, box_cols=4, swizzle="none"),        # 8-byte inner box
    dict(rows=100, cols=1024, dtype="FP16", box_rows=64, box_cols=64, address=8),            # misaligned start
]


@pytest.fixture(scope="module")
def hopper_gpu():
    gpu.cuda()
    if tuple(device.current().compute_capability) < (9, 0):
        pytest.skip("tensor maps need a Hopper GPU (compute capability 9.0)")


@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, (c["rows"], c["cols"], c["box_rows"], c["box_cols"])))
                         + f"-{c['dtype']}-{c.get('swizzle', '128B')}-{c.get('address', 0)}")
def test_the_driver_agrees_with_the_rules(case, hopper_gpu):
    from pycuda import gpuarray

    buf = gpuarray.zeros(4 * 4096 * 4096 + 64, np.uint8)
    m = hopper.matrix_map(**case)
    address = int(buf.gpudata) + m.address
    assert tma.driver_accepts(m, address) == (m.problems() == []), m.problems()
    if not m.problems():
        assert len(tma.encode(m, address)) == tma.TENSOR_MAP_BYTES


def test_older_gpus_are_told_in_one_sentence():
    gpu.cuda()
    if tuple(device.current().compute_capability) >= (9, 0):
        pytest.skip("this GPU has tensor maps")
    with pytest.raises(gpu.GPUUnavailable, match="tensor maps need compute capability 9.0"):
        tma.encode(hopper.matrix_map(64, 64, "FP16", 64, 64), 0)
