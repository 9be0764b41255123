"""gemmlab: the Python side of the course "Shared memory and matrix multiplication".

The package is layered: each module imports only modules of its own layer or of the layers below
(:data:`LAYERS`, bottom first; a CPU test walks every import and fails on a cycle or an import that
goes up). The bottom layer needs no GPU, so the CPU tests, the explorers and the figures run anywhere.

1. **No GPU**: :mod:`~gemmlab.limits` (CUDA limits, once), :mod:`~gemmlab.models` (global-memory
   traffic, intensity, roofline), :mod:`~gemmlab.banks` (the bank model), :mod:`~gemmlab.occupancy`
   (the calculator), :mod:`~gemmlab.verify` (the float64 reference), :mod:`~gemmlab.fast_configs`
   (chapter 7's configurations), :mod:`~gemmlab.tc_configs` (chapter 8's), :mod:`~gemmlab.shapes` (waves and split-K, chapter 7),
   :mod:`~gemmlab.mma` (tensor-core fragments, ``ldmatrix`` and the swizzle, for chapter 8),
   :mod:`~gemmlab.hopper` (the copy engine's swizzles, tensor maps and ``wgmma`` descriptors, for chapter 9),
   :mod:`~gemmlab.streamk` (chapter 9's stream-K split and the order its parts meet in),
   :mod:`~gemmlab.tail` (chapter 8's shared last wave: when, and who computes which K-tiles),
   :mod:`~gemmlab.provenance`, :mod:`~gemmlab.source`, :mod:`~gemmlab.tables`, :mod:`~gemmlab.figures`,
   :mod:`~gemmlab.workbench`, :mod:`~gemmlab.explorer_html` (the explorer pages' HTML),
   :mod:`~gemmlab.bank_explorer` (the Bank Conflict Explorer page),
   :mod:`~gemmlab.barriers` (the static barrier check),
   :mod:`~gemmlab.watchdog` (child processes under a timeout) and
   :mod:`~gemmlab.colab` (installing PyCUDA in the chapters' Colab setup cell).
2. **Finding PyCUDA, the driver and a GPU**: :mod:`~gemmlab.gpu`.
3. **Compiling and timing**: :mod:`~gemmlab.compiler`, :mod:`~gemmlab.timing`.
4. **The device and its software**: :mod:`~gemmlab.device` (limits and ceilings),
   :mod:`~gemmlab.environment` (GPU, driver, toolkit and package versions), :mod:`~gemmlab.budget`
   (problem sizes scaled so that no cell takes much over two minutes on a T4),
   :mod:`~gemmlab.occupancy_explorer` (the Occupancy Calculator page).
5. **Launching**: :mod:`~gemmlab.tensor_maps` (tensor maps for Hopper's copy engine, encoded by the driver),
   :mod:`~gemmlab.compile_units` (what nvcc gets for each file), :mod:`~gemmlab.checks` (inputs), :mod:`~gemmlab.gemm` (the GEMM kernel class),
   :mod:`~gemmlab.tensor_gemm` (the tensor-core kernels: FP16, BF16 and TF32 inputs),
   :mod:`~gemmlab.probes` (the kernels that are not GEMMs), :mod:`~gemmlab.tma` (chapter 9's GEMMs), :mod:`~gemmlab.tc_tma` (chapter 8's Hopper step, ``mma.sync`` fed by that
   engine).
6. **Every kernel by name**: :mod:`~gemmlab.registry`.
7. **Measuring**: :mod:`~gemmlab.bench` (the ladder), :mod:`~gemmlab.precisions` (cuBLAS with tensor
   cores: TF32, FP16, BF16), :mod:`~gemmlab.ceilings`, :mod:`~gemmlab.tuning`,
   :mod:`~gemmlab.nsight` (counters), :mod:`~gemmlab.driver` (the driver's occupancy),
   :mod:`~gemmlab.exercises` (checking a reader's kernel).
8. **The command line**: ``python -m gemmlab``.
"""

from .gpu import GPUUnavailable
from .registry import kernels, lookup

__all__ = ["GPUUnavailable", "LAYERS", "kernels", "lookup"]
__version__ = "0.3.0"

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("no GPU", ("limits", "models", "banks", "occupancy", "verify", "fast_configs", "tc_configs", "shapes", "mma", "hopper", "streamk", "tail",
                "provenance", "source", "tables", "figures", "workbench", "explorer_html", "bank_explorer", "barriers",
                "watchdog", "colab")),
    ("finding PyCUDA, the driver and a GPU", ("gpu",)),
    ("compiling and timing", ("compiler", "timing")),
    ("the device and its software", ("device", "environment", "budget", "occupancy_explorer")),
    ("launching", ("tensor_maps", "compile_units", "checks", "gemm", "tensor_gemm", "probes", "tma", "tc_tma")),
    ("every kernel by name", ("registry",)),
    ("measuring", ("bench", "precisions", "ceilings", "tuning", "nsight", "driver", "exercises")),
    ("the command line", ("__main__",)),
)
"""The layers, bottom first, each a pair of what the layer does and its modules."""
