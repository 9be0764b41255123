"""Chapter 8's tensor-core kernels on the GPU: every configuration in each of its precisions correct at awkward
sizes (against the rounded inputs, with chapter 1's FP32 bound), NaN and Inf where NumPy puts them, the
ceiling probes, and the refusals. Under GEMMLAB_ARCH=compute_75 the BF16 and TF32 kernels are refused, the
FP16 ones run the sm_75 path (two m16n8k8 per k-step, plain copies)."""

import numpy as np
import pytest

from gemmlab import compiler, device, probes, tc_configs, tensor_gemm, verify

SIZES = [(1, 1, 1), (17, 33, 9), (127, 129, 65), (128, 256, 32), (255, 257, 31), (300, 1000, 513), (1, 300, 7)]


def kernels():
    return [tensor_gemm.wmma_kernel(p) for p in tc_configs.SIXTEEN_BIT] + [
        tensor_gemm.mma_kernel(c, p) for c in tc_configs.CONFIGS for p in c.precisions]


def runnable(k) -> bool:
    spec = device.current()
    target = compiler.capability(compiler.target())
    return k.shared_for(target) <= spec.shared_per_block_optin and tensor_gemm.supports(k.precision, target)


@pytest.mark.parametrize("kernel", kernels(), ids=lambda k: k.name)
def test_correct_at_awkward_sizes(kernel, dirty_memory):
    if not runnable(kernel):
        pytest.skip(f"{kernel.name} does not run with {compiler.target()} on this GPU")
    for M, N, K in SIZES:
        A, B = verify.random_operands(M, N, K, seed=M + 3 * N + 7 * K)
        C = kernel(A, B)
        verdict = verify.Reference(tensor_gemm.rounded(A, kernel.precision), tensor_gemm.rounded(B, kernel.precision)).check(C)
        assert verdict.ok, f"{kernel.name} at {M}x{N}x{K}: {verdict}"


def best(precision):
    return tensor_gemm.mma_kernel([c for c in tc_configs.CONFIGS if precision in c.precisions][-1], precision)


@pytest.mark.parametrize("precision", list(tensor_gemm.PRECISIONS))
def test_nan_and_inf_land_where_numpy_puts_them(precision, dirty_memory):
    k = best(precision)
    if not runnable(k):
        pytest.skip(f"no {precision} kernels with {compiler.target()}")
    A, B = verify.random_operands(70, 90, 50, seed=4)
    A[3, 5], A[40, 7], B[2, 11], B[9, 80] = np.nan, np.inf, -np.inf, np.inf
    C = k(A, B)
    with np.errstate(invalid="ignore"):
        R = tensor_gemm.rounded(A, precision).astype(np.float64) @ tensor_gemm.rounded(B, precision).astype(np.float64)
    assert np.array_equal(np.isnan(C), np.isnan(R)) and np.array_equal(np.isposinf(C), np.isposinf(R))
    assert np.array_equal(np.isneginf(C), np.isneginf(R)) and np.isnan(C).any() and np.isinf(C).any()


@pytest.mark.parametrize("precision", ["BF16", "TF32"])
def test_bf16_and_tf32_are_refused_where_the_code_is_for_sm_75(precision):
    k = best(precision)
    if tensor_gemm.supports(precision, compiler.capability(compiler.target())):
        pytest.skip(f"this run compiles for an architecture with {precision}")
    A, B = verify.random_operands(16, 16, 16)
    with pytest.raises(RuntimeError, match=f"no {precision} tensor-core instruction"):
        k(A, B)


def test_wrong_inputs_are_refused_before_any_launch():
    k = tensor_gemm.mma_kernel(tc_configs.CONFIGS[3])
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
