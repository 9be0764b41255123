"""GPU tests: marked ``gpu``, and skipped, with the reason, where there is no usable GPU, PyCUDA or nvcc."""

import pytest

from gemmlab import gpu


def pytest_collection_modifyitems(config, items):
    ours = [item for item in items if "tests/gpu/" in item.nodeid.replace("\\", "/")]
    for item in ours:
        item.add_marker(pytest.mark.gpu)
    reason = gpu.unavailable_reason()
    if reason is not None:
        skip = pytest.mark.skip(reason=f"GPU test: {reason}")
        for item in ours:
            item.add_marker(skip)


@pytest.fixture
def dirty_memory():
    """Device memory that held NaNs just before: a kernel (or a tensor map) that reads past its operands then
    meets NaN instead of the zeros of fresh memory, and fails."""
    import numpy as np
    from pycuda import gpuarray

    junk = gpuarray.empty(1 << 24, np.float32)
    junk.fill(np.float32(np.nan))
    del junk
