"""gemmlab.runtime.tensor_maps and gemmlab.gemm.wgmma on a Hopper GPU: the driver encodes exactly the tensor maps that gemmlab.models.hopper's rules accept
(each rule broken once, and valid maps of every swizzle and format), and a valid map is 128 bytes. On an older
GPU every call says, in one sentence, that tensor maps need Hopper."""

import sys
from pathlib import Path

import numpy as np
import pytest

from gemmlab.gemm import units, wgmma
from gemmlab.models import hopper
from gemmlab.runtime import compiler, device, gpu, tensor_maps

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from sass_claims import HOPPER_OPS, hopper_problems  # noqa: E402

CASES = [
    dict(rows=4096, cols=4096, dtype="BF16", box_rows=128, box_cols=64),
    dict(rows=4096, cols=4096, dtype="FP16", box_rows=256, box_cols=64),
    dict(rows=300, cols=520, dtype="FP16", box_rows=64, box_cols=32, swizzle="64B"),
    dict(rows=300, cols=520, dtype="FP32", box_rows=64, box_cols=8, swizzle="32B"),
    dict(rows=300, cols=520, dtype="TF32", box_rows=64, box_cols=32),
    dict(rows=64, cols=64, dtype="FP16", box_rows=64, box_cols=64, swizzle="none"),
    dict(rows=100, cols=1234, dtype="FP16", box_rows=64, box_cols=64),                       # row stride 2468 B
    dict(rows=100, cols=1024, dtype="FP16", box_rows=300, box_cols=64),                      # box > 256
    dict(rows=100, cols=1024, dtype="FP16", box_rows=64, box_cols=128),                      # 256 B > 128B swizzle
    dict(rows=100, cols=1024, dtype="FP16", box_rows=64, box_cols=4, swizzle="none"),        # 8-byte inner box
    dict(rows=100, cols=1024, dtype="FP16", box_rows=64, box_cols=64, address=8),            # misaligned start
]


def refuse_if_it_hangs(kernel: wgmma.HopperGemm, precision: str, hangs: set) -> None:
    if (kernel.function, precision) in hangs:
        pytest.fail(f"{kernel.function} ({precision}) hangs: a child process running it once at 300x520x200 never "
                    "finished, so it is not run in this one")


@pytest.fixture(scope="module")
def hopper_gpu():
    gpu.cuda()
    why = wgmma.hopper_kernel().unavailable_on(device.current())       # not a Hopper GPU, or not compiled for one
    if why:
        pytest.skip(why)


@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, (c["rows"], c["cols"], c["box_rows"], c["box_cols"])))
                         + f"-{c['dtype']}-{c.get('swizzle', '128B')}-{c.get('address', 0)}")
def test_the_driver_agrees_with_the_rules(case, hopper_gpu):
    from pycuda import gpuarray

    buf = gpuarray.zeros(4 * 4096 * 4096 + 64, np.uint8)
    m = hopper.matrix_map(**case)
    address = int(buf.gpudata) + m.address
    assert tensor_maps.driver_accepts(m, address) == (m.problems() == []), m.problems()
    if not m.problems():
        assert len(tensor_maps.encode(m, address)) == tensor_maps.TENSOR_MAP_BYTES


def test_older_gpus_are_told_in_one_sentence():
    gpu.cuda()
    if tuple(device.current().compute_capability) >= (9, 0):
        pytest.skip("this GPU has tensor maps")
    with pytest.raises(gpu.GPUUnavailable, match="tensor maps need compute capability 9.0"):
        tensor_maps.encode(hopper.matrix_map(64, 64, "FP16", 64, 64), 0)


IMAGES = [
    dict(shape=(256, 512), dtype="FP16", box=(128, 64), swizzle="128B", at=(0, 0)),
    dict(shape=(256, 512), dtype="BF16", box=(64, 64), swizzle="128B", at=(64, 128)),
    dict(shape=(100, 120), dtype="FP16", box=(64, 64), swizzle="128B", at=(96, 80)),     # past both edges: zeros
    dict(shape=(256, 512), dtype="FP16", box=(32, 32), swizzle="64B", at=(32, 16)),
    dict(shape=(256, 512), dtype="FP16", box=(32, 16), swizzle="32B", at=(0, 8)),
    dict(shape=(64, 64), dtype="FP32", box=(16, 32), swizzle="128B", at=(0, 0)),
    dict(shape=(64, 64), dtype="FP16", box=(8, 64), swizzle="none", at=(0, 0)),
]


@pytest.mark.parametrize("case", IMAGES, ids=lambda c: f"{c['dtype']}-{c['box'][0]}x{c['box'][1]}-{c['swizzle']}-at{c['at'][0]}_{c['at'][1]}")
def test_the_copy_engine_writes_the_modelled_image(case, hopper_gpu):
    """kernels/09_hopper.cu (tma_tile_image): one cp.async.bulk.tensor completed on an mbarrier writes exactly gemmlab.models.hopper's image."""
    rows, cols = case["shape"]
    values = np.arange(rows * cols, dtype=np.uint32).reshape(rows, cols)
    M = (values % 65521 + 1).astype(np.uint16) if case["dtype"] != "FP32" else values.view(np.float32)
    x, y = case["at"]
    got = tensor_maps.tile_image(M, case["dtype"], *case["box"], case["swizzle"], x=x, y=y)
    assert np.array_equal(got, hopper.box_image(M, *case["box"], case["swizzle"], x=x, y=y))


def test_hopper_code_says_why_it_cannot_compile_elsewhere():
    gpu.cuda()
    if compiler.target() == "sm_90":
        pytest.skip("this run compiles sm_90a code")
    with pytest.raises(gpu.GPUUnavailable, match="sm_90a instructions"):
        units.load(wgmma.SOURCE)


def test_one_warpgroup_multiplies_where_the_model_says(hopper_gpu):
    """kernels/09_hopper.cu (wgmma_probe): four wgmma.mma_async from swizzled shared memory; the registers, placed by
    gemmlab.models.hopper.wgmma_d_position, are A·B exactly (small integers are exact in BF16 and in FP32 sums)."""
    from gemmlab.measure import probes

    rng = np.random.default_rng(9)
    A, B = (rng.integers(-3, 4, (64, 64)).astype(np.float32) for _ in range(2))
    assert np.array_equal(probes.wgmma_product(A, B.T.copy()), A @ B)


def test_a_barrier_told_to_expect_more_bytes_never_completes(hopper_gpu):
    """Chapter 3's lesson on Hopper: an mbarrier that expects 16 bytes more than the copy brings waits forever.
    The watchdog stops the child; this process's GPU still works."""
    from gemmlab.runtime import watchdog

    code = ("import numpy as np; from gemmlab.runtime import tensor_maps; "
            "tensor_maps.tile_image(np.zeros((64, 64), np.uint16), 'FP16', 64, 64, expect_bytes=64 * 64 * 2 + 16)")
    hung = watchdog.run_isolated(code, timeout_s=30)
    assert hung.status == "timeout", str(hung)
    M = np.arange(64 * 64, dtype=np.uint16).reshape(64, 64)
    assert np.array_equal(tensor_maps.tile_image(M, "FP16", 64, 64), hopper.box_image(M, 64, 64))


@pytest.mark.parametrize("precision", wgmma.PRECISIONS)
@pytest.mark.parametrize("kernel", wgmma.GEMMS, ids=lambda k: k.function)
@pytest.mark.parametrize("M, N, K", [(1, 1, 1), (33, 17, 9), (64, 128, 64), (100, 200, 70), (256, 384, 512),
                                     (300, 520, 1000), (1000, 1000, 1000), (2000, 4100, 130)])
def test_the_wgmma_gemms_are_right_at_every_size(M, N, K, kernel, precision, hopper_gpu, hopper_hangs, dirty_memory):
    """The copy engine's zeros past the edges of A and B handle every size, and the ring's barriers every number of
    K-tiles (fewer than its stages, more, not a multiple) and, in the persistent kernels, more tiles of C than SMs
    (2000 x 4100: 272 tiles); checked against the product of the rounded inputs with chapter 1's FP32 bound."""
    from gemmlab.gemm import tensor_cores
    from gemmlab.models import verify

    refuse_if_it_hangs(kernel, precision, hopper_hangs)
    A, B = verify.random_operands(M, N, K, seed=M + N + K)
    C = wgmma.gemm(A, B, kernel, precision)
    verdict = tensor_cores.reference(A, B, precision).check(C)
    assert verdict.ok, f"{M}x{N}x{K}: {verdict}"


@pytest.mark.parametrize("precision", wgmma.PRECISIONS)
@pytest.mark.parametrize("kernel", wgmma.GEMMS, ids=lambda k: k.function)
def test_nan_and_inf_land_where_numpy_puts_them(kernel, precision, hopper_gpu, hopper_hangs):
    from gemmlab.gemm import tensor_cores
    from gemmlab.models import verify

    refuse_if_it_hangs(kernel, precision, hopper_hangs)
    A, B = verify.random_operands(150, 300, 100, seed=4)
    A[3, 5], A[140, 7], B[2, 11], B[9, 280] = np.nan, np.inf, -np.inf, np.inf
    C = wgmma.gemm(A, B, kernel, precision)
    with np.errstate(invalid="ignore"):
        R = tensor_cores.rounded(A, precision).astype(np.float64) @ tensor_cores.rounded(B, precision).astype(np.float64)
    assert np.array_equal(np.isnan(C), np.isnan(R)) and np.array_equal(np.isposinf(C), np.isposinf(R))
    assert np.array_equal(np.isneginf(C), np.isneginf(R)) and np.isnan(C).any() and np.isinf(C).any()


def test_the_ping_pong_turns_hold_for_any_number_of_tiles_per_block(hopper_gpu):
    """The persistent grid gives each block one or a few tiles at the sizes above; here the ping-pong kernel runs on
    forced grids of 1, 2 and 7 blocks, so that a block takes 15, 8 or 2-3 tiles (odd and even counts, consumer 1
    with one tile fewer than consumer 0), in a child process under the watchdog (a wrong turn would hang)."""
    from gemmlab.runtime import watchdog

    code = """
from dataclasses import dataclass, fields
from gemmlab.gemm import tensor_cores, wgmma
from gemmlab.models import verify

@dataclass(frozen=True)
class FewBlocks(wgmma.HopperGemmKernel):
    blocks: int = 1
    def grid(self, M, N):
        return (self.blocks, 1, 1)

for p in wgmma.PRECISIONS:
    base = wgmma.hopper_kernel(wgmma.GEMM_PINGPONG, precision=p)
    for M, N, K in ((300, 520, 256), (33, 17, 9), (640, 384, 700)):
        A, B = verify.random_operands(M, N, K, seed=M + K)
        ref = tensor_cores.reference(A, B, p)
        for blocks in (1, 2, 7):
            k = FewBlocks(**{f.name: getattr(base, f.name) for f in fields(base)}, blocks=blocks)
            assert ref.check(k(A, B)).ok, (p, M, N, K, blocks)
print("all right")
"""
    outcome = watchdog.run_isolated(code, timeout_s=120)
    assert outcome.status == "ok", str(outcome)


# For the child processes below: a persistent clustered kernel on a forced grid of `clusters` clusters of two.
FEW_CLUSTERS = """
from dataclasses import dataclass, fields
import numpy as np
from gemmlab.gemm import tensor_cores, wgmma
from gemmlab.models import verify

@dataclass(frozen=True)
class FewClusters(wgmma.HopperGemmKernel):
    clusters: int = 1
    def grid(self, M, N):
        return (2 * self.clusters, 1, 1)
"""


def test_the_stream_k_parts_meet_in_c_on_any_grid_in_one_order(hopper_gpu):
    """The persistent grid shares the last round out at some of the sizes above; here the stream-K kernel runs on
    forced grids of 1, 2, 3, 5 and 7 clusters (two, three or more parts to a tile, a unit's whole range inside one
    tile), and ten launches into the same C give the same bits (the parts are added in one order, and a flag of an
    earlier launch never counts). In a child process under the watchdog: a wrong wait would hang."""
    from gemmlab.runtime import watchdog

    code = FEW_CLUSTERS + """from gemmlab.models import streamk

cut = 0
for p in wgmma.PRECISIONS:
    base = wgmma.hopper_kernel(wgmma.GEMM_STREAMK, precision=p)
    for M, N, K in ((300, 520, 1234), (33, 17, 9), (1000, 2000, 777)):
        A, B = verify.random_operands(M, N, K, seed=M + K)
        ref = tensor_cores.reference(A, B, p)
        for clusters in (1, 2, 3, 5, 7):
            k = FewClusters(**{f.name: getattr(base, f.name) for f in fields(base)}, clusters=clusters)
            problem = k.on_device(A, B)
            problem.launch()
            first = problem.result()
            for _ in range(9):
                problem.launch()
            assert ref.check(first).ok and np.array_equal(first, problem.result()), (p, M, N, K, clusters)
            walk = streamk.StreamK(streamk.tiles_of(M, N), -(-K // 64), clusters, 0)
            cut += walk.shared > 0
assert cut >= 10, cut
print("all right")
"""
    outcome = watchdog.run_isolated(code, timeout_s=180)
    assert outcome.status == "ok", str(outcome)


def test_the_handed_over_boxes_land_on_any_grid(hopper_gpu):
    """The storer warps store a consumer's boxes in the order it hands them over, and the split kernel owes each
    tile's right half until the next tile's first two K-tiles (or stores it first where a tile has fewer). Here both
    run on forced grids of 1, 2 and 3 clusters, so that a block takes up to 12 tiles, with 1, 2, 3 and 12 K-tiles a
    tile, and twice into the same C. In a child process under the watchdog: a barrier counted wrong would hang."""
    from gemmlab.runtime import watchdog

    code = FEW_CLUSTERS + """
for p in wgmma.PRECISIONS:
    for config in (wgmma.GEMM_STORER, wgmma.GEMM_SPLIT):
        base = wgmma.hopper_kernel(config, precision=p)
        for M, N, K in ((640, 1000, 64), (640, 1000, 128), (300, 520, 130), (700, 900, 770), (33, 17, 9)):
            A, B = verify.random_operands(M, N, K, seed=M + K)
            ref = tensor_cores.reference(A, B, p)
            for clusters in (1, 2, 3):
                k = FewClusters(**{f.name: getattr(base, f.name) for f in fields(base)}, clusters=clusters)
                problem = k.on_device(A, B)
                problem.launch()
                first = problem.result()
                problem.launch()
                assert ref.check(first).ok and np.array_equal(first, problem.result()), (config.function, p, M, N, K, clusters)
print("all right")
"""
    outcome = watchdog.run_isolated(code, timeout_s=180)
    assert outcome.status == "ok", str(outcome)


def test_a_map_made_for_one_kernel_is_never_used_by_another(hopper_gpu):
    """v0 and the paired-stores kernel launched on the same device buffers, one after the other: each must get maps
    of its own boxes (with v0's 64 x 128 boxes the other's barrier would expect more bytes than arrive, and wait
    forever), so the run is a child process under the watchdog."""
    from gemmlab.runtime import watchdog

    code = """
from gemmlab.gemm import tensor_cores, wgmma
from gemmlab.models import verify
A, B = verify.random_operands(200, 300, 100, seed=5)
ref = tensor_cores.reference(A, B, "BF16")
problem = wgmma.hopper_kernel(wgmma.GEMM_V0).on_device(A, B)
for config in (wgmma.GEMM_V0, wgmma.GEMM_PAIRS, wgmma.GEMM_V0):
    problem.c.fill(0)
    wgmma.hopper_kernel(config).launch(problem.a.gpudata, problem.b.gpudata, problem.c.gpudata, 200, 300, 100)
    assert ref.check(problem.result()).ok, config.function
"""
    outcome = watchdog.run_isolated(code, timeout_s=60)
    assert outcome.status == "ok", str(outcome)


def test_the_warp_specialised_gemm_times_like_any_course_kernel(hopper_gpu):
    from gemmlab.measure import bench
    from gemmlab.models import verify

    A, B = verify.random_operands(2048, 2048, 2048, seed=2)
    r = bench.time_gemm(wgmma.hopper_kernel(), A, B, repeat=3)
    assert r.correct and r.precision == "BF16" and r.tflops > 1


def test_the_clustered_grid_fits_the_gpu_at_once(hopper_gpu):
    """The persistent grid of clusters: an even number of blocks, no more than the driver says fit at once (a second
    wave of clusters would double the time), and never more pairs of tiles than there are."""
    k = wgmma.hopper_kernel(wgmma.GEMM_CLUSTER)
    blocks = k.grid(8192, 8192)[0]
    assert k.grid(8192, 8192)[1:] == (1, 1) and blocks % 2 == 0 and 2 <= blocks <= device.current().sms
    assert k.grid(128, 256)[0] == 2                               # one pair of tiles (the second row is zeros)


@pytest.mark.parametrize("precision", wgmma.PRECISIONS)
def test_the_machine_code_multiplies_with_hgmma_and_never_spills(precision, hopper_gpu):
    """What the chapter says of the SASS: every GEMM of 09_hopper.cu multiplies with HGMMA (wgmma), copies with
    the tensor copy engine (UTMALDG), and uses no local memory; the copy-engine epilogue stores with UTMASTG and
    no thread stores to global memory (STG); the stream-K kernel also adds with the engine (UTMAREDG)."""
    compiled = units.load(wgmma.SOURCE)
    for config in wgmma.GEMMS:
        entry = wgmma.hopper_kernel(config, precision=precision).entry_point
        try:
            counts = compiler.opcode_counts(compiled.sass(entry), HOPPER_OPS)
        except compiler.SassUnavailable as exc:
            pytest.skip(str(exc))
        assert compiled.resources(entry).local_bytes == 0, entry
        assert not hopper_problems(counts, config.c_map, config.streamk), (entry, counts)
