"""gemmlab: the Python side of the course "Shared memory and matrix multiplication".

Layers, bottom up (each imports only what is below it): :mod:`~gemmlab.gpu` (finding PyCUDA
and a device), :mod:`~gemmlab.compile` and :mod:`~gemmlab.timing`, :mod:`~gemmlab.device`,
:mod:`~gemmlab.launch`, :mod:`~gemmlab.bench`, and the command line (``python -m gemmlab``).
:mod:`~gemmlab.models`, :mod:`~gemmlab.verify`, :mod:`~gemmlab.provenance`,
:mod:`~gemmlab.tables`, :mod:`~gemmlab.source` and :mod:`~gemmlab.figures` need no GPU.
"""

from .gpu import GPUUnavailable
from .launch import kernels

__all__ = ["GPUUnavailable", "kernels"]
__version__ = "0.1.0"
