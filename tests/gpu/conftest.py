"""GPU tests: skipped, with the reason, where there is no usable GPU, PyCUDA or nvcc."""

import pytest

from gemmlab import gpu


def pytest_collection_modifyitems(config, items):
    reason = gpu.unavailable_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"GPU test: {reason}")
    for item in items:
        if "tests/gpu/" in item.nodeid.replace("\\", "/"):
            item.add_marker(skip)
