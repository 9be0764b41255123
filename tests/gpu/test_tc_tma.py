"""Chapter 8's Hopper step on the GPU (gemmlab.gemm.tensor_tma: tc_tma_ws, mma.sync fed by the copy engine from a producer
warpgroup): right at every size (edges, K not a multiple of 8, fewer K-tiles than stages, many more, more tiles of C
than SMs), NaN and Inf where NumPy puts them, the machine code the chapter describes on the cubin that ran, timed
as any course kernel. It runs once in a child process first: a barrier that waits forever fails the tests in
seconds instead of stopping the run. On any other GPU the kernel says why it cannot run, and these skip with it."""

import sys
from pathlib import Path

import numpy as np
import pytest

from gemmlab.gemm import tc_configs, tensor_cores, tensor_tma
from gemmlab.measure import bench
from gemmlab.models import verify
from gemmlab.runtime import compiler, device, gpu

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from sass_claims import TMA_STEP_OPS, tma_step_problems  # noqa: E402

PRECISIONS = tc_configs.TMA_WS.precisions


@pytest.fixture(scope="module")
def runs_here(tc_tma_hangs):
    """Skips where the step cannot run; fails at once where a first launch, in a child process, does not finish
    (``tc_tma_hangs``, tests/gpu/conftest.py)."""
    gpu.cuda()
    why = tensor_tma.tma_kernel().unavailable_on(device.current())
    if why:
        pytest.skip(why)
    if tc_tma_hangs:
        pytest.fail(f"a first run of tc_tma_ws in a child process did not finish: {tc_tma_hangs}")


SIZES = [(1, 1, 1), (33, 17, 9), (17, 33, 7), (128, 256, 64), (127, 257, 65), (300, 520, 1234), (257, 4096, 96),
         (1000, 2000, 777), (2000, 4100, 130), (1024, 1024, 4100)]


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("M, N, K", SIZES)
def test_right_at_every_size(M, N, K, precision, runs_here, dirty_memory):
    """Against the product of the rounded inputs with chapter 1's FP32 bound: the copy engine's zeros past the edges
    of A and B (memory beyond them holds NaNs: ``dirty_memory``), 1 to 65 K-tiles through a ring of 4 stages, up to
    272 tiles of C (more than one wave)."""
    A, B = verify.random_operands(M, N, K, seed=M + 2 * N + 3 * K)
    verdict = tensor_cores.reference(A, B, precision).check(tensor_tma.tma_kernel(precision)(A, B))
    assert verdict.ok, f"{M}x{N}x{K}: {verdict}"


@pytest.mark.parametrize("precision", PRECISIONS)
def test_nan_and_inf_land_where_numpy_puts_them(precision, runs_here):
    A, B = verify.random_operands(150, 300, 100, seed=4)
    A[3, 5], A[140, 7], B[2, 11], B[9, 280] = np.nan, np.inf, -np.inf, np.inf
    C = tensor_tma.tma_kernel(precision)(A, B)
    with np.errstate(invalid="ignore"):
        R = tensor_cores.rounded(A, precision).astype(np.float64) @ tensor_cores.rounded(B, precision).astype(np.float64)
    assert np.array_equal(np.isnan(C), np.isnan(R)) and np.array_equal(np.isposinf(C), np.isposinf(R))
    assert np.array_equal(np.isneginf(C), np.isneginf(R)) and np.isnan(C).any() and np.isinf(C).any()


@pytest.mark.parametrize("precision", PRECISIONS)
def test_the_machine_code_that_ran_is_the_one_the_chapter_describes(precision, runs_here):
    k = tensor_tma.tma_kernel(precision)
    compiled = k.compiled()
    assert compiled.arch == "sm_90a" and compiled.resources(k.entry_point).local_bytes == 0
    try:
        counts = compiler.opcode_counts(compiled.sass(k.entry_point), TMA_STEP_OPS)
    except compiler.SassUnavailable as exc:
        pytest.skip(str(exc))
    assert not tma_step_problems(counts), counts


def test_it_times_like_any_course_kernel_and_refuses_wrong_inputs(runs_here):
    k = tensor_tma.tma_kernel("BF16")
    A, B = verify.random_operands(512, 768, 320, seed=3)
    r = bench.time_gemm(k, A, B, repeat=3, reference=tensor_cores.reference(A, B, "BF16"))
    assert r.correct and r.tflops > 0
    with pytest.raises(ValueError):
        k(A, B[:-1])
    with pytest.raises(ValueError, match="extra shared memory"):
        k.on_device(A, B, extra_shared=1024)
