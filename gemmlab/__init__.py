"""gemmlab: the Python side of the course "Shared memory and matrix multiplication".

Its subpackages, by concern (bottom first; each imports only from those below it, as the import-linter contracts in
``pyproject.toml`` say and a CPU test checks):

- :mod:`gemmlab.models`: pure Python and NumPy, no GPU: the models the chapters measure against (traffic, banks,
  occupancy, fragments and swizzles, tensor maps, waves and splits), the float64 reference, plain-text tables.
- :mod:`gemmlab.runtime`: finding PyCUDA, the driver and the GPU; compiling, launching through the driver, timing,
  the watchdog for code that may hang.
- :mod:`gemmlab.gemm`: each kernel family's configurations and launchers, and the registry of every kernel by name.
- :mod:`gemmlab.measure`: the bench and its JSON, ceilings, probes, tuning, counters, the exercise checks.
- :mod:`gemmlab.book`: figures, source listings and the explorer pages (on the runtime and the models only).

``python -m gemmlab`` sits on top of them all.
"""

from .gemm.registry import kernels, lookup
from .runtime.gpu import GPUUnavailable

__all__ = ["GPUUnavailable", "kernels", "lookup"]
__version__ = "0.3.0"
