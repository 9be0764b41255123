"""The chapters' claims about their kernels' machine code, on the CPU: nvcc compiles each unit for the architecture
the chapter ran on (sm_90 for chapter 8, sm_90a for chapter 9) and cuobjdump disassembles it (NVIDIA's wheels of
cuobjdump and nvdisasm are in requirements.txt). The cubins are the compile test's (tests/nvcc_cache.py: one build per
unit and architecture); the first test checks that they hold the machine code gemmlab.runtime.compiler.offline_sass
makes. Skips where nvcc or the disassembler is missing (fails under GEMMLAB_STRICT_TOOLS=1). The GPU suite checks
chapter 9's claims on the cubin that ran, too."""

import pytest

from nvcc_cache import unit_build
from gemmlab.gemm import fast_configs, registry, tc_configs, tensor_tma, units, wgmma
from gemmlab.measure import probes
from gemmlab.runtime import compiler, watchdog
from sass_claims import (HOPPER_OPS, TENSOR_OPS, TMA_STEP_OPS, bank_model_problems, counted_loop_problems,
                         hopper_problems, probe_problems, tensor_ladder_problems, tma_step_problems, vector_load_problems)

pytestmark = pytest.mark.usefixtures("nvcc_path")


@pytest.fixture(scope="module", autouse=True)
def disassembler(skip_or_fail):
    if watchdog.find_tool("cuobjdump") is None or watchdog.find_tool("nvdisasm") is None:
        skip_or_fail("cuobjdump and nvdisasm are not installed on this machine")


def test_the_cached_cubins_hold_the_machine_code_gemmlab_makes():
    """The shared builds add the compile test's checks (-Werror, ptxas -v and its warnings) and compile every
    architecture in one nvcc call: none of that changes the machine code of gemmlab's own build of the unit."""
    unit = units.unit("02_tiled.cu")
    names = [f"gemm_tiled_{t}" for t in (8, 16, 32)]
    cached = unit_build(unit, "sm_90").sass(names)
    assert cached == compiler.offline_sass(unit, "sm_90", names)
    assert all(compiler.opcode_counts(listing, ("FFMA",)) for listing in cached.values())


def test_chapter_9_gemms_multiply_with_hgmma_copy_with_the_engine_and_never_spill():
    unit = units.unit(wgmma.SOURCE)
    kernels = [(c, wgmma.hopper_kernel(c, precision=p).entry_point) for c in wgmma.GEMMS for p in wgmma.PRECISIONS]
    sass = unit_build(unit, unit.arch_specific).sass([name for _, name in kernels])
    problems = {name: hopper_problems(compiler.opcode_counts(sass[name], HOPPER_OPS), c.c_map, c.streamk)
                for c, name in kernels}
    assert not any(problems.values()), {n: p for n, p in problems.items() if p}


def test_chapter_8_reads_its_ladders_machine_code_right():
    kernels = registry.tensor_kernels("FP16")
    sass = unit_build(units.unit(tc_configs.SOURCE), "sm_90").sass([k.entry_point for k in kernels.values()])
    counts = {name.removesuffix("_f16"): compiler.opcode_counts(sass[k.entry_point], TENSOR_OPS)
              for name, k in kernels.items()}
    assert not tensor_ladder_problems(counts), counts


def test_chapter_8_hopper_step_copies_with_the_engine_and_multiplies_as_tc_inner():
    kernels = [tensor_tma.tma_kernel(p) for p in tc_configs.TMA_WS.precisions]
    unit = tensor_tma.unit()
    sass = unit_build(unit, unit.arch_specific).sass([k.entry_point for k in kernels])
    counts = {k.entry_point: compiler.opcode_counts(sass[k.entry_point], TMA_STEP_OPS) for k in kernels}
    assert not any(tma_step_problems(c) for c in counts.values()), counts


def test_chapter_8_ceiling_probe_makes_no_register_moves():
    """Every form of the probe, on the architectures it runs on (sm_80's forms on sm_90, the T4's on sm_75 too); and
    the claim flags the counts of the probe as it was until 2026-12-02 (13 moves per 40 HMMA)."""
    unit = units.unit(probes.MMA_PROBES)
    counts = {}
    for arch, forms in (("sm_90", sorted(probes.MMA_CEILINGS)), ("sm_75", [("m16n8k8", "f16")])):
        names = [f"mma_ceiling_{shape}_{dtype}" for shape, dtype in forms]
        sass = unit_build(unit, arch).sass(names)
        counts.update({f"{n} ({arch})": compiler.opcode_counts(sass[n], ("HMMA", "MOV", "IMAD.MOV")) for n in names})
    assert len(counts) == 5 and not probe_problems(counts), counts
    assert probe_problems({"old": {"HMMA.16816.F32": 40, "MOV": 13}}) == ["old: 40 HMMA and 13 register moves"]


def test_chapter_4_bank_model_counts_the_shared_memory_instructions():
    problems = []
    for name, layout in (("tiled32", "plain"), ("banks_transposed", "transposed"), ("banks_padded", "padded")):
        k = registry.lookup(name)
        sass = unit_build(units.unit(k.source), "sm_90").sass([k.function])[k.function]
        problems += bank_model_problems(compiler.opcode_counts(sass, ("LDS", "STS", "FFMA")), layout)
    assert not problems


def test_chapter_6_a_loop_the_compiler_can_count_unrolls():
    counted, strided = registry.lookup("regtile2d_t"), registry.lookup("regtile2d_t_strided")
    assert counted.source == strided.source
    sass = unit_build(units.unit(counted.source), "sm_90").sass([counted.function, strided.function])
    assert not counted_loop_problems(sass[counted.function], sass[strided.function])


def test_chapter_7_vector_and_scalar_loads():
    fast = fast_configs.FAST                                # the chapter's kernel
    scalar = fast_configs.config(fast.function + "_scalar")
    sass = unit_build(units.unit(fast_configs.SOURCE), "sm_90").sass([fast.function, scalar.function])
    counts = {c.function: compiler.opcode_counts(sass[c.function], ("LDG",)) for c in (fast, scalar)}
    assert not vector_load_problems(counts[fast.function], counts[scalar.function]), counts


def test_the_claims_can_fail():
    good = {"HGMMA.64x256x16.F32.BF16": 4, "UTMALDG.2D": 1, "UTMASTG.2D": 8}
    assert hopper_problems(good, c_map=True, streamk=False) == []
    assert hopper_problems({**good, "STG.E.64": 1}, c_map=True, streamk=False) == ["it stores with ['STG', 'UTMASTG']"]
    assert hopper_problems({**good, "LDL": 2}, c_map=True, streamk=True)[0] == "it uses local memory"
    ladder = {"tc_wmma": {"HMMA.16816.F32": 32, "LDSM.16.M88.4": 4},
              **{s: {"HMMA.16816.F32": 64, "LDSM.16.M88.4": 16, "LDG.E.128": 16, "STS.128": 16} for s in ("tc_mma", "tc_swizzle")},
              "tc_async": {"HMMA.16816.F32": 64, "LDSM.16.M88.4": 16, "LDGSTS.E.BYPASS.128": 16},
              "tc_stages": {"HMMA.16816.F32": 64, "LDSM.16.M88.4": 16, "LDGSTS.E.BYPASS.128": 32},
              **{s: {"HMMA.16816.F32": 64, "LDSM.16.M88.4": 24, "LDGSTS.E.BYPASS.128": 32} for s in ("tc_prefetch", "tc_wide")},
              "tc_inner": {"HMMA.16816.F32": 64, "LDSM.16.M88.4": 24, "LDGSTS.E.BYPASS.128": 64}}
    assert tensor_ladder_problems(ladder) == []
    once = {**ladder, "tc_inner": ladder["tc_wide"]}                      # no second, unchecked copy
    assert tensor_ladder_problems(once) == ["tc_inner is not tc_wide with each copy twice"]
    tail = {op: 2 * n for op, n in ladder["tc_inner"].items()}
    assert tensor_ladder_problems({**ladder, "tc_tail": {**tail, "REDG.E.ADD.F32.FTZ.RN.STRONG.GPU": 128}}) == []
    assert tensor_ladder_problems({**ladder, "tc_tail": tail}) == ["tc_tail is not tc_inner's loop twice with REDG adds"]
    broken = {**ladder, "tc_async": {**ladder["tc_async"], "LDG.E.128": 2}}
    assert tensor_ladder_problems(broken) == ["tc_async does not copy with 16 LDGSTS alone"]
    plain = {"LDS": 64, "LDS.128": 16, "STS": 4, "FFMA": 64}               # two phases of the tiled kernel
    assert bank_model_problems(plain, "plain") == [] and bank_model_problems(plain, "transposed")
    assert vector_load_problems({"LDG.E.128.CONSTANT": 20}, {"LDG.E.CONSTANT": 80}) == []
    listing = lambda ops: "".join(f"/*{16 * i:04x}*/ {op} ;\n" for i, op in enumerate(ops))
    counted = listing(["LDG"] * 8 + ["STS"] * 8 + ["LDS.128"] * 32 + ["FFMA"] * 512 + ["BRA"] * 4)
    strided = listing((["LDG", "STS"] * 14) + ["LDS.128"] * 32 + ["FFMA"] * 512 + ["BRA"] * 19)
    assert counted_loop_problems(counted, strided) == []
    assert counted_loop_problems(strided, counted) == ["the counted loop does not load 8 values, all before its 8 stores",
                                                       "the strided loop is not the one with more branches and more loads in its code"]
    assert vector_load_problems({"LDG.E.CONSTANT": 80}, {"LDG.E.64.CONSTANT": 4}) == [
        "the vector path has no LDG.E.128", "the scalar path has wide loads"]
    step = {"HMMA.16816.F32": 128, "LDSM.16.M88.4": 20, "LDSM.16.MT88.4": 20, "UTMALDG.2D": 5, "BAR.SYNC.DEFER_BLOCKING": 1,
            "USETMAXREG.DEALLOC.CTAPOOL": 1, "USETMAXREG.TRY_ALLOC.CTAPOOL": 1}
    assert tma_step_problems(step) == []
    assert tma_step_problems({**step, "LDGSTS.E.BYPASS.128": 16, "BAR.SYNC.DEFER_BLOCKING": 3}) == [
        "it copies with 5 UTMALDG and 16 LDGSTS, not 5 and 0", "it has 3 block barriers, not the one before the loop"]
    assert tma_step_problems({**step, "USETMAXREG.TRY_ALLOC.CTAPOOL": 0, "STL.64": 2}) == [
        "it uses local memory", "it does not hand registers from the producer to the multiplying warps"]
