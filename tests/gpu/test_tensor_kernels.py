"""Chapter 8's tensor-core kernels on the GPU: every configuration in each of its precisions correct at awkward
sizes (against the rounded inputs, with chapter 1's FP32 bound), NaN and Inf where NumPy puts them, the
ceiling probes, the shared last wave (at forced splits and by the launcher's rule), and the refusals. Under
GEMMLAB_ARCH=compute_75 the BF16 and TF32 kernels are refused, the FP16 ones run the sm_75 path (two m16n8k8 per
k-step, plain copies)."""

from dataclasses import replace

import numpy as np
import pytest

from gemmlab.gemm import tc_configs, tensor_cores
from gemmlab.measure import probes
from gemmlab.models import tail, verify
from gemmlab.runtime import compiler, device

SIZES = [(1, 1, 1), (17, 33, 9), (127, 129, 65), (128, 256, 32), (255, 257, 31), (300, 1000, 513), (1, 300, 7)]


def kernels():
    return [tensor_cores.wmma_kernel(p) for p in tc_configs.SIXTEEN_BIT] + [
        tensor_cores.mma_kernel(c, p) for c in tc_configs.CONFIGS for p in c.precisions]


def runnable(k) -> bool:
    spec = device.current()
    target = compiler.capability(compiler.target())
    return k.shared_for(target) <= spec.shared_per_block_optin and tensor_cores.supports(k.precision, target)


@pytest.mark.parametrize("kernel", kernels(), ids=lambda k: k.name)
def test_correct_at_awkward_sizes(kernel, dirty_memory):
    if not runnable(kernel):
        pytest.skip(f"{kernel.name} does not run with {compiler.target()} on this GPU")
    for M, N, K in SIZES:
        A, B = verify.random_operands(M, N, K, seed=M + 3 * N + 7 * K)
        C = kernel(A, B)
        verdict = verify.Reference(tensor_cores.rounded(A, kernel.precision), tensor_cores.rounded(B, kernel.precision)).check(C)
        assert verdict.ok, f"{kernel.name} at {M}x{N}x{K}: {verdict}"


def best(precision):
    return tensor_cores.mma_kernel([c for c in tc_configs.CONFIGS if precision in c.precisions][-1], precision)


def nan_and_inf_where_numpy_puts_them(k, precision, shape, planted, seed):
    """``k``'s product of random operands of ``shape`` (M, N, K) with ``planted`` values {(matrix, i, j): value}:
    its NaNs and infinities where NumPy's float64 product of the same rounded inputs has them."""
    A, B = verify.random_operands(*shape, seed=seed)
    for (which, i, j), value in planted.items():
        (A if which == "A" else B)[i, j] = value
    C = k(A, B)
    with np.errstate(invalid="ignore"):
        R = tensor_cores.rounded(A, precision).astype(np.float64) @ tensor_cores.rounded(B, precision).astype(np.float64)
    assert np.array_equal(np.isnan(C), np.isnan(R)) and np.array_equal(np.isposinf(C), np.isposinf(R))
    assert np.array_equal(np.isneginf(C), np.isneginf(R)) and np.isnan(C).any() and np.isinf(C).any()


@pytest.mark.parametrize("precision", list(tensor_cores.PRECISIONS))
def test_nan_and_inf_land_where_numpy_puts_them(precision, dirty_memory):
    k = best(precision)
    if not runnable(k):
        pytest.skip(f"no {precision} kernels with {compiler.target()}")
    nan_and_inf_where_numpy_puts_them(k, precision, (70, 90, 50), {("A", 3, 5): np.nan, ("A", 40, 7): np.inf,
                                                                   ("B", 2, 11): -np.inf, ("B", 9, 80): np.inf}, 4)


def tail_kernels():
    return [tensor_cores.mma_kernel(c, p) for c in tc_configs.CONFIGS if c.TAIL for p in c.precisions]


# (M, N, K) and the tiles to run whole, the rest shared over one unit per SM: none, one, all but one, and between
TAIL_CASES = [((1, 1, 1), 0), ((300, 520, 1234), 0), ((300, 520, 1234), 1), ((300, 520, 1234), 8),
              ((1000, 2000, 777), 40), ((1000, 2000, 777), 63), ((257, 4096, 96), 3), ((255, 257, 31), 0)]


@pytest.mark.parametrize("kernel", tail_kernels(), ids=lambda k: k.name)
def test_a_shared_tail_is_correct_at_forced_splits(kernel, dirty_memory):
    """The shared path at any split: units whose K-tiles cross from one tile into the next, parts of one K-tile,
    edge tiles shared, every tile shared (C zeroed first, then only the adds)."""
    if not runnable(kernel):
        pytest.skip(f"{kernel.name} does not run with {compiler.target()} on this GPU")
    for (M, N, K), whole in TAIL_CASES:
        k = replace(kernel, tail_whole=whole)
        assert k.tail_split(M, N, K, device.current().sms).units > 0
        A, B = verify.random_operands(M, N, K, seed=M + 5 * N + K)
        C = k(A, B)
        verdict = tensor_cores.reference(A, B, kernel.precision).check(C)
        assert verdict.ok, f"{kernel.name} at {M}x{N}x{K} with {whole} whole tiles: {verdict}"


@pytest.mark.parametrize("precision", list(tensor_cores.PRECISIONS))
def test_nan_and_inf_survive_the_shared_adds(precision, dirty_memory):
    k = replace(best(precision), tail_whole=0)
    if not runnable(k) or not k.config.TAIL:
        pytest.skip(f"no {precision} tail kernel with {compiler.target()}")
    nan_and_inf_where_numpy_puts_them(k, precision, (300, 520, 700), {("A", 3, 5): np.nan, ("A", 140, 600): np.inf,
                                                                     ("B", 2, 11): -np.inf, ("B", 650, 400): np.inf}, 6)


def test_the_rule_shares_a_thin_last_wave_on_this_gpu(dirty_memory):
    """A product whose last (and only) wave is about 30% full, with long K: the launcher's own rule shares it, and
    the result is right and agrees with tc_inner's."""
    k = best("FP16")
    if not runnable(k):
        pytest.skip(f"no FP16 kernels with {compiler.target()}")
    sms, c = device.current().sms, k.config
    left = max(1, int(tail.FILL_LIMIT / 2 * sms))
    k_tiles = -(-tail.MIN_SHARE * sms // left)
    M, N, K = c.BM, c.BN * left, c.BK * k_tiles
    assert k.tail_split(M, N, K, sms).units == sms
    A, B = verify.random_operands(M, N, K, seed=11)
    C = k(A, B)
    assert tensor_cores.reference(A, B, "FP16").check(C).ok
    inner = tensor_cores.mma_kernel(replace(c, TAIL=False), "FP16")
    assert np.allclose(C, inner(A, B), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("precision", ["BF16", "TF32"])
def test_bf16_and_tf32_are_refused_where_the_code_is_for_sm_75(precision):
    k = best(precision)
    if tensor_cores.supports(precision, compiler.capability(compiler.target())):
        pytest.skip(f"this run compiles for an architecture with {precision}")
    A, B = verify.random_operands(16, 16, 16)
    with pytest.raises(RuntimeError, match=f"no {precision} tensor-core instruction"):
        k(A, B)


def test_wrong_inputs_are_refused_before_any_launch():
    k = tensor_cores.mma_kernel(tc_configs.STAGES)
    A, B = verify.random_operands(8, 8, 8)
    with pytest.raises((TypeError, ValueError)):
        k(A.astype(np.float64), B)
    with pytest.raises(ValueError):
        k(A, B[:5])


@pytest.mark.parametrize("shape, dtype", sorted(probes.MMA_CEILINGS))
def test_ceiling_probes_run_or_say_they_cannot(shape, dtype):
    rate = probes.mma_ceiling(shape, dtype, iters=256)
    needed = probes.MMA_CEILINGS[shape, dtype]
    if compiler.capability(compiler.target()) < needed:
        assert rate is None
    else:
        assert rate > 1e12                     # any tensor core does more than a TFLOP/s
