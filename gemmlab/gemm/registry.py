"""Every GEMM kernel of the course by name: the one place a kernel is added.

- :func:`kernels`: the course ladder, one kernel per step, in chapter order (what the chapters, the
  bench and the GPU tests call ``gemmlab.kernels()``).
- :data:`VARIANTS`: teaching variants, each one change away from a course kernel (chapters 4 and 6).
- :data:`CANDIDATES`: correct kernels that chapters 6-7 measure but the ladder leaves out.
- :data:`EARLY_RETURN`: chapter 3's kernel, wrong on purpose.
- every configuration of ``07_fast.cu`` (:data:`gemmlab.gemm.fast_configs.CONFIGS`), by its entry point's name.
- :func:`tensor_kernels`: chapter 8's ladder for one input format (FP16, BF16, TF32), and every configuration of
  ``08_tensor_core.cu`` by its entry point's name; :func:`tma_kernels`, its last step on a Hopper GPU (FP16, BF16).

:func:`lookup` finds any of them by name; :func:`correct_kernels` lists each correct kernel once, for the
GPU tests. Needs no GPU to list; calling a kernel compiles its file on first use.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import SupportsInt, TypeVar, overload

import numpy as np

from ..models import occupancy, shapes
from ..runtime import device
from . import fast_configs, tc_configs, tensor_cores, units
from .base import DeviceProblem, GemmKernel
from .fast_configs import FastConfig


def fast_kernel(config: FastConfig, name: str | None = None, summary: str | None = None) -> GemmKernel:
    """The kernel of one ``07_fast.cu`` configuration: the course's compile unit for the configurations in
    :data:`~gemmlab.gemm.fast_configs.CONFIGS`, a unit of its own for any other (a reader's, checked by
    :meth:`~gemmlab.gemm.fast_configs.FastConfig.validate` there), compiled on first use."""
    source = fast_configs.SOURCE if config in fast_configs.CONFIGS else units.unit(fast_configs.SOURCE, [config])
    return GemmKernel(name or config.function, 7, source, config.function, (config.THREADS, 1, 1), (config.BM, config.BN),
                      summary or config.label, config.SPLITK)


_CHOSEN: dict[tuple, GemmKernel] = {}


@dataclass(frozen=True)
class SizeAwareKernel(GemmKernel):
    """A ``07_fast.cu`` configuration whose K is split per shape, as :func:`gemmlab.models.shapes.choose_split`
    decides from this GPU's SMs and the blocks per SM the compiled kernel gets: what a library does when
    it picks a kernel per shape, with the course's own configurations. Its block, tile and entry point
    are the unsplit configuration's."""

    config: FastConfig = fast_configs.FAST

    def split(self, M: int, N: int, K: int) -> int:
        spec = device.current()
        res = self.resources()
        per_sm = occupancy.calculate(spec, self.config.THREADS, res.registers, res.shared_bytes).blocks_per_sm
        return shapes.choose_split(M, N, K, self.tile, self.config.BK, max(per_sm, 1), spec.sms)

    def for_shape(self, M: int, N: int, K: int) -> GemmKernel:
        """The configuration that runs at M x N x K (a plain kernel: the split is fixed in it). Remembered
        per shape: a timing loop must not pay the choice again at every launch (at 1024^3 the kernel
        takes about 55 microseconds, less than Python needs to choose)."""
        key = (self.config, M, N, K)
        if key not in _CHOSEN:
            _CHOSEN[key] = fast_kernel(replace(self.config, SPLITK=self.split(M, N, K)))
        return _CHOSEN[key]

    def on_device(self, A: np.ndarray, B: np.ndarray, extra_shared: int = 0) -> DeviceProblem:
        M, N, K = self.check(A, B, device.current(), device.free_memory(), extra_shared)
        return self.for_shape(M, N, K).on_device(A, B, extra_shared)

    def launch(self, a_ptr: SupportsInt, b_ptr: SupportsInt, c_ptr: SupportsInt, M: int, N: int, K: int,
               extra_shared: int = 0) -> None:
        self.for_shape(M, N, K).launch(a_ptr, b_ptr, c_ptr, M, N, K, extra_shared)


def size_aware(config: FastConfig, name: str, summary: str) -> SizeAwareKernel:
    return SizeAwareKernel(name, 7, fast_configs.SOURCE, config.function, (config.THREADS, 1, 1), (config.BM, config.BN),
                           summary, 1, config)


COURSE: tuple[GemmKernel, ...] = (
    GemmKernel("naive", 1, "01_naive.cu", "gemm_naive", (32, 32, 1), (32, 32),
               "one thread per element of C, operands from global memory"),
    GemmKernel("tiled32", 2, "02_tiled.cu", "gemm_tiled_32", (32, 32, 1), (32, 32),
               "32x32 tiles of A and B staged in shared memory"),
    GemmKernel("tiled16", 2, "02_tiled.cu", "gemm_tiled_16", (16, 16, 1), (16, 16),
               "16x16 shared-memory tiles"),
    GemmKernel("tiled8", 2, "02_tiled.cu", "gemm_tiled_8", (8, 8, 1), (8, 8),
               "8x8 shared-memory tiles"),
    GemmKernel("regtile1d", 6, "06_register_tiling.cu", "gemm_regtile_1d", (512, 1, 1), (64, 64),
               "64x64 block tile, 8 rows of C per thread (1D register tiling)"),
    GemmKernel("regtile2d", 6, "06_register_tiling.cu", "gemm_regtile_2d", (256, 1, 1), (128, 128),
               "128x128 block tile, an 8x8 outer product per thread (2D register tiling)"),
    GemmKernel("regtile2d_t", 6, "06_register_tiling_2d.cu", "gemm_regtile_2d_t", (256, 1, 1), (128, 128),
               "2D register tiling with a transposed A tile, conflict-free float4 reads and unrolled tile loads"),
    GemmKernel("regtile2d_t_k16", 6, "06_register_tiling_2d.cu", "gemm_regtile_2d_t_k16", (256, 1, 1), (128, 128),
               "the same with a K-tile of 16"),
    fast_kernel(fast_configs.FAST, "fast",
                "float4 loads, double buffering, warp tiling: 128x128x16, warps of 32x64, 8x8 per thread"),
    size_aware(fast_configs.FAST, "fast_auto",
               "the fast kernel with K split where its tiles fill less than one wave of the GPU (gemmlab.models.shapes)"),
)
"""The course ladder, in chapter order."""

CANDIDATES: tuple[GemmKernel, ...] = (
    GemmKernel("regtile2d_t_k32", 6, "06_register_tiling_2d.cu", "gemm_regtile_2d_t_k32", (256, 1, 1), (128, 128),
               "2D register tiling (transposed A) with a K-tile of 32"),
    fast_kernel(fast_configs.config("gemm_fast_128x128x16_32x64_8x8_async"), "fast_async",
                "the fast kernel with cp.async copies into the second stage"),
)
"""Correct kernels that chapters 6-7 measure next to the course kernels but the ladder leaves out."""

VARIANTS: tuple[GemmKernel, ...] = (
    GemmKernel("naive_column", 1, "01_naive.cu", "gemm_naive_column", (32, 32, 1), (32, 32),
               "the naive kernel with threadIdx.x running down a column of C: a warp's loads of A are 32 rows apart"),
    GemmKernel("banks_transposed", 4, "04_banks.cu", "gemm_banks_transposed_32", (32, 32, 1), (32, 32),
               "the 32x32 tiled kernel with the B tile stored transposed: column reads, 32-way bank conflicts"),
    GemmKernel("banks_padded", 4, "04_banks.cu", "gemm_banks_padded_32", (32, 32, 1), (32, 32),
               "the transposed B tile with one column of padding ([32][33]): conflict-free again"),
    GemmKernel("regtile2d_t_strided", 6, "06_register_tiling_2d.cu", "gemm_regtile_2d_t_strided", (256, 1, 1), (128, 128),
               "regtile2d_t with tile loads in loops the compiler cannot count (i = tid, tid + 256, ...)"),
)
"""The teaching variants of chapters 1, 4 and 6, each correct and one change away from a course kernel, to show what that change costs."""

EARLY_RETURN = GemmKernel("early_return", 3, "03_early_return.cu", "gemm_tiled_early_return_32", (32, 32, 1), (32, 32),
                          "the 32x32 tiled kernel with an early return before __syncthreads(): wrong when 32 does not divide M or N")
"""Chapter 3's kernel, wrong on purpose, the tiled kernel with an early return before its barriers."""


TENSOR_STEPS: tuple[tuple[str, tc_configs.TcConfig | None, str], ...] = (
    ("tc_wmma", None, "WMMA 16x16x16 fragments from plain shared-memory tiles"),
    ("tc_mma", tc_configs.MMA, "mma.sync fed by ldmatrix, 128x128x32 blocks, warps of 64x64"),
    ("tc_swizzle", tc_configs.SWIZZLE, "+ the XOR swizzle: ldmatrix and tile stores free of bank conflicts"),
    ("tc_async", tc_configs.ASYNC, "+ cp.async copies (two stages)"),
    ("tc_stages", tc_configs.STAGES, "+ four stages in the ring"),
    ("tc_prefetch", tc_configs.PREFETCH, "+ the next k-step's fragments loaded during this one's mma"),
    ("tc_wide", tc_configs.WIDE, "+ 128x256 blocks (8 warps of 64x64)"),
    ("tc_inner", tc_configs.INNER, "+ tiles inside the matrices copied without bounds checks"),
    ("tc_tail", tc_configs.TAIL, "+ a last wave under 60% full shared out over every SM (stream-K)"),
)
"""Chapter 8's ladder for FP16 and BF16 inputs, as triples of a name, a configuration (None for the WMMA
kernel) and what the step adds."""

TF32_STEPS: tuple[tuple[str, tc_configs.TcConfig, str], ...] = (
    ("tc_prefetch", tc_configs.TF32_PREFETCH, "TF32 mma.sync m16n8k8, 128x128x16 blocks, four stages, prefetched fragments"),
    ("tc_wide", tc_configs.TF32_WIDE, "+ 128x256 blocks"),
    ("tc_inner", tc_configs.TF32_INNER, "+ tiles inside the matrices copied without bounds checks"),
    ("tc_tail", tc_configs.TF32_TAIL, "+ a last wave under 60% full shared out over every SM (stream-K)"),
)
"""Chapter 8's kernels for TF32 inputs, the last four steps of the ladder (with B's transpose in shared memory)."""


def tensor_kernels(precision: str) -> dict[str, tensor_cores.TensorGemmKernel]:
    """Chapter 8's ladder for one input format, in order: ``{name: kernel}``, each name ending in the format's
    suffix (``tc_prefetch_f16``); what ``python -m gemmlab bench --precision`` runs."""
    if precision not in tensor_cores.PRECISIONS:
        raise ValueError(f"the tensor-core kernels take {', '.join(tensor_cores.PRECISIONS)} inputs, got {precision!r}")
    suffix = tensor_cores.PRECISIONS[precision]
    steps = TF32_STEPS if precision == "TF32" else TENSOR_STEPS
    out = {}
    for step, config, summary in steps:
        name = f"{step}_{suffix}"
        k = tensor_cores.wmma_kernel(precision) if config is None else tensor_cores.mma_kernel(config, precision, name)
        out[name] = replace(k, name=name, summary=summary)
    return out


TMA_STEP = ("tc_tma", "+ the copies made by the SM's copy engine for a producer warpgroup (Hopper only)")
"""The name of chapter 8's last step on a Hopper GPU and what it adds to ``tc_inner``, whose tile and warps it keeps,
with 64-deep tiles in a ring of 4 stages filled by the copy engine (:mod:`gemmlab.gemm.tensor_tma`)."""


def tma_kernels(precision: str) -> dict[str, tensor_cores.TensorGemmKernel]:
    """Chapter 8's Hopper step for FP16 or BF16 inputs as ``{name: kernel}`` (``tc_tma_f16``); an empty dict for TF32,
    which it does not take. It runs on a Hopper GPU only: elsewhere it says so when asked
    (:func:`gemmlab.gemm.tensor_cores.unavailable_reason`), and the bench leaves it out."""
    from . import tensor_tma

    if precision not in tc_configs.TMA_WS.precisions:
        return {}
    name = f"{TMA_STEP[0]}_{tensor_cores.PRECISIONS[precision]}"
    return {name: replace(tensor_tma.tma_kernel(precision, name=name), summary=TMA_STEP[1])}


HOPPER_STEPS: tuple[tuple[str, str, str], ...] = (
    ("hopper_v0", "GEMM_V0", "one warpgroup: the copy engine and wgmma, one 64-deep K-tile at a time"),
    ("hopper_ring", "GEMM_WS", "+ a ring of 4 stages, a producer and two consumer warpgroups, 128x256 tiles"),
    ("hopper_overlap", "GEMM_OVERLAP", "+ a stage handed back once the next tile's wgmma are queued"),
    ("hopper_persistent", "GEMM_PERSISTENT", "+ one block per SM walking over the tiles in groups of rows"),
    ("hopper_pairs", "GEMM_PAIRS", "+ an epilogue of 8-byte stores"),
    ("hopper_cluster", "GEMM_CLUSTER", "+ clusters of two blocks, each copying half of a shared B tile into both"),
    ("hopper_tmastore", "GEMM_TMA_STORE", "+ the epilogue through the copy engine, overlapping the next tile"),
    ("hopper_storer", "GEMM_STORER", "+ the stores issued by two idle warps of the producer warpgroup"),
    ("hopper_split", "GEMM_SPLIT", "+ half of each tile's epilogue under the next tile's first two K-tiles"),
)
"""Chapter 9's ladder, as triples of a name, the :mod:`gemmlab.gemm.wgmma` configuration and what the step adds."""

HOPPER_ALTERNATIVES: tuple[tuple[str, str, str], ...] = (
    ("hopper_streamk", "GEMM_STREAMK",
     "hopper_tmastore with its last round's K-tiles shared out evenly, cut tiles added up in C by the copy engine"),
    ("hopper_pingpong", "GEMM_PINGPONG",
     "hopper_tmastore's pieces scheduled ping-pong: each consumer owns 128x128 tiles and stores while the other computes"),
)
"""Chapter 9's kernels beside the ladder (not one more step each), as :data:`HOPPER_STEPS`."""


def hopper_kernels(precision: str, alternatives: bool = False) -> dict[str, GemmKernel]:
    """Chapter 9's ladder for BF16 or FP16 inputs, in order (``hopper_pairs_bf16``), followed with ``alternatives``
    by :data:`HOPPER_ALTERNATIVES`; an empty dict for TF32, which these kernels do not take. They run on a Hopper GPU
    only: elsewhere they say so when asked (:func:`gemmlab.gemm.tensor_cores.unavailable_reason`), and the bench leaves
    them out."""
    from . import wgmma

    if precision not in wgmma.PRECISIONS:
        return {}
    suffix = tensor_cores.PRECISIONS[precision]
    listed = HOPPER_STEPS + (HOPPER_ALTERNATIVES if alternatives else ())
    return {f"{step}_{suffix}": replace(wgmma.hopper_kernel(getattr(wgmma, config), f"{step}_{suffix}", precision), summary=summary)
            for step, config, summary in listed}


def by_precision(precision: str) -> dict[str, GemmKernel]:
    """The kernels ``python -m gemmlab bench --precision`` runs: :func:`kernels` for FP32, else chapter 8's
    :func:`tensor_kernels` and :func:`tma_kernels` for that input format followed by chapter 9's :func:`hopper_kernels`
    (its alternatives included)."""
    if precision == "FP32":
        return kernels()
    return {**tensor_kernels(precision), **tma_kernels(precision), **hopper_kernels(precision, True)}


def kernels() -> dict[str, GemmKernel]:
    """``{name: callable(A, B) -> C}`` for every kernel of the course ladder, in chapter order."""
    return {k.name: k for k in COURSE}


def named() -> dict[str, GemmKernel]:
    """The kernels with course names: the ladder, the teaching variants, the candidates and chapter 3's wrong one."""
    return {k.name: k for k in (*COURSE, *VARIANTS, *CANDIDATES, EARLY_RETURN)}


def known() -> dict[str, GemmKernel]:
    """Every name :func:`lookup` and ``python -m gemmlab run`` accept: :func:`named`, every ``07_fast.cu``
    configuration by its entry point's name (chapter 7's tuned configurations and ablations), chapters 8 and 9's
    ladders (:func:`by_precision`) and every ``08_tensor_core.cu`` configuration and format by its entry point."""
    tensor = {name: k for p in tensor_cores.PRECISIONS for name, k in by_precision(p).items()}
    configs = {k.name: k for k in (tensor_cores.mma_kernel(c, p) for c in tc_configs.CONFIGS for p in c.precisions)}
    return {**named(), **{c.function: fast_kernel(c) for c in fast_configs.CONFIGS}, **tensor, **configs}


Kernel = TypeVar("Kernel", bound=GemmKernel)


@overload
def lookup(name: str) -> GemmKernel: ...


@overload
def lookup(name: str, kind: type[Kernel]) -> Kernel: ...


def lookup(name: str, kind: type[GemmKernel] = GemmKernel) -> GemmKernel:
    """The kernel called ``name`` (see :func:`~gemmlab.gemm.registry.known`), or a KeyError listing the names. With
    ``kind``, a kernel of that class (e.g. :class:`~gemmlab.gemm.registry.SizeAwareKernel`, to ask it for its split), or a TypeError:
    a type checker then knows what the caller holds."""
    every = known()
    if name not in every:
        raise KeyError(f"no GEMM kernel named {name!r}; choose from {', '.join(every)}")
    found = every[name]
    if not isinstance(found, kind):
        raise TypeError(f"{name} is a {type(found).__name__}, not a {kind.__name__}")
    return found


def correct_kernels() -> list[GemmKernel]:
    """Every correct FP32 kernel once (course names first; a ``07_fast.cu`` configuration that also has a course
    name appears under that name): what the GPU tests check against the reference. Chapter 8's kernels, which
    round their inputs, have tests of their own."""
    seen, out = set(), []
    for k in known().values():
        if k.input_precision != "FP32":
            continue
        key = (k.source_name, k.function, isinstance(k, SizeAwareKernel))   # fast_auto runs other entry points too
        if k is not EARLY_RETURN and key not in seen:
            seen.add(key)
            out.append(k)
    return out
