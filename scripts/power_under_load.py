# Does the GPU's power cap, not its clock, set the speed of chapters 8 and 9's kernels? Each kernel runs alone, back
# to back, for SECONDS seconds while nvidia-smi samples the SM clock and the board's power every 50 ms. Per kernel:
# TFLOP/s, mean SM clock and power over the steady part (after the first 1.5 s: nvidia-smi's power.draw is an
# average over about a second on some drivers), FLOP per SM clock cycle and FLOP per joule, and the clock-event
# reasons seen (SW power cap, thermal ...).
#
# The answer on the H200 (results/power-h200.txt, 2026-12-01): yes. Chapter 8's mma.sync probe moves no memory and
# held 1,980 MHz at about 350 W in its first form (one register of 1.0 for every operand), 519-567 W in its present
# one (registers of its own per chain, values near 1.0); every GEMM (cuBLAS, chapter 8's best, chapter 9's kernels)
# meets the 700 W cap and runs at 1,387-1,767 MHz. The probe's operands matter: fed random numbers, the bare
# mma.sync meets the cap by itself (results/probe-data-h200.txt). So under sustained load FLOP per joule decides
# speed, and "% of the probe" compares a kernel at the cap's clock with a probe at the top clock: FLOP per cycle is
# the comparison at equal clocks.
# Run on a GPU with CuPy and nvidia-smi (about 80 s on the H200; chapter 9's kernels are skipped on other GPUs; on a
# T4, which has no BF16 tensor cores, add --precision FP16):
#   timeout 280 python3 scripts/power_under_load.py [--seconds 4] [--precision FP16] [--sizes 4096] [--kernels ...]
import argparse, datetime, shutil, statistics, subprocess, sys, threading, time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIZES = (4096, 8192)
STEPS = ("hopper_split", "hopper_tmastore", "hopper_streamk", "hopper_pingpong", "tc_wide")
"""The kernels measured by default, each with the input format's suffix (chapter 9's are skipped off Hopper)."""
SUFFIXES = {"FP16": "f16", "BF16": "bf16"}
STEADY_AFTER_S = 1.5
# nvidia-smi's clock-event reasons (bits of clocks_event_reasons.active; older drivers: clocks_throttle_reasons).
REASONS = {0x1: "idle", 0x2: "app clocks", 0x4: "SW power cap", 0x8: "HW slowdown", 0x10: "sync boost",
           0x20: "SW thermal", 0x40: "HW thermal", 0x80: "HW power brake", 0x100: "display clocks"}
Sample = tuple[float, float, float, int]
"""One line of nvidia-smi's: (host time, SM MHz, watts, reasons bitmask)."""


def query_fields() -> str:
    """What nvidia-smi samples, in the names this driver knows: newer drivers call the clock-event reasons 'event'
    (older ones 'throttle') and have an instantaneous power reading beside the averaged one."""
    known = subprocess.run(["nvidia-smi", "--help-query-gpu"], capture_output=True, text=True).stdout
    power = "power.draw.instant" if "power.draw.instant" in known else "power.draw"
    reasons = "clocks_event_reasons.active" if "clocks_event_reasons.active" in known else "clocks_throttle_reasons.active"
    return f"timestamp,clocks.sm,{power},{reasons}"


class Sampler:
    """nvidia-smi in the background: (host time, SM MHz, watts, reasons bitmask) every 50 ms."""

    def __init__(self) -> None:
        self.fields = fields = query_fields()
        self.proc = subprocess.Popen(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits",
                                      "-lms", "50"], stdout=subprocess.PIPE, text=True)
        self.samples: list[Sample] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None         # Popen(stdout=PIPE) made it
        for line in self.proc.stdout:
            parsed = parse_sample(line)
            if parsed:
                self.samples.append(parsed)

    def between(self, t0: float, t1: float) -> list[Sample]:
        return between(self.samples, t0, t1)

    def stop(self) -> None:
        self.proc.terminate()


def between(samples: Iterable[Sample], t0: float, t1: float) -> list[Sample]:
    """The samples taken from host time t0 to t1."""
    return [s for s in samples if t0 <= s[0] <= t1]


def parse_sample(line: str) -> Sample | None:
    """'2026/12/01 20:07:05.123, 1980, 512.34, 0x0000000000000004' -> (epoch seconds, 1980.0, 512.34, 4)."""
    parts = [p.strip() for p in line.split(",")]
    if len(parts) != 4:
        return None
    try:
        stamp = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
        return stamp, float(parts[1]), float(parts[2]), int(parts[3], 16)
    except ValueError:
        return None


def sustained(run: Callable[[], object], seconds: float) -> tuple[float, float, list[tuple[float, float]]]:
    """Launch ``run`` back to back for ``seconds``; returns (start, end, [(batch end time, seconds per call)])."""
    from gemmlab.runtime import gpu
    drv = gpu.cuda()
    start, end = drv.Event(), drv.Event()
    run()
    drv.Context.synchronize()
    batches, n = [], 1
    t_start = time.time()
    while time.time() - t_start < seconds:
        start.record()
        for _ in range(n):
            run()
        end.record()
        end.synchronize()
        dt = end.time_since(start) * 1e-3 / n
        batches.append((time.time(), dt))
        n = max(1, min(2000, int(0.05 / max(dt, 1e-7))))  # batches of about 50 ms
    return t_start, time.time(), batches


@dataclass(frozen=True)
class Reading:
    """One kernel's steady state under sustained load: its rate and the clock and power it ran at."""

    tflops: float
    mhz: float
    watts: float
    reasons: str

    @property
    def kflop_per_cycle(self) -> float:
        return self.tflops * 1e12 / (self.mhz * 1e6) / 1e3

    @property
    def gflop_per_joule(self) -> float:
        return self.tflops * 1e12 / self.watts / 1e9

    def against(self, base: "Reading") -> str:
        """This reading as a share of ``base``'s (cuBLAS's, say): per second, per clock cycle and per joule."""
        return (f"{self.tflops / base.tflops:.1%} per second, {self.kflop_per_cycle / base.kflop_per_cycle:.1%} per "
                f"cycle, {self.gflop_per_joule / base.gflop_per_joule:.1%} per joule")


def reading(flops: float, t0: float, t1: float, batches: Iterable[tuple[float, float]],
            samples: Iterable[Sample]) -> Reading | None:
    """The steady part (after STEADY_AFTER_S) of a run from t0 to t1: the median time per call of the batches that
    ended in it, and the mean clock and power of the samples taken in it; None if either is empty."""
    steady = [dt for t, dt in batches if t >= t0 + STEADY_AFTER_S]
    inside = between(samples, t0 + STEADY_AFTER_S, t1)
    if not steady or not inside:
        return None
    seen = 0
    for s in inside:
        seen |= s[3]
    return Reading(flops / statistics.median(steady) / 1e12, statistics.mean(s[1] for s in inside),
                   statistics.mean(s[2] for s in inside),
                   ", ".join(v for k, v in REASONS.items() if seen & k) or "none")


def measure(name: str, run: Callable[[], object], flops: float, seconds: float, sampler: Sampler) -> Reading | None:
    """Run ``run`` back to back for ``seconds`` while ``sampler`` watches, print one line and return the reading."""
    t0, t1, batches = sustained(run, seconds)
    r = reading(flops, t0, t1, batches, sampler.samples)
    if r is None:
        print(f"{name:28s} too short to read", flush=True)
    else:
        print(f"{name:28s} {r.tflops:7.1f} TFLOP/s  {r.mhz:6.0f} MHz  {r.watts:6.1f} W  {r.kflop_per_cycle:7.1f} "
              f"kFLOP/cycle  {r.gflop_per_joule:6.2f} GFLOP/J  reasons: {r.reasons}", flush=True)
    return r


def main(seconds: float, sizes: Iterable[int] = SIZES, kernels: Sequence[str] | None = None,
         precision: str = "BF16") -> None:
    from gemmlab.gemm import registry
    from gemmlab.measure import bench, ceilings, precisions, probes
    from gemmlab.models import verify
    from gemmlab.runtime import device, gpu
    if shutil.which("nvidia-smi") is None:
        sys.exit("power_under_load: needs nvidia-smi (it samples the clock and the power)")
    gpu.cuda()
    cp = bench.cupy_or_none()
    if cp is None:
        sys.exit("power_under_load: needs CuPy for cuBLAS")
    spec = device.current()
    shape, dtype = ceilings.mma_form(precision, spec)
    # The mma.sync probe of chapter 8 in this format (m16n8k16; a T4's FP16 m16n8k8): no memory traffic at all.
    probe = probes.mma_probe(shape, dtype)
    if probe is None:                   # the code is compiled for an older architecture (GEMMLAB_ARCH)
        sys.exit(f"power_under_load: the code compiled here has no {precision} tensor-core instruction; "
                 "try --precision FP16")
    kernels = kernels or [f"{step}_{SUFFIXES[precision]}" for step in STEPS]
    info = subprocess.run(["nvidia-smi", "--query-gpu=name,power.limit,enforced.power.limit,clocks.max.sm",
                           "--format=csv"], capture_output=True, text=True).stdout
    print(info.strip(), flush=True)
    sampler = Sampler()
    print("sampling", sampler.fields, flush=True)
    time.sleep(1.0)
    idle = sampler.between(time.time() - 1.0, time.time())
    if idle:
        print(f"idle: {statistics.mean(s[1] for s in idle):.0f} MHz, {statistics.mean(s[2] for s in idle):.1f} W", flush=True)

    launch, probe_flops = probe
    measure(f"mma.sync probe ({dtype})", launch, probe_flops, seconds, sampler)
    time.sleep(1.0)

    for n in sizes:
        A, B = verify.random_operands(n, n, n, seed=1)
        run, _ = precisions._cublas_call(cp, A, B, precision)
        flops = 2.0 * n ** 3
        measure(f"cuBLAS {precision} {n}^3", run, flops, seconds, sampler)
        time.sleep(1.0)
        for name in kernels:
            kernel = registry.lookup(name)
            reason = kernel.unavailable_on(spec) if hasattr(kernel, "unavailable_on") else None
            if reason:
                print(reason, flush=True)
                continue
            problem = kernel.on_device(A, B)
            measure(f"{name} {n}^3", problem.launch, flops, seconds, sampler)
            del problem
            time.sleep(1.0)
    sampler.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=4.0, help="how long each kernel runs (default 4)")
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES, help="N of the N x N x N products (default 4096 8192)")
    parser.add_argument("--precision", choices=sorted(SUFFIXES), default="BF16",
                        help="the input format of the probe, cuBLAS and the kernels (default BF16; FP16 on a T4)")
    parser.add_argument("--kernels", nargs="+", default=None,
                        help="kernels of gemmlab.gemm.registry.by_precision(precision), each beside cuBLAS in that format "
                             "(default: chapter 9's last step, stream-K and ping-pong and chapter 8's tc_wide)")
    args = parser.parse_args()
    from gemmlab.gemm import registry
    from gemmlab.runtime import gpu
    unknown = [k for k in args.kernels or () if k not in registry.by_precision(args.precision)]
    if unknown or min(args.sizes) < 1 or args.seconds <= STEADY_AFTER_S:
        parser.error(f"no {args.precision} kernel named {', '.join(unknown)}" if unknown else
                     f"sizes must be positive and --seconds more than the {STEADY_AFTER_S} s the clock takes to settle")
    try:
        main(args.seconds, args.sizes, args.kernels, args.precision)
    except gpu.GPUUnavailable as exc:
        sys.exit(f"power_under_load: {exc}")
