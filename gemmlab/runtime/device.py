"""The device: its limits, and the ceilings they imply.

:class:`~gemmlab.models.limits.DeviceSpec` holds what the CUDA driver reports about a GPU. The ceilings of the
roofline are derived from it by plain arithmetic (:func:`peak_fp32_flops`,
:func:`peak_dram_bandwidth`); ``gemmlab.measure.bench`` measures them with the course's own probes.
Published specs of a T4 (Colab's free GPU) and an H200 let everything but :func:`current`
run without a GPU.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from dataclasses import replace

from ..models.limits import DeviceSpec as DeviceSpec     # re-exported: defined with the limits, in the layer that needs no GPU
from . import gpu

# FP32 lanes (CUDA cores) per SM by compute capability, from the CUDA C++ Programming Guide's
# "Arithmetic Instructions" throughput table (32-bit floating-point add, multiply, multiply-add).
FP32_LANES_PER_SM = {
    (7, 5): 64, (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128,
    (9, 0): 128, (10, 0): 128, (10, 3): 128, (12, 0): 128, (12, 1): 128,
}


def fp32_lanes_per_sm(cc: tuple[int, int]) -> int:
    """FP32 lanes per SM for compute capability ``cc`` (raises for an unknown one)."""
    try:
        return FP32_LANES_PER_SM[(cc[0], cc[1])]
    except KeyError:
        raise ValueError(f"no FP32 lane count recorded for compute capability {cc[0]}.{cc[1]}; "
                         "add it to gemmlab.runtime.device.FP32_LANES_PER_SM") from None


def peak_fp32_flops(spec: DeviceSpec) -> float:
    """SMs x FP32 lanes x 2 (an FMA is two FLOPs) x SM clock, in FLOP/s."""
    return spec.sms * fp32_lanes_per_sm(spec.compute_capability) * 2 * spec.sm_clock_khz * 1e3


TENSOR_FLOPS_PER_SM_CLOCK = {
    (7, 5): {"FP16": 1024},
    (8, 0): {"FP16": 2048, "BF16": 2048, "TF32": 1024},
    (8, 6): {"FP16": 1024, "BF16": 1024, "TF32": 512},
    (8, 9): {"FP16": 1024, "BF16": 1024, "TF32": 512},
    (9, 0): {"FP16": 4096, "BF16": 4096, "TF32": 2048},
}
"""Dense tensor-core FLOPs per SM per clock with FP32 sums, by compute capability and input format. They
are the datasheets' peaks divided by SMs and boost clock (T4 65, A100 312 / 156, A10 and L4 about 125 / 62,
H100 and H200 989 / 495 TFLOP/s at 1.83 GHz). GeForce cards of 8.6 and 8.9 sum FP16 products in FP32 at
half the rate listed; on 9.0 the rate is that of ``wgmma`` (chapter 9), not of ``mma.sync``."""


def peak_tensor_flops(spec: DeviceSpec, precision: str) -> float | None:
    """SMs x :data:`TENSOR_FLOPS_PER_SM_CLOCK` x SM clock, in FLOP/s; None where no rate is recorded for this
    GPU and input format (an older GPU, or BF16 / TF32 on a T4, which has no such instruction)."""
    major, minor = spec.compute_capability
    rate = TENSOR_FLOPS_PER_SM_CLOCK.get((major, minor), {}).get(precision)
    return None if rate is None else spec.sms * rate * spec.sm_clock_khz * 1e3


def peak_dram_bandwidth(spec: DeviceSpec) -> float:
    """2 (double data rate) x memory clock x bus width in bytes, in B/s."""
    return 2 * spec.memory_clock_khz * 1e3 * spec.memory_bus_bits / 8


def properties_table(spec: DeviceSpec) -> list[tuple[str, str]]:
    """The rows chapter 0 prints: property, value (with units)."""
    KiB, MiB, GiB = 1024, 1024**2, 1024**3
    return [
        ("name", spec.name),
        ("compute capability", "%d.%d (%s)" % (*spec.compute_capability, spec.arch)),
        ("streaming multiprocessors (SMs)", f"{spec.sms}"),
        ("FP32 lanes per SM", f"{fp32_lanes_per_sm(spec.compute_capability)}"),
        ("max threads per block", f"{spec.max_threads_per_block}"),
        ("max threads per SM", f"{spec.max_threads_per_sm} ({spec.max_threads_per_sm // spec.warp_size} warps)"),
        ("max blocks per SM", f"{spec.max_blocks_per_sm}"),
        ("registers per SM", f"{spec.registers_per_sm:,} x 32-bit"),
        ("shared memory per block (default)", f"{spec.shared_per_block / KiB:g} KiB"),
        ("shared memory per block (opt-in)", f"{spec.shared_per_block_optin / KiB:g} KiB"),
        ("shared memory per SM", f"{spec.shared_per_sm / KiB:g} KiB"),
        ("L2 cache", f"{spec.l2_bytes / MiB:g} MiB"),
        ("SM clock", f"{spec.sm_clock_khz / 1e3:g} MHz ({spec.clock_source})"),
        ("memory clock", f"{spec.memory_clock_khz / 1e3:g} MHz"),
        ("memory bus width", f"{spec.memory_bus_bits} bits"),
        ("device memory", f"{spec.total_memory / GiB:.1f} GiB"),
    ]


# Reference specs for the two GPUs the course runs on. Limits per compute capability from the CUDA
# C++ Programming Guide ("Technical Specifications per Compute Capability"); SMs and boost clocks
# from NVIDIA's T4 and H200 datasheets; memory clock, bus width and memory size as the driver
# reports them (a T4 on Colab, the course's H200). Used by CPU tests and by readers without a GPU;
# the notebooks' own numbers always come from :func:`current`.
T4 = DeviceSpec(
    name="Tesla T4 (reference)", compute_capability=(7, 5), sms=40, max_threads_per_block=1024,
    max_block_dims=(1024, 1024, 64), max_grid_dims=(2**31 - 1, 65535, 65535), max_threads_per_sm=1024,
    max_blocks_per_sm=16, warp_size=32, registers_per_sm=65536, registers_per_block=65536,
    shared_per_block=48 * 1024, shared_per_block_optin=64 * 1024, shared_per_sm=64 * 1024,
    reserved_shared_per_block=0, l2_bytes=4 * 1024**2, sm_clock_khz=1_590_000, memory_clock_khz=5_001_000,
    memory_bus_bits=256, total_memory=15 * 1024**3, clock_source="reference")
H200 = DeviceSpec(
    name="NVIDIA H200 (reference)", compute_capability=(9, 0), sms=132, max_threads_per_block=1024,
    max_block_dims=(1024, 1024, 64), max_grid_dims=(2**31 - 1, 65535, 65535), max_threads_per_sm=2048,
    max_blocks_per_sm=32, warp_size=32, registers_per_sm=65536, registers_per_block=65536,
    shared_per_block=48 * 1024, shared_per_block_optin=227 * 1024, shared_per_sm=228 * 1024,
    reserved_shared_per_block=1024, l2_bytes=60 * 1024**2, sm_clock_khz=1_980_000, memory_clock_khz=3_201_000,
    memory_bus_bits=6016, total_memory=143771 * 2**20, clock_source="reference")

# Two more GPUs for the occupancy calculator's presets: the limits of compute capability 8.0 and 9.0
# (the same tables) on the H200's, with the A100 (SXM, 40 GB) and H100 (SXM5, 80 GB) datasheets' sizes.
A100 = replace(H200, name="NVIDIA A100 SXM4 40GB (reference)", compute_capability=(8, 0), sms=108,
               shared_per_block_optin=163 * 1024, shared_per_sm=164 * 1024, l2_bytes=40 * 1024**2,
               sm_clock_khz=1_410_000, memory_clock_khz=1_215_000, memory_bus_bits=5120, total_memory=40 * 1024**3)
H100 = replace(H200, name="NVIDIA H100 SXM5 80GB (reference)", l2_bytes=50 * 1024**2, memory_clock_khz=2_619_000,
               memory_bus_bits=5120, total_memory=80 * 1024**3)

def _nvidia_smi_max_clocks() -> tuple[int, int] | None:
    """(SM, memory) maximum clocks in kHz from nvidia-smi, for drivers that no longer report them."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.max.sm,clocks.max.memory",
                              "--format=csv,noheader,nounits", "-i", "0"],
                             capture_output=True, text=True, timeout=20, check=True).stdout
        sm, mem = (int(v) for v in out.strip().splitlines()[0].split(","))
        return sm * 1000, mem * 1000
    except (subprocess.SubprocessError, ValueError, IndexError, OSError):
        return None


@functools.lru_cache(maxsize=1)
def current() -> DeviceSpec:
    """The spec of device 0, read from the CUDA driver."""
    drv = gpu.cuda()
    dev = drv.Context.get_device()
    attrs = {str(k).rsplit(".", 1)[-1]: v for k, v in dev.get_attributes().items()}

    def a(name: str, default: int = 0) -> int:
        return int(attrs.get(name, default))

    sm_clock, mem_clock, source = a("CLOCK_RATE"), a("MEMORY_CLOCK_RATE"), "driver"
    if not sm_clock or not mem_clock:
        clocks = _nvidia_smi_max_clocks()
        if clocks:
            sm_clock, mem_clock, source = clocks[0], clocks[1], "nvidia-smi max"
    return DeviceSpec(
        name=dev.name(), compute_capability=tuple(dev.compute_capability()),
        sms=a("MULTIPROCESSOR_COUNT"), max_threads_per_block=a("MAX_THREADS_PER_BLOCK"),
        max_block_dims=(a("MAX_BLOCK_DIM_X"), a("MAX_BLOCK_DIM_Y"), a("MAX_BLOCK_DIM_Z")),
        max_grid_dims=(a("MAX_GRID_DIM_X"), a("MAX_GRID_DIM_Y"), a("MAX_GRID_DIM_Z")),
        max_threads_per_sm=a("MAX_THREADS_PER_MULTIPROCESSOR"),
        max_blocks_per_sm=a("MAX_BLOCKS_PER_MULTIPROCESSOR"), warp_size=a("WARP_SIZE", 32),
        registers_per_sm=a("MAX_REGISTERS_PER_MULTIPROCESSOR"), registers_per_block=a("MAX_REGISTERS_PER_BLOCK"),
        shared_per_block=a("MAX_SHARED_MEMORY_PER_BLOCK"),
        shared_per_block_optin=a("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
        shared_per_sm=a("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"),
        reserved_shared_per_block=a("RESERVED_SHARED_MEMORY_PER_BLOCK"),
        l2_bytes=a("L2_CACHE_SIZE"), sm_clock_khz=sm_clock, memory_clock_khz=mem_clock,
        memory_bus_bits=a("GLOBAL_MEMORY_BUS_WIDTH"), total_memory=dev.total_memory(), clock_source=source)


def free_memory() -> int:
    """Bytes of device memory free right now."""
    drv = gpu.cuda()
    return drv.mem_get_info()[0]
