# Issue #18 at 4096^3 at equal power. cuBLAS's kernel moves 18% fewer bytes through the L2 than chapter 9's last step
# for the same product (1.113 against 1.361 GB, results/ncu-h200-hopper-4096.csv), and under the H200's 700 W limit
# bytes cost clock. The last step's clusters of two blocks share each B tile (each block's copy engine fetches half of
# it into both), so per 128 x 256 tile a block reads all of its A tile (64 KiB per K... 1 MB per tile at 4096^3) and
# half of B (1 MB): 2 MB. Clusters of four, 2 x 2 tiles, can share both: the two blocks of a row of tiles share A,
# the two of a column share B, and each block fetches half of each, 1.5 MB per tile, 25% less than the last step
# and about 10% less than cuBLAS's 1.66 MB.
#
# The kernel is ws_gemm from kernels/09_hopper.cu with CLUSTER == 4 allowed (generated here, nothing kept): block
# rank r of a cluster takes tile row r % 2 and tile column r / 2 of the cluster's 2 x 2; its producer copies rows
# 64 * (r / 2) .. + 64 of its A tile into itself and rank r ^ 2 (same row of tiles) and columns 128 * (r % 2) .. + 128
# of its B tile into itself and rank r ^ 1 (same column), with multicast masks; a stage is empty once the consumer
# warps of the three blocks that write into it are done (24 arrivals: this block's, r ^ 1's and r ^ 2's); the
# epilogue through the copy engine as in the last step. The host side: tensor maps with boxes of 64 rows of A and 128
# of B, a persistent grid of 4 x min(clusters the GPU holds at once, 2 x 2 groups of tiles).
#
# Run on a Hopper GPU with CuPy (a wrong count hangs, so correctness first, in its own short process):
#   timeout 120 python3 drafts/09_cluster4_experiment.py --check
#   timeout 300 python3 drafts/09_cluster4_experiment.py --time [--sizes 4096 8192]
#   python3 drafts/09_cluster4_experiment.py --compile        (no GPU: ptxas's registers and spills for sm_90a)
#   python3 drafts/09_cluster4_experiment.py --model          (no GPU: the barrier protocol under random schedules)
import argparse, ctypes, sys, tempfile
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gemmlab import compile_units, compiler, gpu, hopper, precisions, tensor_gemm, timing, tma, verify
from drafts.variants import cuda_and_cupy, kernel_variant, recast

HELPER_AFTER = "// [/cluster_helpers]\n"
MASKED_COPY = '''__device__ __forceinline__ void tma_load_2d_mask(void* dst, const CUtensorMap* map, int x, int y, uint64_t* bar,
                                                 unsigned short mask)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;"
                 ::"r"(tma_smem(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(tma_smem(bar)), "h"(mask)
                 : "memory");
}
'''
EDITS = [
    (HELPER_AFTER, HELPER_AFTER + MASKED_COPY),
    ("        barrier_arrive_in(empty, rank ^ 1);\n",
     "        barrier_arrive_in(empty, rank ^ 1);\n    if (CLUSTER == 4)\n        barrier_arrive_in(empty, rank ^ 2);\n"),
    ('    static_assert(CLUSTER == 1 || (CLUSTER == 2 && PERSISTENT), "clusters of two, in the persistent kernel only");\n',
     '    static_assert(CLUSTER == 1 || ((CLUSTER == 2 || CLUSTER == 4) && PERSISTENT), "clusters: persistent only");\n'
     "    constexpr int CM = CLUSTER == 4 ? 2 : CLUSTER, CN = CLUSTER == 4 ? 2 : 1;   // the cluster's tiles: rows, columns\n"),
    ("    const int tiles_m = (M + WS_BM * CLUSTER - 1) / (WS_BM * CLUSTER), tiles_n = (N + WS_BN - 1) / WS_BN;\n",
     "    const int tiles_m = (M + WS_BM * CM - 1) / (WS_BM * CM), tiles_n = (N + WS_BN * CN - 1) / (WS_BN * CN);\n"),
    ("            barrier_init_count(&empty[s], WS_CONSUMERS * 4 * CLUSTER);",
     "            barrier_init_count(&empty[s], WS_CONSUMERS * 4 * (CLUSTER == 4 ? 3 : CLUSTER));"),
    ("                const int m0 = (tile.x * CLUSTER + rank) * WS_BM, n0 = tile.y * WS_BN;\n",
     "                const int m0 = (tile.x * CM + rank % CM) * WS_BM, n0 = (tile.y * CN + rank / CM) * WS_BN;\n"),
    ("            const int m0 = (tile.x * CLUSTER + rank) * WS_BM, n0 = tile.y * WS_BN;\n",
     "            const int m0 = (tile.x * CM + rank % CM) * WS_BM, n0 = (tile.y * CN + rank / CM) * WS_BN;\n"),
    ("                    tma_load_2d(a_tiles + s * A_STAGE, a_map, kt * WS_BK, m0, &full[s]);\n"
     "                    if (CLUSTER == 1) {\n",
     "                    if (CLUSTER == 4) {                              // halves of A (row peer) and of B (column peer)\n"
     "                        const int col = rank / 2, row = rank % 2;\n"
     "                        tma_load_2d_mask(a_tiles + s * A_STAGE + col * 64 * 128, a_map, kt * WS_BK, m0 + col * 64,\n"
     "                                         &full[s], static_cast<unsigned short>((1u << rank) | (1u << (rank ^ 2))));\n"
     "                        tma_load_2d_mask(b_tiles + s * B_STAGE + row * 128 * 128, bt_map, kt * WS_BK, n0 + row * 128,\n"
     "                                         &full[s], static_cast<unsigned short>((1u << rank) | (1u << (rank ^ 1))));\n"
     "                        continue;\n"
     "                    }\n"
     "                    tma_load_2d(a_tiles + s * A_STAGE, a_map, kt * WS_BK, m0, &full[s]);\n"
     "                    if (CLUSTER == 1) {\n"),
]
ENTRY = '''
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1) __cluster_dims__(4, 1, 1)
wgmma_gemm_c4_bf16(GEMM_TMA_STORE_PARAMS) { ws_gemm<true, true, 0, false, 4>(&a_map, &bt_map, C, M, N, K, &c_map); }
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1) __cluster_dims__(4, 1, 1)
wgmma_gemm_c4_f16(GEMM_TMA_STORE_PARAMS) { ws_gemm<true, true, 0, true, 4>(&a_map, &bt_map, C, M, N, K, &c_map); }
'''
CONFIG = replace(tma.GEMM_TMA_STORE, function="wgmma_gemm_c4", cluster=4)


def source() -> str:
    return kernel_variant(tma.SOURCE, *EDITS) + ENTRY


@dataclass(frozen=True)
class Cluster4Kernel(tma.HopperGemmKernel):
    """The 2 x 2 cluster kernel: its grid and its tensor maps' boxes differ from the chapter's clusters of two."""

    def grid(self, M: int, N: int) -> tuple[int, int, int]:
        work = -(-M // (2 * CONFIG.BM)) * -(-N // (2 * CONFIG.BN))
        return (4 * max(1, min(tma._active_clusters(self), work)), 1, 1)

    def launch(self, a_ptr, b_ptr, c_ptr, M: int, N: int, K: int, extra_shared: int = 0) -> None:
        c = self.hopper_config
        key = (c, self.precision, int(a_ptr), int(b_ptr), int(c_ptr), M, N, K)
        if key not in tma._MAPS:
            stride = tensor_gemm.padded_length(K, self.precision) * 2
            maps = [hopper.matrix_map(rows, K, self.precision, box, c.BK, "128B", stride)
                    for rows, box in ((M, c.BM // 2), (N, c.BN // 2))]
            maps.append(hopper.matrix_map(M, N, "FP32", c.c_box_rows, tma.C_BOX[1], "128B", tma.c_columns(c, N) * 4))
            tma._MAPS[key] = [tma._aligned_copy(tma.encode(m, int(p))) for m, p in zip(maps, (a_ptr, b_ptr, c_ptr))]
        args = [ctypes.c_uint64(int(c_ptr)), ctypes.c_int(M), ctypes.c_int(N), ctypes.c_int(K)]
        tma._launch(self.compiled().driver_function(self.entry_point, c.shared), self.grid(M, N), c.shared,
                    [*(address for _, address in tma._MAPS[key]), *(ctypes.addressof(x) for x in args)], c.threads,
                    sync=False)


def kernels(tmp: Path, precision: str) -> dict:
    path = tmp / "09_hopper_c4.cu"
    path.write_text(source())
    unit = compile_units.CompileUnit(path, arch_specific="sm_90a")
    last = tma.hopper_kernel(tma.GEMM_TMA_STORE, precision=precision)
    c4 = recast(last, Cluster4Kernel, name=f"c4_{precision}", function=CONFIG.function, hopper_config=CONFIG, source=unit)
    return {"last": last, "c4": c4}


def check():
    gpu.cuda()
    with tempfile.TemporaryDirectory() as tmp:
        for p in tma.PRECISIONS:
            ks = kernels(Path(tmp), p)
            for M, N, K in ((1, 1, 1), (300, 520, 1234), (1000, 2000, 777), (256, 512, 64), (4096, 4096, 4096)):
                A, B = verify.random_operands(M, N, K, seed=M + K)
                ref = tensor_gemm.reference(A, B, p)
                print(f"{p} {M}x{N}x{K}:", {n: ref.check(k(A, B)).ok for n, k in ks.items()}, flush=True)


def time_them(sizes):
    cp = cuda_and_cupy()
    with tempfile.TemporaryDirectory() as tmp:
        for p in tma.PRECISIONS:
            ks = kernels(Path(tmp), p)
            for n in sizes:
                A, B = verify.random_operands(n, n, n, seed=1)
                run, _ = precisions._cublas_call(cp, A, B, p)
                problems = {name: k.on_device(A, B) for name, k in ks.items()}
                times = timing.interleaved({"cuBLAS": run, **{name: q.launch for name, q in problems.items()}})
                for name in problems:
                    median, low, high = times.ratio(name, "cuBLAS")
                    print(f"{p} {n}^3 {name:5s} {median:6.1f}% of cuBLAS ({low:.1f}-{high:.1f}), interleaved", flush=True)
                del problems


def compile_report():
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "09_hopper_c4.cu"
        path.write_text(source())
        for e in compiler.ptxas_report(path.read_text(), "sm_90a", ()):
            if "tmastore" in e.function or "c4" in e.function:
                print(e)


def model(rounds: int = 300, seed: int = 0) -> str | None:
    """The 2 x 2 cluster's ring without a GPU: four blocks, each a producer and a consumer (standing for the block's
    eight consumer warps: eight arrivals per release), around rings of full and empty mbarriers, under random
    schedules in which copies land and wgmma finish in any order. A copy lands in the same stage of each block its
    mask names and counts against that block's full barrier there. Asserts that no stage is overwritten while a block
    still reads it, that a consumer sees all of its K-tile, and that nothing stalls; returns what went wrong, or None."""
    import random
    rng = random.Random(seed)
    for _ in range(rounds):
        stages, k_total = rng.choice((2, 3, 4)), rng.randint(0, 13)
        problem = _run_cluster4(stages, k_total, rng, rng.choice((0.05, 0.5, 0.95)))
        if problem:
            return f"{problem} (stages {stages}, K-tiles {k_total})"
    return None


def _run_cluster4(stages, k_total, rng, engine_bias):
    sys.path.insert(0, str(ROOT / "tests"))
    from test_pingpong_protocol import Barrier, schedule    # chapter 9's mbarrier model and random scheduler
    A_HALF, B_HALF = 8, 16                                  # KiB: half of a stage's A tile, half of its B tile
    full = [[Barrier(1) for _ in range(stages)] for _ in range(4)]
    empty = [[Barrier(8 * 3) for _ in range(stages)] for _ in range(4)]  # the warps of 3 blocks, as the kernel
    landed = [[(None, 0)] * stages for _ in range(4)]       # per block and stage: (K-tile, KiB of it landed)
    reading = [set() for _ in range(4)]                     # stages a block's wgmma still read
    copies = []

    def producer(r):
        yield lambda: True
        for it in range(k_total):
            s, n = it % stages, it // stages
            if it >= stages:
                yield lambda: empty[r][s].passes((n - 1) & 1)
            full[r][s].arrive(tx=2 * A_HALF + 2 * B_HALF)
            copies.append((it, s, A_HALF, (r, r ^ 2)))       # this block's half of A, into it and its row neighbour
            copies.append((it, s, B_HALF, (r, r ^ 1)))       # its half of B, into it and its column neighbour

    def consumer(r):
        yield lambda: True
        for it in range(k_total):
            s, n = it % stages, it // stages
            yield lambda: full[r][s].passes(n & 1)
            assert landed[r][s] == (it, 2 * A_HALF + 2 * B_HALF), f"block {r} read stage {s} holding {landed[r][s]}"
            reading[r].add(s)
            yield lambda: s not in reading[r]                   # wait_group 0: its wgmma are done
            for peer in (r, r ^ 1, r ^ 2):                      # release: this block, and the two that write into it
                for _ in range(8):
                    empty[peer][s].arrive()

    def events():
        return [("copy", j) for j in range(len(copies))] + [("mma", r) for r in range(4) if reading[r]]

    def fire(event):
        kind, what = event
        if kind == "copy":
            it, s, kib, targets = copies.pop(what)
            for t in targets:
                assert s not in reading[t], f"stage {s} of block {t} overwritten while its wgmma read it"
                got = landed[t][s][1] if landed[t][s][0] == it else 0
                landed[t][s] = (it, got + kib)
                full[t][s].complete_tx(kib)
        else:
            reading[what].clear()

    agents = [producer(r) for r in range(4)] + [consumer(r) for r in range(4)]
    return schedule(agents, events, fire, rng, engine_bias)

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--time", action="store_true")
    mode.add_argument("--compile", action="store_true")
    mode.add_argument("--model", action="store_true", help="the barrier protocol under random schedules, no GPU")
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    args = parser.parse_args()
    if args.model:
        print(model() or "the model of the 2 x 2 ring: no overwrite, no partial read, no stall")
    else:
        compile_report() if args.compile else check() if args.check else time_them(args.sizes)
