# Chapter 9 candidate, not yet run on a GPU: a stream-K tail for the persistent kernel (drafts/09_streamk.cu, which
# includes kernels/09_hopper.cu). Three modes:
#   --model   no GPU: checks the split (StreamK, the same arithmetic as the kernel's) for many sizes and grids:
#             every (tile, K-tile) computed once, one owner per tile, the owner's waits name exactly the other
#             portions of its tile, at most one contribution per unit and published before its unit waits, and a
#             simulated run of the units never stalls.
#   --probe   each new kernel once, small, whole tiles and then a forced shared tail (run it under `timeout 60`);
#   --timeouts  timing only, with and without the time-out checks compiled in (-DSTREAMK_TIMEOUT=0);
#   (none)    correctness at awkward sizes and grids against the float64 reference, then timing against cuBLAS,
#             paired stores and the copy-engine epilogue at 4 sizes (under `timeout 300`).
# Every mbarrier and flag wait in the new kernels gives up after a second (__trap): a mistake fails the launch, no hang.
import ctypes, dataclasses, sys, time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))      # the course's gemmlab, run from anywhere
from gemmlab import compile_units, device, gpu, precisions, tensor_gemm, timing, tma, verify
from gemmlab import bench, hopper

SOURCE = Path(__file__).resolve().with_name("09_streamk.cu")


# [streamk_split] the same arithmetic as StreamK in drafts/09_streamk.cu: change both together.
class StreamK:
    def __init__(self, tiles, k_tiles, units, unit):
        self.k, self.units = k_tiles, units
        rounds = tiles // units
        self.whole = tiles if tiles % units == 0 else (rounds - 1 if rounds > 1 else 0) * units
        self.shared = (tiles - self.whole) * self.k
        self.t = unit
        self.i = self.begin(unit)
        self.end = self.begin(unit + 1)

    def begin(self, u):
        return self.shared * u // self.units

    def next(self):
        """(tile, kb, ke), or None once the unit is done."""
        if self.t < self.whole:
            tile, self.t = self.t, self.t + self.units
            return tile, 0, self.k
        if self.i >= self.end:
            return None
        tile = self.whole + self.i // self.k
        kb = self.i % self.k
        ke = kb + (self.end - self.i) if self.end - self.i < self.k - kb else self.k
        self.i += ke - kb
        return tile, kb, ke

    def next_contributor(self, h, tile):
        tile_end = (tile - self.whole + 1) * self.k
        h += 1
        while h < self.units and self.begin(h) < tile_end:
            if self.begin(h) != self.begin(h + 1):
                return h
            h += 1
        return self.units


def waits(walk, unit, tile, ke):
    """The units whose slots the owner of `tile` adds (its portion ends at ke), as the kernel's loop finds them."""
    out = []
    if ke < walk.k:
        h = walk.next_contributor(unit, tile)
        while h < walk.units:
            out.append(h)
            h = walk.next_contributor(h, tile)
    return out
# [/streamk_split]


def plan(tiles, k_tiles, units):
    """Each unit's portions, in the order it computes them."""
    out = []
    for u in range(units):
        walk, mine = StreamK(tiles, k_tiles, units, u), []
        while (p := walk.next()) is not None:
            mine.append(p)
        out.append(mine)
    return out


def check_split(tiles, k_tiles, units):
    """Assert everything the kernel relies on for one (T, k, G); return the most K-tiles any unit computes."""
    portions = plan(tiles, k_tiles, units)
    seen = np.zeros((tiles, k_tiles), np.int32)
    owners = np.zeros(tiles, np.int32)
    contributions = {}                                   # unit -> (tile, kb, ke) it publishes
    events = []                                          # per unit: ("publish",) and ("wait", h) in program order
    for u, mine in enumerate(portions):
        ev = []
        for n, (tile, kb, ke) in enumerate(mine):
            assert 0 <= tile < tiles and 0 <= kb < ke <= k_tiles, (u, tile, kb, ke)
            seen[tile, kb:ke] += 1
            if kb > 0:                                   # only the first portion after the unit's whole tiles
                assert n == StreamK(tiles, k_tiles, units, u).whole // units, (u, n)
                assert u not in contributions, f"unit {u} publishes twice: one slot per block is not enough"
                contributions[u] = (tile, kb, ke)
                ev.append(("publish",))
            else:
                assert ke == k_tiles or n == len(mine) - 1, (u, n)     # an owner that waits: the unit's last portion
                owners[tile] += 1
                ev += [("wait", h) for h in waits(StreamK(tiles, k_tiles, units, u), u, tile, ke)]
        events.append(ev)
    assert (seen == 1).all(), "a (tile, K-tile) computed twice or never"
    assert (owners == 1).all(), "a tile with no owner or two"
    # The owner's waits name exactly the contributions to its tile, and together they cover the tile's K-tiles.
    for u, mine in enumerate(portions):
        for tile, kb, ke in mine:
            if kb == 0:
                hs = waits(StreamK(tiles, k_tiles, units, u), u, tile, ke)
                assert sorted(hs) == sorted(h for h, (t, _, _) in contributions.items() if t == tile), (u, tile)
                cover = [(kb, ke)] + sorted((contributions[h][1], contributions[h][2]) for h in hs)
                assert all(a[1] == b[0] for a, b in zip(cover, cover[1:])) and cover[-1][1] == k_tiles, cover
    # Waits go to later units only, for units that publish; and depth one: a unit publishes before its first wait.
    for u, ev in enumerate(events):
        kinds = [e[0] for e in ev]
        if "publish" in kinds and "wait" in kinds:
            assert kinds.index("publish") < kinds.index("wait"), f"unit {u} waits before it publishes"
        assert all(e[1] in contributions and e[1] > u for e in ev if e[0] == "wait")
    assert runs_to_the_end(events), f"deadlock at tiles={tiles} k={k_tiles} units={units}"
    return max(sum(ke - kb for _, kb, ke in mine) for mine in portions)


def runs_to_the_end(events):
    """Whether all units, resident at once, each going as far as it can, finish: no cycle of waits."""
    pos, published = [0] * len(events), set()
    while any(p < len(ev) for p, ev in zip(pos, events)):
        moved = False
        for u, ev in enumerate(events):
            while pos[u] < len(ev) and (ev[pos[u]][0] == "publish" or ev[pos[u]][1] in published):
                if ev[pos[u]][0] == "publish":
                    published.add(u)
                pos[u] += 1
                moved = True
        if not moved:
            return False
    return True


def tiles_of(M, N, cluster):
    return -(-M // (128 * cluster)) * -(-N // 256)


def model_checks():
    # The stall check itself: two units that each wait for the other before publishing never finish.
    assert not runs_to_the_end([[("wait", 1), ("publish",)], [("wait", 0), ("publish",)]])
    assert runs_to_the_end([[("publish",), ("wait", 1)], [("publish",), ("wait", 0)]])
    rng = np.random.default_rng(0)
    count = 0
    cases = [(t, k, g) for t in range(1, 40) for k in (1, 2, 3, 7, 64) for g in range(1, 40)]
    cases += [(int(rng.integers(1, 2200)), int(rng.integers(1, 140)), int(rng.integers(1, 133))) for _ in range(1500)]
    for M, N, K in ((4096, 4096, 4096), (8192, 8192, 8192), (6144, 4096, 2048), (2048, 2048, 2048), (1000, 2000, 777)):
        for cluster, gs in ((1, (132, 131, 120, 114)), (2, (66, 64, 60, 57))):
            cases += [(tiles_of(M, N, cluster), -(-K // 64), min(g, tiles_of(M, N, cluster))) for g in gs]
    for tiles, k, g in cases:
        most = check_split(tiles, k, g)
        # Balance: no unit computes more than one K-tile beyond the even share of the tail, on top of its whole tiles.
        whole = StreamK(tiles, k, g, 0).whole
        assert most <= whole // g * k + -(-(tiles - whole) * k // g), (tiles, k, g, most)
        count += 1
    print(f"split model: {count} (tiles, K-tiles, units) cases: every K-tile once, one owner per tile, waits = "
          "contributions, publish before wait, no stall")
    lines = same_as_cuda(cases[::7] + cases[-40:])
    print("kernel's StreamK compiled for the host:", "nvcc not found, not compared" if lines is None else
          f"the same {lines:,} portions and contributors as the model")
    for M, N, K in ((2048,) * 3, (4096,) * 3, (6144, 4096, 2048), (8192,) * 3):
        for cluster, g in ((1, 132), (2, 66)):
            print(f"   {M}x{N}x{K}, cluster {cluster}:", describe(M, N, K, cluster, min(g, tiles_of(M, N, cluster))))


HARNESS = r"""
#include "09_streamk.cu"
#include <cstdio>
int main()      // for each "tiles k units" line: every unit's portions, and an owner's contributors after them
{
    int tiles, k, units;
    while (std::scanf("%d %d %d", &tiles, &k, &units) == 3)
        for (int u = 0; u < units; ++u) {
            StreamK w(tiles, k, units, u);
            int t, kb, ke;
            while (w.next(t, kb, ke)) {
                std::printf("%d %d %d %d", u, t, kb, ke);
                if (kb == 0 && ke < k)
                    for (int h = w.next_contributor(u, t); h < units; h = w.next_contributor(h, t))
                        std::printf(" %d", h);
                std::printf("\n");
            }
        }
}
"""


def same_as_cuda(cases):
    """Compile the kernel file's StreamK for the host (nvcc, no GPU needed) and compare its portions and contributors
    with this model's, case by case; None where nvcc is missing."""
    import shutil, subprocess, tempfile
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return None
    expected = []
    for tiles, k, g in cases:
        for u, mine in enumerate(plan(tiles, k, g)):
            for tile, kb, ke in mine:
                hs = waits(StreamK(tiles, k, g, u), u, tile, ke) if kb == 0 else []
                expected.append(" ".join(map(str, (u, tile, kb, ke, *hs))))
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "harness.cu").write_text(HARNESS)
        subprocess.run([nvcc, "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", f"-I{SOURCE.parent}", "-o",
                        f"{tmp}/harness", f"{tmp}/harness.cu"], check=True, timeout=300)
        out = subprocess.run([f"{tmp}/harness"], input="".join(f"{t} {k} {g}\n" for t, k, g in cases), text=True,
                             capture_output=True, check=True, timeout=60).stdout.split("\n")[:-1]
    assert out == expected, next((a, b) for a, b in zip(out + [""], expected + [""]) if a != b)
    return len(out)


def describe(M, N, K, cluster, units):
    """The split at this size in one line, and the busiest unit's work against whole tiles alone."""
    tiles, k = tiles_of(M, N, cluster), -(-K // 64)
    walk, most = StreamK(tiles, k, units, 0), check_split(tiles, k, units)
    return (f"{tiles} {'pairs' if cluster > 1 else 'tiles'} on {units} units: {walk.whole} whole, "
            f"{tiles - walk.whole} shared ({walk.shared / units:.1f} K-tiles each); busiest unit "
            f"{most / k:.2f} tiles of work, {-(-tiles // units)} without the split")


# ---- the GPU side
UNIT = compile_units.CompileUnit(SOURCE, arch_specific="sm_90a")
UNIT_NO_TIMEOUT = compile_units.CompileUnit(SOURCE, defines=(("STREAMK_TIMEOUT", 0),), arch_specific="sm_90a")
SLOT_FLOATS = 2 * 64 * 256                                  # WS_CONSUMERS * STREAMK_SLOT: one block's slots
STREAMK = replace(tma.GEMM_TMA_STORE, function="wgmma_gemm_streamk")
STREAMK1 = replace(tma.GEMM_TMA_STORE, function="wgmma_gemm_streamk1", cluster=1)


class Workspace:
    """One set of slots and flags for every stream-K launch of this process, with one epoch counter: a flag holds the
    epoch of the launch that raised it, so a counter shared by every kernel that uses these flags never repeats."""

    def __init__(self):
        from pycuda import gpuarray
        blocks = device.current().sms                      # no grid here has more blocks than SMs
        self.partials = gpuarray.zeros(blocks * SLOT_FLOATS, np.float32)
        self.flags = gpuarray.zeros(blocks * 2, np.uint32)
        self.blocks, self.epoch = blocks, 0

    def next_epoch(self):
        self.epoch = self.epoch % 0xFFFFFFFF + 1            # never 0, the flags' first value
        return self.epoch


_WORKSPACE = []


@dataclass(frozen=True)
class StreamKKernel(tma.HopperGemmKernel):
    units: int = 0
    """At most this many units (blocks, or clusters); 0: as many as the GPU holds at once, at most the tiles."""

    def grid(self, M, N):
        c = self.config
        room = device.current().sms if c.cluster == 1 else tma._active_clusters(self)
        want = self.units or tiles_of(M, N, c.cluster)
        return (c.cluster * max(1, min(room, want)), 1, 1)   # never more than fit at once: the waits need it

    def launch(self, a_ptr, b_ptr, c_ptr, M, N, K, extra_shared=0):
        c = self.config
        key = (c, self.precision, int(a_ptr), int(b_ptr), int(c_ptr), M, N, K)
        if key not in tma._MAPS:
            stride = tensor_gemm.padded_length(K, self.precision) * 2
            maps = [hopper.matrix_map(rows, K, self.precision, box, c.BK, "128B", stride)
                    for rows, box in ((M, c.BM), (N, c.BN // c.cluster))]
            maps.append(hopper.matrix_map(M, N, "FP32", *tma.C_BOX, "128B", tma.c_columns(c, N) * 4))
            tma._MAPS[key] = [tma._aligned_copy(tma.encode(m, int(p))) for m, p in zip(maps, (a_ptr, b_ptr, c_ptr))]
        if not _WORKSPACE:
            _WORKSPACE.append(Workspace())
        ws = _WORKSPACE[0]
        grid = self.grid(M, N)
        assert grid[0] <= ws.blocks
        args = [ctypes.c_uint64(int(c_ptr)), ctypes.c_int(M), ctypes.c_int(N), ctypes.c_int(K),
                ctypes.c_uint64(int(ws.partials.gpudata)), ctypes.c_uint64(int(ws.flags.gpudata)),
                ctypes.c_uint(ws.next_epoch())]
        tma._launch(self.compiled().driver_function(self.entry_point, c.shared), grid, c.shared,
                    [*(address for _, address in tma._MAPS[key]), *(ctypes.addressof(x) for x in args)], c.threads,
                    sync=False)


def streamk_kernel(config, precision="BF16", units=0, unit=UNIT):
    k = tma.hopper_kernel(config, precision=precision)
    fields = {f.name: getattr(k, f.name) for f in dataclasses.fields(k)}
    return StreamKKernel(**{**fields, "source": unit, "name": f"{k.name}_u{units}" if units else k.name}, units=units)


def units_of(kernel, M, N):
    return kernel.grid(M, N)[0] // kernel.config.cluster


def run_checked(kernel, M, N, K, seed):
    A, B = verify.random_operands(M, N, K, seed=seed)
    C = kernel(A, B)
    return tensor_gemm.reference(A, B, kernel.precision).check(C)


def probe():
    for cfg in (STREAMK1, STREAMK):
        for p in ("BF16", "FP16"):
            for (M, N, K), units in (((300, 520, 256), 0), ((300, 520, 256), 4), ((1024, 1024, 1024), 0),
                                     ((1024, 1024, 1024), 6)):
                k = streamk_kernel(cfg, p, units)
                start = time.monotonic()
                try:
                    verdict = run_checked(k, M, N, K, seed=M + units)
                except Exception as e:     # a trap (a wait gave up) or a fault: the context is gone, stop here
                    print(f"{k.entry_point} {M}x{N}x{K} units={units}: FAILED ({type(e).__name__}: {e})", flush=True)
                    sys.exit(1)
                print(f"{k.entry_point} {M}x{N}x{K}, {describe(M, N, K, cfg.cluster, units_of(k, M, N)).split(';')[0]}: "
                      f"{time.monotonic() - start:.1f} s, correct: {verdict.ok}", flush=True)


def correctness():
    P = "BF16"
    for M, N, K in ((1, 4, 1), (33, 20, 9), (300, 520, 1234), (1000, 2000, 777), (4096, 4096, 4096)):
        big = M * N * K > 1e9
        A, B = verify.random_operands(M, N, K, seed=M + N + K)
        ref = tensor_gemm.reference(A, B, P)
        out = {"tmastore": ref.check(tma.hopper_kernel(tma.GEMM_TMA_STORE, precision=P)(A, B)).ok}
        for cfg in (STREAMK, STREAMK1):
            for units in ((0,) if big else (0, 1, 2, 3, 5, 7, 16, 61)):
                k = streamk_kernel(cfg, P, units)
                out[f"{cfg.function.removeprefix('wgmma_gemm_')}/{units_of(k, M, N)}"] = ref.check(k(A, B)).ok
        print(f"{M}x{N}x{K}", out, flush=True)
    for cfg in (STREAMK, STREAMK1):                  # FP16 once, with a shared tail; then different data again
        for seed in (1, 2):
            k = streamk_kernel(cfg, "FP16", 5)
            print(f"FP16 {k.entry_point} 300x520x1234 on 5 units, seed {seed}:", run_checked(k, 300, 520, 1234, seed).ok,
                  flush=True)


def timings(sizes=((2048,) * 3, (4096,) * 3, (6144, 4096, 2048), (8192,) * 3), without_timeouts=False):
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
    ks = {"pairs": tma.hopper_kernel(tma.GEMM_PAIRS, precision=P), "tmastore": tma.hopper_kernel(tma.GEMM_TMA_STORE, precision=P),
          "streamk": streamk_kernel(STREAMK, P), "streamk1": streamk_kernel(STREAMK1, P)}
    if without_timeouts:
        ks.update({"sk_plain": streamk_kernel(STREAMK, P, unit=UNIT_NO_TIMEOUT),
                   "sk1_plain": streamk_kernel(STREAMK1, P, unit=UNIT_NO_TIMEOUT)})
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
            C2 = pr.result()                           # after many launches: the epochs kept the partials apart
            diff = max(np.max(np.abs(C - expected)), np.max(np.abs(C2 - expected))) / max(np.max(np.abs(expected)), 1e-30)
            extra = f"  [{describe(M, N, K, k.config.cluster, units_of(k, M, N))}]" if name.startswith("streamk") else ""
            print(f"   {name:9s} {fl / t / 1e12:7.1f} {100 * tc / t:6.1f}%  max|C - cuBLAS|/max|C| {diff:.1e}{extra}", flush=True)
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
    if "--timeouts" in sys.argv:        # what the time-out checks cost: the same kernels with plain waits
        timings(((2048,) * 3, (4096,) * 3, (8192,) * 3), without_timeouts=True)
        sys.exit(0)
    correctness()
    timings()
