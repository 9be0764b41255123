# Chapter 9 candidate, not yet run on a GPU: ping-pong consumers for the persistent kernel with the copy-engine
# epilogue (drafts/09_pingpong.cu, which includes kernels/09_hopper.cu). Three modes:
#   --model   no GPU: runs the per-block protocol (ring, turns, mbarriers with phases, copies and tensor cores that
#             finish in any order) for many tile counts, K-tiles, stage counts and both cluster sizes, asserting that
#             every wait sees exactly the phase it means and that nothing stalls; checks that the model fails without
#             the turns; compares the kernel file's constants with this file's (nvcc for the host, no GPU).
#   --probe   each new kernel once at 300x520x256 and 1024^3, also on forced small grids so that blocks take several
#             tiles, built with -DPINGPONG_WATCHDOG=1 (a wait that lasts a second traps); run it under `timeout 60`.
#   (none)    correctness at awkward sizes (and forced grids) for BF16 and FP16 against the float64 reference, then
#             timing against cuBLAS and wgmma_gemm_tmastore at 4 sizes (under `timeout 300`).
import dataclasses, random, sys, time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))      # the course's gemmlab, run from anywhere
from gemmlab import bench, compile_units, device, gpu, precisions, tensor_gemm, timing, tma, verify

SOURCE = Path(__file__).resolve().with_name("09_pingpong.cu")
BM, BN, BK, STAGES, THREADS = 128, 128, 64, 6, 384                 # PP_BM, PP_BN, WS_BK, PP_STAGES, WS_THREADS
SHARED = 1024 + STAGES * (BM + BN) * BK * 2 + 2 * 2 * tma.C_BOX[0] * tma.C_BOX[1] * 4    # PINGPONG_SHARED
SHARED_LIMIT, STATIC_SHARED = 232_448, 1024                          # 227 KiB per block; what ptxas reports


# ---- the model (no GPU)
class Bar:
    """An mbarrier: `count` arrivals and a transaction count complete a phase; a parity wait passes once the phase
    of that parity before the current one has completed, so it cannot tell phase n from n +- 2."""

    def __init__(self, count):
        self.count, self.pending, self.tx, self.phase = count, count, 0, 0

    def arrive(self, tx=0):
        self.tx += tx
        self.pending -= 1
        assert self.pending >= 0, "more arrivals than the barrier counts"
        self._complete()

    def complete_tx(self, n):
        self.tx -= n
        self._complete()

    def _complete(self):
        if self.pending == 0 and self.tx == 0:
            self.phase, self.pending = self.phase + 1, self.count

    def passes(self, parity):
        return (self.phase & 1) != parity


def run_block_model(tiles, k, stages, cluster, rng, turns=True, engine_bias=0.5):
    """One cluster of `cluster` blocks, each with `tiles` tiles of `k` K-tiles, run to the end under a random schedule.
    Returns None, or what went wrong."""
    A, B = 16, 16                                      # KiB of a stage: A, and B (split between the blocks)
    full = [[Bar(1) for _ in range(stages)] for _ in range(cluster)]
    empty = [[Bar(cluster) for _ in range(stages)] for _ in range(cluster)]     # one consumer per block
    turn = [[Bar(1) for _ in range(2)] for _ in range(cluster)]
    content = [[(None, 0)] * stages for _ in range(cluster)]                    # (fill's it, KiB landed)
    copies, groups = [], {(r, c): [] for r in range(cluster) for c in range(2)}  # in flight; wgmma groups issued
    loops_done = [0] * cluster

    def release(s):
        for b in range(cluster):                       # the stage's B came from both blocks' copy engines
            empty[b][s].arrive()

    def producer(r):
        yield lambda: True
        for it in range(tiles * k):
            s, n = it % stages, it // stages
            if it >= stages:
                yield lambda: empty[r][s].passes((n - 1) & 1)
                assert empty[r][s].phase == n, f"producer {r} saw empty[{s}] at phase {empty[r][s].phase}, not {n}"
            full[r][s].arrive(tx=A + B)
            copies.append((r, s, it, A))
            for b in range(cluster):                   # this block's share of B, into every block of the cluster
                copies.append((b, s, it, B // cluster))

    def consumer(r, c):
        yield lambda: True
        for i in range(c, tiles, 2):
            if i > 0 and turns:
                yield lambda: turn[r][1 - c].passes(((i - 1) // 2) & 1)
                assert turn[r][1 - c].phase == (i - 1) // 2 + 1, "turn wait saw the wrong phase"
            assert loops_done[r] == i or not turns, f"block {r}: main loop {i} began after {loops_done[r]} others"
            for kt in range(k):
                it = i * k + kt
                s, n = it % stages, it // stages
                yield lambda: full[r][s].passes(n & 1)
                assert full[r][s].phase == n + 1, f"consumer {c} of block {r} passed full[{s}] at phase " \
                                                  f"{full[r][s].phase} for fill {n}"
                assert content[r][s] == (it, A + B), f"stage {s} holds {content[r][s]}, not all of K-tile {it}"
                groups[r, c].append((s, it))
                yield lambda: len(groups[r, c]) <= 1           # wait_group 1
                if kt > 0:
                    release((it - 1) % stages)
            loops_done[r] += 1
            turn[r][c].arrive()
            yield lambda: not groups[r, c]                      # wait_group 0
            if k > 0:
                release((i * k + k - 1) % stages)
            # the epilogue waits only for its own stores

    agents = [producer(r) for r in range(cluster)] + [consumer(r, c) for r in range(cluster) for c in range(2)]
    waits = [next(a) for a in agents]
    while True:
        ready = [n for n, w in enumerate(waits) if w is not None and w()]
        engines = [("copy", j) for j in range(len(copies))] + [("mma", key) for key, g in groups.items() if g]
        if not ready and not engines:
            if any(w is not None for w in waits):
                return "stall: " + ", ".join(str(n) for n, w in enumerate(waits) if w is not None)
            return None
        try:
            if engines and (not ready or rng.random() < engine_bias):
                kind, what = rng.choice(engines)
                if kind == "copy":                     # a copy lands, in any order
                    r, s, it, kib = copies.pop(what)
                    assert full[r][s].phase == it // stages, f"a copy for fill {it // stages} of stage {s} " \
                                                             f"landed in phase {full[r][s].phase}"
                    assert all(st != s for g in (groups[r, 0], groups[r, 1]) for st, _ in g), \
                        f"stage {s} of block {r} overwritten while a wgmma reads it"
                    landed = content[r][s][1] if content[r][s][0] == it else 0
                    content[r][s] = (it, landed + kib)
                    full[r][s].complete_tx(kib)
                else:                                  # a consumer's oldest wgmma group completes
                    groups[what].pop(0)
            else:
                n = rng.choice(ready)
                try:
                    waits[n] = next(agents[n])
                except StopIteration:
                    waits[n] = None
        except AssertionError as e:
            return str(e)


def model_checks():
    rng = random.Random(0)
    # The check itself: without the turns a consumer's parity wait passes on the other consumer's fill.
    bad = [run_block_model(t, k, 6, 1, rng, turns=False) for t in (2, 3, 5) for k in (7, 8, 13) for _ in range(3)]
    assert all(bad), "without the turns the model should fail"
    print(f"without the turns every one of {len(bad)} runs fails, e.g. '{bad[0]}'")
    runs = 0
    for cluster in (1, 2):
        for stages in (2, 3, 6):
            for tiles in range(0, 10):
                for k in (1, 2, 3, 5, 6, 7, 12, 13):
                    for bias in (0.05, 0.5, 0.95):
                        err = run_block_model(tiles, k, stages, cluster, rng, engine_bias=bias)
                        assert err is None, f"tiles={tiles} k={k} stages={stages} cluster={cluster}: {err}"
                        runs += 1
    print(f"protocol model: {runs} random schedules (0-9 tiles per block, 1-13 K-tiles, 2/3/6 stages, clusters of "
          "1 and 2): every wait saw its own phase, no stage overwritten while read, main loops in tile order, no stall")
    print(f"shared memory: {SHARED:,} dynamic + {STATIC_SHARED:,} static = {SHARED + STATIC_SHARED:,} of "
          f"{SHARED_LIMIT:,} bytes")
    assert SHARED + STATIC_SHARED <= SHARED_LIMIT
    print("kernel file's constants:", same_constants_as_cuda())
    for M, N, K in ((2048,) * 3, (4096,) * 3, (6144, 4096, 2048), (8192,) * 3):
        for cluster, units in ((1, 132), (2, 66)):
            work = -(-M // (BM * cluster)) * -(-N // BN)
            units = min(units, work)
            print(f"   {M}x{N}x{K}, cluster {cluster}: {work} {'pairs of tiles' if cluster > 1 else 'tiles'} of "
                  f"128x128 on {units} units: {work // units}-{-(-work // units)} each, {-(-K // BK)} K-tiles per tile")


HARNESS = r"""
#include "09_pingpong.cu"
#include <cstdio>
int main() { std::printf("%d %d %d %d %d %d\n", PP_BM, PP_BN, WS_BK, PP_STAGES, WS_THREADS, PINGPONG_SHARED); }
"""


def same_constants_as_cuda():
    """Compile a host program that prints the kernel file's tile constants and compare them with this file's."""
    import shutil, subprocess, tempfile
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return "nvcc not found, not compared"
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "harness.cu").write_text(HARNESS)
        subprocess.run([nvcc, "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", f"-I{SOURCE.parent}", "-o",
                        f"{tmp}/harness", f"{tmp}/harness.cu"], check=True, timeout=300)
        out = subprocess.run([f"{tmp}/harness"], capture_output=True, text=True, check=True, timeout=60).stdout.split()
    assert list(map(int, out)) == [BM, BN, BK, STAGES, THREADS, SHARED], (out, [BM, BN, BK, STAGES, THREADS, SHARED])
    return "the same tile, stages, threads and shared memory as this file's"


# ---- the GPU side
UNIT = compile_units.CompileUnit(SOURCE, arch_specific="sm_90a")
UNIT_WATCHDOG = compile_units.CompileUnit(SOURCE, defines=(("PINGPONG_WATCHDOG", 1),), arch_specific="sm_90a")
PINGPONG = tma.HopperGemm("wgmma_gemm_pingpong", BM, BN, BK, THREADS, SHARED, persistent=True, cluster=1, c_map=True)
PINGPONG2 = replace(PINGPONG, function="wgmma_gemm_pingpong2", cluster=2)


@dataclass(frozen=True)
class PingPongKernel(tma.HopperGemmKernel):
    """tma.HopperGemmKernel (its tensor maps, grid and launch) compiled from the draft, on at most `units` blocks
    (clusters) when units > 0, so that a small problem still gives each block several tiles."""

    units: int = 0

    def grid(self, M, N):
        g = super().grid(M, N)
        return g if not self.units else (self.config.cluster * min(self.units, g[0] // self.config.cluster), 1, 1)


def pingpong_kernel(config, precision="BF16", units=0, unit=UNIT):
    k = tma.hopper_kernel(config, precision=precision)
    fields = {f.name: getattr(k, f.name) for f in dataclasses.fields(k)}
    return PingPongKernel(**{**fields, "source": unit, "name": f"{k.name}_u{units}" if units else k.name}, units=units)


def spread(kernel, M, N):
    """Tiles (pairs, in clusters) per unit of the grid, as 'lo-hi on G units'."""
    c = kernel.config
    units, work = kernel.grid(M, N)[0] // c.cluster, -(-M // (c.BM * c.cluster)) * -(-N // c.BN)
    return f"{work // units}-{-(-work // units)} tiles on {units} units"


def probe():
    for cfg in (PINGPONG, PINGPONG2):
        for p in ("BF16", "FP16"):
            for (M, N, K), units in (((300, 520, 256), 0), ((300, 520, 256), 1), ((300, 520, 256), 4),
                                     ((1024, 1024, 1024), 0), ((1024, 1024, 1024), 7)):
                k = pingpong_kernel(cfg, p, units, UNIT_WATCHDOG)
                A, B = verify.random_operands(M, N, K, seed=M + units)
                start = time.monotonic()
                try:
                    verdict = tensor_gemm.reference(A, B, p).check(k(A, B))
                except Exception as e:     # a trap (a wait gave up) or a fault: the context is gone, stop here
                    print(f"{k.entry_point} {M}x{N}x{K} units={units}: FAILED ({type(e).__name__}: {e})", flush=True)
                    sys.exit(1)
                print(f"{k.entry_point} {M}x{N}x{K}, {spread(k, M, N)}: {time.monotonic() - start:.1f} s, "
                      f"correct: {verdict.ok}", flush=True)


def correctness():
    for M, N, K in ((1, 4, 1), (33, 20, 9), (300, 520, 1234), (1000, 2000, 777), (2048, 1028, 64), (4096,) * 3):
        A, B = verify.random_operands(M, N, K, seed=M + N + K)
        for p in ("BF16", "FP16"):
            ref = tensor_gemm.reference(A, B, p)
            out = {"tmastore": ref.check(tma.hopper_kernel(tma.GEMM_TMA_STORE, precision=p)(A, B)).ok}
            for cfg in (PINGPONG, PINGPONG2):
                for units in ((0,) if M * N * K > 1e9 else (0, 1, 2, 3, 5)):
                    k = pingpong_kernel(cfg, p, units)
                    name = f"{cfg.function.removeprefix('wgmma_gemm_')}/{k.grid(M, N)[0] // cfg.cluster}"
                    out[name] = ref.check(k(A, B)).ok
            print(f"{p} {M}x{N}x{K}", out, flush=True)


def host_launch_us(problem, n=100):
    """Microseconds of Python per launch (the GPU queue absorbs them while it is not full)."""
    gpu.cuda().Context.synchronize()
    start = time.perf_counter()
    for _ in range(n):
        problem.launch()
    spent = time.perf_counter() - start
    gpu.cuda().Context.synchronize()
    return spent / n * 1e6


def timings(sizes=((2048,) * 3, (4096,) * 3, (6144, 4096, 2048), (8192,) * 3)):
    P = "BF16"
    cp = bench.cupy_or_none()
    if cp is None:
        print("no CuPy: no cuBLAS baseline")
        return
    A, B = verify.random_operands(4096, 4096, 4096, seed=0)
    run, _ = precisions._cublas_call(cp, A, B, P)
    start = time.monotonic()
    while time.monotonic() - start < 1.5:            # clocks up before the first size is measured
        for _ in range(20):
            run()
        cp.cuda.Device().synchronize()
    ks = {"tmastore": tma.hopper_kernel(tma.GEMM_TMA_STORE, precision=P), "pingpong": pingpong_kernel(PINGPONG, P),
          "pingpong2": pingpong_kernel(PINGPONG2, P)}
    for M, N, K in sizes:
        A, B = verify.random_operands(M, N, K, seed=1)
        run, c = precisions._cublas_call(cp, A, B, P)
        run(); cp.cuda.Device().synchronize()
        expected = cp.asnumpy(c)
        fl = 2.0 * M * N * K
        tc = timing.time_gpu(run, warmup=1, repeat=10).median_s
        print(f"{M}x{N}x{K} cuBLAS {fl / tc / 1e12:.1f} TFLOP/s", flush=True)
        for name, k in ks.items():
            pr = k.on_device(A, B)
            pr.launch()
            C = pr.result()
            t = timing.time_gpu(pr.launch, warmup=1, repeat=10).median_s
            diff = np.max(np.abs(C - expected)) / max(np.max(np.abs(expected)), 1e-30)
            extra = f"  [{spread(k, M, N)}]" if name.startswith("pingpong") else ""
            print(f"   {name:9s} {fl / t / 1e12:7.1f} {100 * tc / t:6.1f}%  max|C - cuBLAS|/max|C| {diff:.1e}  "
                  f"launch {host_launch_us(pr):.0f} us of Python{extra}", flush=True)
            del pr


if __name__ == "__main__":
    if "--model" in sys.argv:
        model_checks()
        sys.exit(0)
    gpu.cuda()
    print("GPU:", device.current().name, device.current().sms, "SMs", flush=True)
    if "--probe" in sys.argv:
        probe()
        sys.exit(0)
    correctness()
    timings()
