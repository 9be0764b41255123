"""The small kernels that are not GEMMs: chapter 0's probes, chapter 3's deadlock, chapter 4's bank probe,
and chapter 8's tensor-core probes (one ``mma.sync``, one ``ldmatrix``, the ``mma.sync`` ceiling, and the
best tensor-core kernel's main loop taken apart, :func:`steady_state`).

Each function checks its arguments (:mod:`gemmlab.gemm.checks`) before it launches anything.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, SupportsInt

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from ..gemm import units
from ..gemm.checks import check_block, check_fits, check_grid
from ..gemm.units import FMA_CHAINS, MMA_CHAINS
from ..models import mma
from ..runtime import compiler, device, gpu, timing

__all__ = ["FMA_CHAINS", "LDMATRIX_IMAGE_BYTES", "SENTINEL", "bank_probe", "barrier_deadlock", "copy", "copy_passes",
           "fma", "fma_values", "hello_ids", "ldmatrix_registers", "mma_ceiling", "mma_probe", "mma_product",
           "mma_registers", "probe_grid", "steady_state", "wgmma_product"]

# ---------------------------------------------------------------- chapter 4 probe

BANKS = "04_banks.cu"


def bank_probe(blocks: int, iters: int, with_global_loads: bool) -> np.ndarray:
    """Run ``bank_probe`` once: ``blocks`` blocks of 1024 threads, ``iters`` rounds of one conflict-free
    shared store and load per thread, with or without one global load per thread per round."""
    if blocks < 1 or iters < 1:
        raise ValueError(f"blocks and iters must be at least 1, got {blocks} and {iters}")
    drv = gpu.cuda()
    spec = device.current()
    check_grid((blocks, 1, 1), spec)
    from pycuda import gpuarray

    n = blocks * 1024 * (iters if with_global_loads else 1)
    check_fits(4 * (n + blocks * 1024), device.free_memory(), "bank_probe")
    src = gpuarray.zeros(n, np.float32)
    out = gpuarray.empty(blocks * 1024, np.float32)
    units.load(BANKS).function("bank_probe")(out.gpudata, src.gpudata, np.int32(iters), np.int32(bool(with_global_loads)),
                                                block=(1024, 1, 1), grid=(blocks, 1, 1))
    drv.Context.synchronize()
    return out.get()


# ---------------------------------------------------------------- chapter 0

PROBES = "00_probes.cu"


def probe_grid(threads: int, spec: device.DeviceSpec, waves: int = 8) -> tuple[int, int, int]:
    """Enough blocks of ``threads`` to fill every SM ``waves`` times over."""
    return (spec.sms * max(1, spec.max_threads_per_sm // threads) * waves, 1, 1)


def hello_ids(blocks: int, threads: int) -> np.ndarray:
    """Run ``hello_ids`` on ``blocks x threads`` threads; rows of (blockIdx.x, threadIdx.x, global index)."""
    drv = gpu.cuda()
    spec = device.current()
    check_block((threads, 1, 1), spec)
    check_grid((blocks, 1, 1), spec)
    n = blocks * threads
    out = np.full((n, 3), -1, np.int32)
    units.load(PROBES).function("hello_ids")(drv.Out(out), np.int32(n), block=(threads, 1, 1), grid=(blocks, 1, 1))
    return out


# The copy and FMA probes take pycuda.gpuarray.GPUArray buffers: Any, as PyCUDA has no type information.
def _check_copy(src: Any, dst: Any, threads: int, spec: device.DeviceSpec) -> None:
    check_block((threads, 1, 1), spec)
    if src.dtype != np.float32 or dst.dtype != np.float32 or src.size != dst.size:
        raise ValueError(f"copy needs two float32 arrays of one size, got {src.dtype}[{src.size}] and {dst.dtype}[{dst.size}]")


def copy(src: Any, dst: Any, threads: int = 256) -> None:
    """Enqueue ``copy_f32``: ``dst[:] = src`` (float32 GPUArrays of one size), one float4 per thread."""
    spec = device.current()
    _check_copy(src, dst, threads, spec)
    blocks = -(-(src.size // 4 + 3) // threads)
    check_grid((blocks, 1, 1), spec)
    units.load(PROBES).function("copy_f32")(src.gpudata, dst.gpudata, np.int64(src.size),
                                               block=(threads, 1, 1), grid=(blocks, 1, 1))


def copy_passes(src: Any, dst: Any, passes: int, threads: int = 256) -> None:
    """Enqueue ``copy_passes_f32``: the same copy ``passes`` times, by one resident wave of blocks
    that strides over the whole buffer in every pass."""
    spec = device.current()
    _check_copy(src, dst, threads, spec)
    if passes < 1:
        raise ValueError(f"passes must be at least 1, got {passes}")
    units.load(PROBES).function("copy_passes_f32")(src.gpudata, dst.gpudata, np.int64(src.size), np.int32(passes),
                                                      block=(threads, 1, 1), grid=probe_grid(threads, spec, waves=1))


def fma(out: Any, iters: int, threads: int = 256) -> None:
    """Enqueue ``fma_f32``: one thread per element of ``out``, ``iters`` rounds of :data:`~gemmlab.gemm.units.FMA_CHAINS` independent FMAs."""
    spec = device.current()
    check_block((threads, 1, 1), spec)
    if out.size % threads:
        raise ValueError(f"fma needs len(out) to be a multiple of threads={threads}, got {out.size}")
    blocks = out.size // threads
    check_grid((blocks, 1, 1), spec)
    units.load(PROBES).function("fma_f32")(out.gpudata, np.int32(iters), np.float32(0.5), np.float32(0.5),
                                              block=(threads, 1, 1), grid=(blocks, 1, 1))


def fma_values(blocks: int, threads: int, iters: int) -> np.ndarray:
    """Run ``fma_f32`` once on ``blocks x threads`` threads and return what each thread wrote."""
    gpu.cuda()
    from pycuda import gpuarray

    out = gpuarray.zeros(blocks * threads, np.float32)
    fma(out, iters, threads)
    return out.get()


def barrier_deadlock(spin_limit: int, threads: int = 128) -> np.ndarray:
    """Run chapter 3's ``barrier_deadlock`` in one block; with ``spin_limit`` 0 it never returns, so
    call it only in a child process under :func:`gemmlab.runtime.watchdog.run_isolated`. Returns what each
    thread wrote: 1 for warp 0 (past the barrier), 2 for a thread that saw the flag, 0 for one that gave up."""
    drv = gpu.cuda()
    spec = device.current()
    if threads <= spec.warp_size:
        raise ValueError(f"the deadlock needs more than one warp, got threads={threads}")
    check_block((threads, 1, 1), spec)
    out = np.zeros(threads, np.int32)
    units.load("03_deadlock.cu").function("barrier_deadlock")(drv.InOut(out), np.int32(spin_limit),
                                                                 block=(threads, 1, 1), grid=(1, 1, 1))
    return out


# ---------------------------------------------------------------- chapter 8 probes (tensor cores)

MMA_PROBES = "08_mma_probe.cu"
SENTINEL = 0xFFFFFFFF
"""The word ``08_mma_probe.cu`` writes in place of a register (``MMA_PROBE_SENTINEL`` there), where an sm_80
form is compiled for an older GPU and where an ``ldmatrix`` of fewer matrices leaves a register unfilled."""
LDMATRIX_IMAGE_BYTES = 8192
"""The largest shared-memory image ``ldmatrix_probe`` takes (``LDMATRIX_IMAGE_BYTES`` in the file)."""


def _arch_number(arch: str) -> int:
    """75 for ``sm_75`` or ``compute_75``, 90 for ``sm_90``."""
    major, minor = compiler.capability(arch)
    return 10 * major + minor


def _words(name: str, X: ArrayLike, shape: tuple[int, int], dtype: DTypeLike) -> np.ndarray:
    X = np.ascontiguousarray(X, dtype)
    if X.shape != shape:
        raise ValueError(f"{name} must be {shape[0]} x {shape[1]} (lanes x registers), got shape {X.shape}")
    return X


def mma_registers(shape: str, dtype: str, a_words: ArrayLike, b_words: ArrayLike,
                  c_values: ArrayLike) -> np.ndarray:
    """Run one ``mma.sync`` (``kernels/08_mma_probe.cu``, one warp) on raw registers: ``a_words`` and
    ``b_words`` are ``uint32[lane][register]`` as :func:`gemmlab.models.mma.pack` makes them, ``c_values`` the
    four FP32 accumulators of each lane. Returns the D registers, ``uint32[32][4]`` FP32 bits, or
    :data:`SENTINEL` everywhere where the instruction needs a newer GPU than the kernels are compiled for."""
    ins = mma.instruction(shape, dtype)
    a = _words("a_words", a_words, (mma.WARP, ins.registers("A")), np.uint32)
    b = _words("b_words", b_words, (mma.WARP, ins.registers("B")), np.uint32)
    c = _words("c_values", c_values, (mma.WARP, ins.registers("C")), np.float32)
    drv = gpu.cuda()
    d = np.zeros((mma.WARP, 4), np.uint32)
    units.load(MMA_PROBES).function(ins.probe)(drv.In(a), drv.In(b), drv.In(c), drv.Out(d),
                                                  block=(mma.WARP, 1, 1), grid=(1, 1, 1))
    return d


def mma_product(A: ArrayLike, B: ArrayLike, C: ArrayLike, shape: str = "m16n8k16",
                dtype: str = "f16") -> np.ndarray:
    """``D = A·B + C`` by one tensor-core instruction: each lane's registers filled as :mod:`gemmlab.models.mma` says
    it holds A, B and C, and D read back where the same model says it sits (float32, M x N). With the
    right layout this is the product; with a wrong one, a scrambled matrix."""
    ins = mma.instruction(shape, dtype)
    arch = units.load(MMA_PROBES).arch
    if _arch_number(arch) < ins.sm:
        raise gpu.GPUUnavailable(f"{ins.ptx} needs sm_{ins.sm} or newer, and the kernels here are compiled for {arch}.")
    words = [mma.pack(mma.lane_values(X, shape, dtype, op), ins.element_type(op)) for X, op in ((A, "A"), (B, "B"))]
    c = mma.lane_values(np.asarray(C, np.float32), shape, dtype, "C")
    d = mma_registers(shape, dtype, words[0], words[1], c)
    return mma.from_lanes(mma.unpack(d, "f32"), shape, dtype, "C").astype(np.float32)


def ldmatrix_registers(image: ArrayLike, offsets: Iterable[SupportsInt], num: int,
                       trans: bool = False) -> np.ndarray:
    """Run one ``ldmatrix.sync.aligned.m8n8.x<num>{.trans}.shared.b16`` in one warp: ``image`` (16-bit values,
    at most :data:`LDMATRIX_IMAGE_BYTES`) is copied to shared memory and lane *l* gives the row address at byte
    ``offsets[l]`` of it (8 * ``num`` offsets, repeated over the other lanes as sm_75 wants, or 32).
    Returns the destination registers, ``uint32[32][num]``."""
    if num not in (1, 2, 4):
        raise ValueError(f"ldmatrix loads 1, 2 or 4 matrices, got num={num}")
    img = np.ascontiguousarray(image, np.uint16).ravel()
    if img.size % 2 or not 0 < 2 * img.size <= LDMATRIX_IMAGE_BYTES:
        raise ValueError(f"the image must be an even number of 16-bit values, at most {LDMATRIX_IMAGE_BYTES} bytes; "
                         f"got {img.size} values")
    offs = [int(o) for o in offsets]
    if len(offs) not in (8 * num, mma.WARP):
        raise ValueError(f"ldmatrix.x{num} takes {8 * num} row addresses (or 32), got {len(offs)}")
    offs = [offs[lane % len(offs)] for lane in range(mma.WARP)]
    bad = [o for o in offs if o % mma.CHUNK_BYTES or not 0 <= o <= 2 * img.size - mma.CHUNK_BYTES]
    if bad:
        raise ValueError(f"row addresses must be 16-byte aligned and inside the {2 * img.size}-byte image, got {bad[:4]}")
    drv = gpu.cuda()
    out = np.zeros((mma.WARP, 4), np.uint32)
    units.load(MMA_PROBES).function("ldmatrix_probe")(
        drv.In(img.view(np.uint32)), np.int32(img.size // 2), drv.In(np.array(offs, np.uint32)), drv.Out(out),
        np.int32(num), np.int32(bool(trans)), block=(mma.WARP, 1, 1), grid=(1, 1, 1))
    return out[:, :num].copy()


MMA_CEILINGS = {("m16n8k16", "f16"): (8, 0), ("m16n8k16", "bf16"): (8, 0), ("m16n8k8", "tf32"): (8, 0),
                ("m16n8k8", "f16"): (7, 5)}
"""The ``mma_ceiling_*`` probes of ``08_mma_probe.cu`` and the compute capability each needs."""


def mma_probe(shape: str = "m16n8k16", dtype: str = "f16", iters: int = 4096,
              threads: int = 256) -> tuple[Callable[[], object], int] | None:
    """``(launch, flops)`` of the tensor cores' ceiling probe for one ``mma.sync`` form: a function that launches it
    once (every SM filled twice over with warps that each run :data:`gemmlab.gemm.units.MMA_CHAINS` independent
    chains of the instruction, ``iters`` times) and the FLOPs that launch does; None where the kernels are compiled
    for an architecture without that form. :func:`mma_ceiling` times it; ``scripts/power_under_load.py`` runs it for
    seconds while the clock and the power are sampled."""
    if (shape, dtype) not in MMA_CEILINGS:
        raise ValueError(f"no ceiling probe for {shape} {dtype}; there are {sorted(MMA_CEILINGS)}")
    gpu.cuda()
    spec = device.current()
    check_block((threads, 1, 1), spec)
    compiled = units.load(MMA_PROBES)
    if compiler.capability(compiled.arch) < MMA_CEILINGS[shape, dtype]:
        return None
    from pycuda import gpuarray

    fn = compiled.function(f"mma_ceiling_{shape}_{dtype}")
    grid = probe_grid(threads, spec, waves=2)
    out = gpuarray.zeros(grid[0] * threads, np.float32)          # kept alive by the closure below
    m, n, k = mma.instruction(shape, dtype).mnk
    flops = grid[0] * threads // 32 * iters * MMA_CHAINS * 2 * m * n * k
    return (lambda: fn(out.gpudata, np.int32(iters), block=(threads, 1, 1), grid=grid)), flops


def mma_ceiling(shape: str = "m16n8k16", dtype: str = "f16", iters: int = 4096, threads: int = 256) -> float | None:
    """The tensor cores' rate for one ``mma.sync`` form, in FLOP/s: :func:`mma_probe` timed (the way chapter 0's
    FMA probe measures the FP32 ceiling). None where the kernels are compiled for an architecture without that
    form."""
    probe = mma_probe(shape, dtype, iters, threads)
    if probe is None:
        return None
    launch, flops = probe
    return flops / timing.time_gpu(launch, repeat=5).median_s


STEADY = "08_steady_state.cu"
STEADY_PARTS = ("mma", "ldmatrix", "barrier", "copies")
"""The entry points of ``08_steady_state.cu`` (``steady_<part>``), each adding one part of the best tensor-core
kernel's main loop to the one before: ``mma.sync`` alone, + ``ldmatrix``, + the barrier, + the ``cp.async`` copies."""
STEADY_SHARED_BYTES = 4 * (128 * 64 + 32 * 512)
"""The ring of four 128 x 32 and 32 x 256 FP16 tiles (``STEADY_SHARED_BYTES`` in the kernel file)."""
STEADY_SOURCE_BYTES = 16 << 20
"""The buffer the ``copies`` part reads, the same for every block: it stays in the L2."""


def steady_state(part: str, iters: int = 4096) -> float | None:
    """FLOP/s of the best tensor-core kernel's main loop (128 x 256 blocks of 8 warps, warps of 64 x 64, 32-deep
    tiles, fragments prefetched) running ``iters`` tiles in one block per SM, with the parts up to ``part`` of
    ``STEADY_PARTS``: no prologue, epilogue, edges or DRAM. None where the kernels are compiled for a GPU
    without ``mma.sync.m16n8k16`` (sm_80) or where the ring does not fit a block's shared memory."""
    if part not in STEADY_PARTS:
        raise ValueError(f"no part {part!r}; the parts are {', '.join(STEADY_PARTS)}")
    if iters < 1:
        raise ValueError(f"iters must be positive, got {iters}")
    gpu.cuda()
    spec = device.current()
    compiled = units.load(STEADY)
    if _arch_number(compiled.arch) < 80 or spec.shared_per_block_optin < STEADY_SHARED_BYTES:
        return None
    from pycuda import gpuarray

    fn = compiled.function(f"steady_{part}")
    compiled.allow_shared(f"steady_{part}", STEADY_SHARED_BYTES)
    g = gpuarray.zeros(STEADY_SOURCE_BYTES // 4, np.uint32)
    out = gpuarray.zeros(spec.sms * 256, np.float32)
    launch = lambda: fn(g.gpudata, out.gpudata, np.int32(iters), block=(256, 1, 1), grid=(spec.sms, 1, 1),
                        shared=STEADY_SHARED_BYTES)
    t = timing.time_gpu(launch, repeat=5)
    if not np.isfinite(out.get()).all():
        raise RuntimeError(f"steady_{part} left a non-finite sum: its timing is meaningless")
    m, n, k = mma.instruction("m16n8k16", "f16").mnk
    return spec.sms * 8 * iters * 2 * 32 * 2 * m * n * k / t.median_s


WGMMA_PROBE = "09_hopper.cu"


def wgmma_product(A: ArrayLike, Bt: ArrayLike) -> np.ndarray:
    """A (64 x 64) times B (64 x 64, given as its transpose ``Bt``) by one warpgroup's four ``wgmma.mma_async``
    m64n64k16 (``kernels/09_hopper.cu``; BF16 inputs, FP32 sums; sm_90a only): each thread's 32 accumulators
    come back raw and are put where :func:`gemmlab.models.hopper.wgmma_d_position` says they belong. With the right
    model this is A·B; inputs are rounded to BF16 first (small integers are exact)."""
    from ..models import hopper

    A, Bt = (np.asarray(X, np.float32) for X in (A, Bt))
    if A.shape != (64, 64) or Bt.shape != (64, 64):
        raise ValueError(f"A and Bt must both be 64 x 64, got {A.shape} and {Bt.shape}")
    drv = gpu.cuda()
    fn = units.load(WGMMA_PROBE).function("wgmma_probe")
    regs = np.zeros((hopper.WARPGROUP, 32), np.float32)
    fn(drv.In(mma.to_bf16_bits(A)), drv.In(mma.to_bf16_bits(Bt)), drv.Out(regs), block=(hopper.WARPGROUP, 1, 1), grid=(1, 1, 1))
    D = np.full((64, 64), np.nan, np.float32)
    for t in range(hopper.WARPGROUP):
        for i in range(32):
            D[hopper.wgmma_d_position(t, i)] = regs[t, i]
    return D
