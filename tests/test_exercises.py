"""gemmlab.measure.exercises without a GPU: argument checks and their sentences, nvcc's errors as one sentence,
the resource report (nvcc only), the bank-conflict and occupancy verdicts, and the kernel solutions of
the chapters against the static barrier check and ptxas's spill report."""

import inspect
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

import nvcc_cache
from gemmlab.measure import exercises, nsight
from gemmlab.runtime import barriers, compiler, device
from gemmlab.measure.exercises import ExerciseError
from notebook_tools import CHAPTERS, read


KERNEL = r'''
extern "C" __global__ void __launch_bounds__(256)
copy_rows(const float* A, const float* B, float* C, int M, int N, int K)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < M * N)
        C[i] = A[i % (M * K)] + B[i % (K * N)];
}
'''
GRID = lambda M, N: (-(-M * N // 256), 1, 1)   # noqa: E731


def one_sentence(text: str) -> bool:
    return "\n" not in text and text.endswith(".") and len(text) < 600


def solution_sources() -> list[tuple[str, str]]:
    """(where, CUDA source) of every kernel solution, SOURCE = r'''...''', in the chapters."""
    found = []
    for path in CHAPTERS:
        for text in (c.source for c in read(path).cells if c.cell_type == "markdown"):
            for details in re.findall(r"<details>(.*?)</details>", text, re.S):
                for code in re.findall(r"```python\n(.*?)```", details, re.S):
                    found += [(path.name, src) for src in re.findall(r"SOURCE = r'''(.*?)'''", code, re.S)]
    return found


# ---------------------------------------------------------------- arguments

@pytest.mark.parametrize("kwargs, words", [
    (dict(source=""), "non-empty string"),
    (dict(source=42), "non-empty string"),
    (dict(function="copy rows"), "C identifier"),
    (dict(function="gemm_missing"), "no __global__ function named gemm_missing"),
    (dict(source=KERNEL.replace('extern "C" ', "")), 'extern "C"'),
    (dict(block=(256, 1)), "three positive integers"),
    (dict(block=(0, 1, 1)), "three positive integers"),
    (dict(block=(32, 32, 2)), "2048 threads"),
    (dict(block=(64.5, 1, 1)), "three positive integers"),
    (dict(grid=(4, 4, 1)), "function of (M, N)"),
    (dict(grid=lambda M, N: (0, 1, 1)), "grid(1, 1)"),
    (dict(sizes=[(1, 1, 1), (4, 0, 4)]), "each size"),
    (dict(sizes=[]), "at least one"),
    (dict(faster_than="regtile9"), "names no course kernel"),
    (dict(faster_than="regtile1d", at=(1024, 1024)), "at must be"),
    (dict(blocks_per_sm=0), "blocks_per_sm"),
    (dict(blocks_per_sm=True), "blocks_per_sm"),
    (dict(blocks_per_sm=2.0), "blocks_per_sm"),
])
def test_bad_arguments_get_one_sentence_before_any_gpu(kwargs, words):
    args = dict(source=KERNEL, function="copy_rows", block=(256, 1, 1), grid=GRID) | kwargs
    with pytest.raises(ExerciseError) as err:
        exercises.check_kernel(**args)         # raises before looking for PyCUDA or a GPU
    assert words in str(err.value) and one_sentence(str(err.value)), str(err.value)


def test_a_bad_baseline_lists_the_course_kernels():
    with pytest.raises(ExerciseError, match="regtile1d"):
        exercises.check_arguments(KERNEL, "copy_rows", (256, 1, 1), GRID, faster_than="regtile")


def test_good_arguments_pass_the_checks():
    exercises.check_arguments(KERNEL, "copy_rows", (256, 1, 1), GRID, faster_than="regtile1d", at=(64, 64, 64),
                              blocks_per_sm=2)


def test_the_signature_of_earlier_solutions_still_works():
    """Chapters 1 and 2 call check_kernel(source, function, block=..., grid=...); sizes and quiet stay the
    5th and 6th parameters, and every new option is keyword-only with a default."""
    params = list(inspect.signature(exercises.check_kernel).parameters.values())
    assert [p.name for p in params[:6]] == ["source", "function", "block", "grid", "sizes", "quiet"]
    assert params[4].default is exercises.SIZES and params[5].default is False
    assert all(p.kind is p.KEYWORD_ONLY and p.default is not p.empty for p in params[6:])
    assert {p.name for p in params[6:]} == {"faster_than", "at", "conflict_free", "blocks_per_sm", "precision"}


def test_sizes_include_the_awkward_ones():
    assert (1, 1, 1) in exercises.SIZES
    assert any(M % 32 and N % 32 and K % 32 for M, N, K in exercises.SIZES)
    assert any(K % 4 for _, _, K in exercises.SIZES) and any(K % 4 == 0 for _, _, K in exercises.SIZES)


# ---------------------------------------------------------------- nvcc's errors

NVCC_STDERR = '''kernel.cu(3): error: identifier "y" is undefined
    x[0] = y;
           ^

kernel.cu(4): error: expected an expression
    int z = ;
            ^

2 errors detected in the compilation of "kernel.cu".
'''


def test_compile_error_is_one_sentence_with_the_first_error_and_its_line():
    text = exercises.compile_error(NVCC_STDERR)
    assert text == 'nvcc could not compile the kernel: line 3: identifier "y" is undefined (and 1 more error).'


def test_compile_error_of_ptxas_and_of_nothing():
    ptxas = "ptxas error   : Entry function 'k' uses too much shared data (0x13880 bytes, 0xc000 max)\n"
    assert exercises.compile_error(ptxas) == ("nvcc could not compile the kernel: ptxas: Entry function 'k' uses too "
                                              "much shared data (0x13880 bytes, 0xc000 max).")
    assert one_sentence(exercises.compile_error(""))


# ---------------------------------------------------------------- resources (nvcc, no GPU)

@pytest.fixture(scope="module")
def nvcc(nvcc_path):
    """Skips where nvcc is missing, or fails there under GEMMLAB_STRICT_TOOLS=1 (tests/conftest.py)."""
    return nvcc_path


def test_resources_for_any_architecture(nvcc):
    entry = exercises.resources(KERNEL, "copy_rows", "sm_75")
    assert entry.function == "copy_rows" and 0 < entry.registers <= 255 and entry.spill_store_bytes == 0


@pytest.mark.parametrize("source, function, words", [
    ('extern "C" __global__ void k(float* x) { x[0] = y; }\n', "k", 'line 1: identifier "y" is undefined'),
    ('extern "C" __global__ void k(float* x) { __shared__ float s[20000]; s[threadIdx.x] = 1; x[0] = s[5]; }\n', "k",
     "ptxas: Entry function 'k' uses too much shared data"),
    ('extern "C" __device__ void h() {}\n__global__ void k(float* x) { x[0] = 1; }\n', "k", "compiled no kernel named k"),
])
def test_a_source_that_does_not_compile_gets_nvccs_first_error(nvcc, source, function, words):
    with pytest.raises(ExerciseError) as err:
        exercises.resources(source, function, "sm_75")
    assert words in str(err.value) and one_sentence(str(err.value)), str(err.value)


def test_resources_refuses_a_virtual_architecture():
    with pytest.raises(ExerciseError, match="real architecture"):
        exercises.resources(KERNEL, "copy_rows", "compute_75")


# ---------------------------------------------------------------- the verdicts, with the GPU parts replaced

class FakeFunction:
    """What _fits reads from a PyCUDA function."""

    def __init__(self, registers, shared, local=0):
        self.num_regs, self.shared_size_bytes, self.local_size_bytes = registers, shared, local


@pytest.mark.parametrize("registers, local, ok", [(64, 0, True), (72, 0, False), (64, 16, False)])
def test_blocks_per_sm_needs_the_registers_and_no_spills(monkeypatch, registers, local, ok):
    monkeypatch.setattr(device, "current", lambda: device.T4)
    monkeypatch.setattr(compiler, "target", lambda: "sm_75")
    said = []
    assert exercises._fits(FakeFunction(registers, 4096, local), "k", (256, 1, 1), 4, said.append) is ok
    assert f"{registers} registers per thread" in said[0] and ("ok" if ok else "NOT MET") in said[1]


def test_without_ncu_the_conflict_check_says_so_and_does_not_fail(monkeypatch):
    monkeypatch.setattr(nsight, "find_ncu", lambda: None)
    said = []
    assert exercises._conflict_free(KERNEL, "copy_rows", (256, 1, 1), GRID, said.append) is True
    assert said == [f"bank conflicts not measured: {nsight.unavailable_reason().rstrip('.')}."]


def test_when_ncu_refuses_the_conflict_check_says_why(monkeypatch):
    def refuse(*_, **__):
        raise nsight.CountersUnavailable("Nsight Compute has no permission to read this GPU's performance counters "
                                         "(ERR_NVGPUCTRPERM).")
    monkeypatch.setattr(nsight, "profile_program", refuse)
    said = []
    assert exercises._conflict_free(KERNEL, "copy_rows", (256, 1, 1), GRID, said.append) is True
    assert len(said) == 1 and "not measured" in said[0] and "ERR_NVGPUCTRPERM" in said[0]


@pytest.mark.parametrize("load_conflicts, store_conflicts, ok", [(27_053, 308_567, True), (234_881_024, 0, False),
                                                                 (0, 2_097_152, False)])
def test_conflict_verdict_from_the_counters(monkeypatch, load_conflicts, store_conflicts, ok):
    """The residue of chapter 4's conflict-free tiled32 passes; a conflict in every load or store fails."""
    counts = {"load_instructions": 41_943_040, "load_conflicts": load_conflicts, "store_instructions": 2_097_152,
              "store_conflicts": store_conflicts}
    seen = {}

    def profile(args, function, metrics):
        seen.update(code=args[1], function=function, metrics=metrics)
        return counts
    monkeypatch.setattr(nsight, "profile_program", profile)
    said = []
    assert exercises._conflict_free(KERNEL, "copy_rows", (256, 1, 1), GRID, said.append) is ok
    assert seen["function"] == "copy_rows" and seen["metrics"] is nsight.SHARED_METRICS
    assert "exercises.launch_once(" in seen["code"] and "(4096, 1, 1), 1024, 1024, 1024)" in seen["code"]
    assert ("conflict-free" if ok else "bank conflicts") in said[0]


# ---------------------------------------------------------------- the kernel solutions

SOLUTIONS = solution_sources()


def test_every_kernel_exercise_has_a_solution_found():
    where = {name for name, _ in SOLUTIONS}
    assert {"03_syncthreads_pitfall.ipynb", "04_banks.ipynb", "05_occupancy.ipynb", "06_register_tiling.ipynb"} <= where


@pytest.mark.parametrize("where, source", SOLUTIONS, ids=[f"{w}-{i}" for i, (w, _) in enumerate(SOLUTIONS)])
def test_no_kernel_solution_exits_before_a_barrier(where, source):
    assert barriers.check_source(source, where) == []


def test_kernel_solutions_compile_without_spills_for_every_architecture(nvcc):
    """What chapter 5 asks of its solution, asked of every solution: ptxas spills nothing, on every GPU (the builds
    of tests/nvcc_cache.py, which tests/test_notebooks.py reads too, each solution compiled once for all)."""
    def compile_one(solution):
        where, source = solution
        return where, nvcc_cache.solution_builds(source)

    with ThreadPoolExecutor(max_workers=2) as pool:
        for where, builds in pool.map(compile_one, SOLUTIONS):
            assert list(builds) == list(nvcc_cache.ARCHS)
            for arch, build in builds.items():
                spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", build.report)
                assert build.returncode == 0 and spills, f"{where} for {arch}:\n{build.report}"
                assert all(s == ("0", "0") for s in spills), f"{where} spills for {arch}:\n{build.report}"


def test_chapter_5_solution_is_capped_at_64_registers(nvcc):
    """The claim chapter 5's exercise makes: more than 64 registers without the bound (three blocks of 256 per
    SM), at most 64 and no spills with __launch_bounds__(256, 4), for a T4 and an H200."""
    source = next(s for w, s in SOLUTIONS if w == "05_occupancy.ipynb" and "__launch_bounds__(256, 4)" in s)
    for arch in ("sm_75", "sm_90"):
        free = exercises.resources(source.replace("__launch_bounds__(256, 4)", ""), "gemm_regtile_4x4", arch)
        capped = exercises.resources(source, "gemm_regtile_4x4", arch)
        assert free.registers > 64 and capped.registers <= 64 and capped.spill_store_bytes == 0, (arch, free, capped)
