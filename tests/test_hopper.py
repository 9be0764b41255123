"""Chapter 9's groundwork without a GPU (gemmlab.models.hopper): the copy engine's swizzles, tensor-map rules and
wgmma descriptors."""

from dataclasses import replace
from pathlib import Path

import pytest

from gemmlab.models import hopper, mma


@pytest.mark.parametrize("width, name", [(32, "32B"), (64, "64B"), (128, "128B")])
def test_the_copy_engines_swizzle_is_chapter_8s_for_rows_of_its_width(width, name):
    """A tile whose rows are as wide as the swizzle lands exactly where chapter 8's XOR put it."""
    for row in range(64):
        for chunk in range(width // 16):
            assert hopper.swizzled_offset(row * width + 16 * chunk, name) == row * width + 16 * mma.swizzle_chunk(row, chunk, width)


def test_swizzle_keeps_chunks_whole_and_is_a_permutation_of_each_atom():
    for name in hopper.SWIZZLES:
        image = [hopper.swizzled_offset(o, name) for o in range(hopper.SWIZZLE_ATOM_BYTES)]
        assert sorted(image) == list(range(hopper.SWIZZLE_ATOM_BYTES))
        assert all(image[o] - o == image[o - o % 16] - (o - o % 16) for o in range(hopper.SWIZZLE_ATOM_BYTES))
    assert hopper.swizzled_offset(1024 + 128 * 3 + 16, "128B") == 1024 + 128 * 3 + 16 * (1 ^ 3)
    assert hopper.swizzled_offset(200, "none") == 200
    with pytest.raises(ValueError, match="swizzle must be one of"):
        hopper.swizzled_offset(0, "16B")


def test_swizzled_rows_read_by_eight_lanes_hit_all_banks():
    """Eight rows of 128 bytes, the same logical chunk: the 128-byte swizzle spreads them over all 32 banks
    (chapter 4's model: one 16-byte access per lane, eight lanes per pass)."""
    from gemmlab.models import banks
    for chunk in range(8):
        plain = [r * 128 + 16 * chunk for r in range(8)]
        swz = [hopper.swizzled_offset(a, "128B") for a in plain]
        assert banks.bank_access(plain, 16).wavefronts == 8 and banks.bank_access(swz, 16).wavefronts == 1


def test_a_bf16_matrix_map_for_64_wide_boxes_is_valid():
    m = hopper.matrix_map(4096, 4096, "BF16", 128, 64)
    assert m.global_dims == (4096, 4096) and m.global_strides == (8192,) and m.box_dims == (64, 128)
    assert m.problems() == [] and m.box_bytes == 128 * 64 * 2


@pytest.mark.parametrize("kwargs, why", [
    (dict(rows=100, cols=1234, dtype="FP16", box_rows=64, box_cols=64), "multiple of 16 bytes below 2^40"),
    (dict(rows=100, cols=1024, dtype="FP16", box_rows=300, box_cols=64), "box dimension 1 must be 1 to 256"),
    (dict(rows=100, cols=1024, dtype="FP16", box_rows=64, box_cols=128), "may span at most 128 bytes"),
    (dict(rows=100, cols=1024, dtype="FP16", box_rows=64, box_cols=4, swizzle="none"), "multiple of 16 bytes, it spans 8"),
    (dict(rows=100, cols=1024, dtype="FP16", box_rows=64, box_cols=64, address=8), "16-byte aligned"),
    (dict(rows=100, cols=1024, dtype="FP16", box_rows=64, box_cols=32, swizzle="32B", row_stride_bytes=0), "global stride 1"),
])
def test_broken_rules_are_named(kwargs, why):
    problems = hopper.matrix_map(**kwargs).problems()
    assert any(why in p for p in problems), problems


def test_unknown_formats_and_ranks_are_refused():
    assert "dtype must be one of" in hopper.TensorMap("FP8", (8,), (), (8,)).problems()[0]
    assert any("rank must be 1 to 5" in p for p in hopper.TensorMap("FP16", (8,) * 6, (16,) * 5, (8,) * 6).problems())
    assert any("takes 1 global strides" in p for p in hopper.TensorMap("FP16", (8, 8), (), (8, 8)).problems())
    with pytest.raises(ValueError, match="dtype must be one of"):
        hopper.matrix_map(8, 8, "FP64", 8, 8)


def test_descriptors_round_trip_and_put_each_field_where_the_ptx_isa_says():
    d = hopper.smem_descriptor(0x1_2340, 16, 1024, "128B")
    assert d & 0x3FFF == 0x1234 and (d >> 16) & 0x3FFF == 1 and (d >> 32) & 0x3FFF == 64 and d >> 62 == 1
    for swz in hopper.DESCRIPTOR_SWIZZLE:
        fields = {"address": 4096, "leading_byte_offset": 256, "stride_byte_offset": 2048, "base_offset": 3, "swizzle": swz}
        assert hopper.unpack_descriptor(hopper.smem_descriptor(**fields)) == fields
    with pytest.raises(ValueError, match="multiple of 16 bytes"):
        hopper.smem_descriptor(8, 16, 1024)
    with pytest.raises(ValueError, match="from 0 to 262,128"):
        hopper.smem_descriptor(1 << 18, 16, 1024)
    with pytest.raises(ValueError, match="base offset is 3 bits"):
        hopper.smem_descriptor(0, 16, 1024, base_offset=8)


def test_a_broken_map_is_named_before_any_gpu_is_needed():
    from gemmlab.runtime import tensor_maps
    bad = hopper.matrix_map(100, 1234, "FP16", 64, 64)
    with pytest.raises(ValueError, match="global stride 1 must be a positive multiple of 16 bytes"):
        tensor_maps.encode(bad, 0)


def test_the_box_image_model():
    import numpy as np
    M = np.arange(20 * 70, dtype=np.uint16).reshape(20, 70)
    plain = hopper.box_image(M, 8, 64, "none", x=3, y=2)
    assert np.array_equal(plain.view(np.uint16).reshape(8, 64)[:, :3], M[2:10, 3:6])
    box = hopper.box_image(M, 16, 64, "128B", x=40, y=10).view(np.uint16)
    # row 3, logical chunk 1 (columns 8..15) lands in chunk 1 ^ 3 = 2 of row 3; past column 69 and row 19: zeros
    assert np.array_equal(box[3 * 64 + 16: 3 * 64 + 24], M[13, 48:56])
    assert not box[12 * 64: 13 * 64].any() and box.size == 16 * 64
    whole = hopper.box_image(M, 8, 64, "128B", x=3, y=2)
    assert whole.size == plain.size and sorted(whole.tolist()) == sorted(plain.tolist()) and not np.array_equal(whole, plain)


@pytest.mark.parametrize("n", [8, 64, 256])
def test_every_accumulator_has_one_place(n):
    places = {hopper.wgmma_d_position(t, r, n) for t in range(hopper.WARPGROUP) for r in range(n // 2)}
    assert places == {(i, j) for i in range(64) for j in range(n)}
    if n >= 16:
        assert hopper.wgmma_d_position(37, 5, n) == (16 + 1 + 0, 8 + 2 * 1 + 1)    # warp 1, lane 5, j = 1, e = 1
    with pytest.raises(ValueError, match="accumulators per thread"):
        hopper.wgmma_d_position(0, n // 2, n)


def test_expecting_fewer_bytes_than_the_box_is_refused_before_any_gpu():
    import numpy as np
    from gemmlab.runtime import tensor_maps
    with pytest.raises(ValueError, match="at least the box's 8,192 bytes"):
        tensor_maps.tile_image(np.zeros((64, 64), np.uint16), "FP16", 64, 64, expect_bytes=4096)


def test_the_wgmma_gemms_refuse_what_they_cannot_take_before_any_gpu():
    import numpy as np
    from gemmlab.gemm import wgmma
    A = np.ones((8, 8), np.float32)
    with pytest.raises(ValueError, match="wgmma_gemm_ws takes BF16 or FP16 inputs, got 'TF32'"):
        wgmma.gemm(A, A, precision="TF32")
    with pytest.raises(ValueError, match="inner dimensions differ"):
        wgmma.gemm(A, A[:5], wgmma.GEMM_V0)
    with pytest.raises(TypeError, match="float32"):
        wgmma.gemm(A.astype(np.float64), A)


def test_the_kernels_shared_memory_is_the_file_s():
    """wgmma.GEMM_V0 and GEMM_WS say what kernels/09_hopper.cu's #defines say (the launch must ask for exactly it)."""
    import re
    from gemmlab.gemm import wgmma
    from gemmlab.runtime import provenance
    text = (provenance.KERNELS_DIR / wgmma.SOURCE).read_text()
    defines = dict(re.findall(r"#define (\w+) (.+)", text))

    def value(name):                                   # the #define's expression, names replaced until none is left
        expr = defines[name]
        while re.search(r"[A-Z_]{3,}", expr):
            expr = re.sub(r"[A-Z_]{3,}", lambda m: f"({defines[m.group(0)]})", expr)
        return eval(expr)  # noqa: S307

    assert value("WGMMA_GEMM_V0_SHARED") == wgmma.GEMM_V0.shared and value("WGMMA_GEMM_WS_SHARED") == wgmma.GEMM_WS.shared
    assert value("WGMMA_GEMM_TMA_STORE_SHARED") == wgmma.GEMM_TMA_STORE.shared
    assert value("PINGPONG_SHARED") == wgmma.GEMM_PINGPONG.shared == wgmma.GEMM_TMA_STORE.shared
    assert (int(defines["PP_BM"]), int(defines["PP_BN"])) == (wgmma.GEMM_PINGPONG.BM, wgmma.GEMM_PINGPONG.BN)
    assert value("C_BOX_BYTES") == wgmma.C_BOX[0] * wgmma.C_BOX[1] * 4
    assert {g.c_box_rows for g in wgmma.GEMMS} == {wgmma.C_BOX[0]}          # the kernels store whole 64-row boxes
    assert (int(defines["WS_BM"]), int(defines["WS_BN"]), int(defines["WS_BK"])) == (wgmma.GEMM_WS.BM, wgmma.GEMM_WS.BN, wgmma.GEMM_WS.BK)


def test_chapter_9_kernels_are_course_kernels_that_need_a_hopper_gpu():
    import numpy as np
    from gemmlab.gemm import wgmma
    from gemmlab.runtime import device, gpu
    k = wgmma.hopper_kernel()
    A = np.ones((300, 200), np.float32)
    assert k.check(A, A.T.copy(), device.H200, 1 << 34) == (300, 300, 200)
    assert k.grid(300, 300) == (2, 3, 1) and k.block == (384, 1, 1) and k.input_precision == "BF16"
    with pytest.raises(gpu.GPUUnavailable, match="only a Hopper GPU"):
        k.check(A, A.T.copy(), device.A100, 1 << 34)
    assert np.array_equal(k.reference(A, A.T).A, A)           # ones are exact in BF16


def test_chapter_9_ladder_by_precision():
    """Each GEMM of 09_hopper.cu is in the registry for BF16 and FP16 inputs, after chapter 8's ladder, with its
    entry point's suffix; TF32 has none."""
    from gemmlab.gemm import registry, tensor_cores, wgmma

    for p in wgmma.PRECISIONS:
        hopper = registry.hopper_kernels(p)
        suffix = tensor_cores.PRECISIONS[p]
        assert [k.hopper_config for k in hopper.values()] == [getattr(wgmma, c) for _, c, _ in registry.HOPPER_STEPS]
        assert set(k.hopper_config for k in hopper.values()) <= set(wgmma.GEMMS)
        assert all(n.endswith(f"_{suffix}") and k.name == n and k.precision == p for n, k in hopper.items())
        assert list(registry.by_precision(p)) == [*registry.tensor_kernels(p), *registry.tma_kernels(p),
                                                  *registry.hopper_kernels(p, True)]
    assert registry.hopper_kernels("TF32") == {} and "hopper_pairs_f16" in registry.known()


def test_the_stream_k_and_ping_pong_kernels_stand_beside_the_ladder():
    """Not one more step each: left out of the ladder, listed with alternatives, run by the bench."""
    from gemmlab.gemm import registry, wgmma

    for p in wgmma.PRECISIONS:
        ladder, every = registry.hopper_kernels(p), registry.hopper_kernels(p, alternatives=True)
        assert list(every)[:len(ladder)] == list(ladder)
        assert [k.hopper_config for k in list(every.values())[len(ladder):]] == [wgmma.GEMM_STREAMK, wgmma.GEMM_PINGPONG]
        assert set(every) <= set(registry.by_precision(p))
    k = registry.known()["hopper_pingpong_bf16"]
    assert k.entry_point == "wgmma_gemm_pingpong_bf16" and k.hopper_config.c_map and k.hopper_config.cluster == 1
    k = registry.known()["hopper_streamk_f16"]
    assert k.entry_point == "wgmma_gemm_streamk_f16" and k.hopper_config.streamk and k.hopper_config.cluster == 2


def test_the_storer_steps_are_the_last_step_with_its_stores_handed_over():
    """hopper_storer and hopper_split take hopper_tmastore's maps, grid and shared memory; their entry points turn on
    ws_gemm's STORER (and SPLIT = 2), and both sides of the hand-over count the consumer warpgroup and one storer
    warp (160 threads) at the same two named barriers, which no other barrier of the file uses."""
    import re

    from gemmlab.gemm import registry, wgmma
    text = (Path(__file__).parents[1] / "kernels" / wgmma.SOURCE).read_text()
    for config in (wgmma.GEMM_STORER, wgmma.GEMM_SPLIT):
        assert replace(config, function=wgmma.GEMM_TMA_STORE.function) == wgmma.GEMM_TMA_STORE
    assert [n for n, _, _ in registry.HOPPER_STEPS][-3:] == ["hopper_tmastore", "hopper_storer", "hopper_split"]
    calls = dict(re.findall(r"\b(wgmma_gemm_(?:storer|split)_b?f16)\(GEMM_TMA_STORE_PARAMS\) \{ ws_gemm<([^>]*)>", text))
    assert calls == {"wgmma_gemm_storer_bf16": "true, true, 0, false, 2, false, true",
                     "wgmma_gemm_storer_f16": "true, true, 0, true, 2, false, true",
                     "wgmma_gemm_split_bf16": "true, true, 0, false, 2, false, true, 2",
                     "wgmma_gemm_split_f16": "true, true, 0, true, 2, false, true, 2"}
    handed = re.findall(r'"bar\.(sync|arrive) %0, (\d+);" ::"r"\((\d) \+ (consumer)\)', text)
    assert sorted(handed) == [("arrive", "160", "3", "consumer"), ("arrive", "160", "5", "consumer"),
                              ("sync", "160", "3", "consumer"), ("sync", "160", "5", "consumer")]
    assert re.findall(r'"bar\.sync %0, (\d+);" ::"r"\(id\)', text) == ["128"]      # warpgroup_barrier: ids 1, 2
    assert "warpgroup_barrier(1 + consumer)" in text      # ids 1-2; the hand-over's 3-6; 0 is __syncthreads


def test_every_entry_point_the_python_names_is_in_the_file():
    import re

    from gemmlab.gemm import wgmma
    text = (Path(__file__).parents[1] / "kernels" / wgmma.SOURCE).read_text()
    defined = set(re.findall(r"\b(wgmma_gemm_\w+_b?f16)\((?:GEMM_PARAMS|GEMM_TMA_STORE_PARAMS|GEMM_STREAMK_PARAMS)\)", text))
    takes_c_map = set(re.findall(r"\b(wgmma_gemm_\w+_b?f16)\((?:GEMM_TMA_STORE_PARAMS|GEMM_STREAMK_PARAMS)\)", text))
    takes_flags = set(re.findall(r"\b(wgmma_gemm_\w+_b?f16)\(GEMM_STREAMK_PARAMS\)", text))
    assert takes_c_map == {wgmma.hopper_kernel(c, precision=p).entry_point
                           for p in wgmma.PRECISIONS for c in wgmma.GEMMS if c.c_map}
    assert takes_flags == {wgmma.hopper_kernel(c, precision=p).entry_point
                           for p in wgmma.PRECISIONS for c in wgmma.GEMMS if c.streamk}
    named = {wgmma.hopper_kernel(c, precision=p).entry_point for p in wgmma.PRECISIONS for c in wgmma.GEMMS}
    assert named == defined


def test_chapter_9_kernels_say_they_cannot_be_compiled_for_another_architecture(monkeypatch):
    from gemmlab.gemm import registry
    from gemmlab.runtime import compiler, device

    k = registry.lookup("hopper_pairs_bf16")
    assert k.unavailable_on(device.H200) is None
    monkeypatch.setenv(compiler.ARCH_VARIABLE, "compute_75")
    assert "cannot be compiled under GEMMLAB_ARCH=compute_75" in k.unavailable_on(device.H200)
    assert "only a Hopper GPU" in k.unavailable_on(device.T4)


def test_chapter_9_exercises_are_checked_on_the_cpu(capsys):
    from gemmlab.measure import exercises

    assert exercises.check_descriptor(lambda a: ((a & 0x3FFFF) >> 4) | (1 << 16) | (64 << 32) | (1 << 62))
    assert "every one of 227 inputs" in capsys.readouterr().out
    assert not exercises.check_descriptor(lambda a: (a >> 4) | (1 << 16) | (64 << 32))          # no swizzle mode
    assert "your function gives" in capsys.readouterr().out
    assert exercises.check_swizzle(lambda o: o ^ (((o >> 7) & 7) << 4), quiet=True)
    assert not exercises.check_swizzle(lambda o: o ^ (((o >> 7) & 3) << 4), quiet=True)       # the 64-byte swizzle
    assert not exercises.check_swizzle(lambda o: 1 // 0, quiet=True)
    with pytest.raises(exercises.ExerciseError, match="takes an int"):
        exercises.check_swizzle(42)


def test_chapter_9_stream_k_exercise_is_checked_on_the_cpu(capsys):
    from gemmlab.measure import exercises
    from gemmlab.models import streamk

    def plan(tiles, k, units, ceil=False):       # a reader's plan; ceil=True cuts the ranges one K-tile off
        rounds, left = divmod(tiles, units)
        whole = tiles if left == 0 else (rounds if 2 * left >= units else max(rounds - 1, 0)) * units
        shared, out = (tiles - whole) * k, []
        cut = (lambda u: -(-shared * u // units)) if ceil else (lambda u: shared * u // units)
        for u in range(units):
            mine, i, end = [(t, 0, k) for t in range(u, whole, units)], cut(u), cut(u + 1)
            while i < end:
                kb = i % k
                ke = min(k, kb + end - i)
                mine.append((whole + i // k, kb, ke))
                i += ke - kb
            out.append(mine)
        return out

    assert exercises.check_streamk_plan(plan) and exercises.check_streamk_plan(streamk.plan, quiet=True)
    assert "every one of" in capsys.readouterr().out
    assert not exercises.check_streamk_plan(lambda t, k, g: plan(t, k, g, ceil=True))
    assert "1 tiles of 1 K-tiles on 2 units: unit 0 computes [(0, 0, 1)], the model []" in capsys.readouterr().out
    assert not exercises.check_streamk_plan(lambda t, k, g: streamk.plan(t, k, g, share=False), quiet=True)
    assert not exercises.check_streamk_plan(lambda t, k, g: plan(t, k, g)[:-1], quiet=True)
    assert not exercises.check_streamk_plan(lambda t, k, g: 1 // 0, quiet=True)
    with pytest.raises(exercises.ExerciseError, match="tiles, k_tiles, units"):
        exercises.check_streamk_plan("plan")


def test_chapter_9_runs_to_the_end_on_a_gpu_that_is_not_a_hopper(monkeypatch, capsys):
    """Issue #18: on any other GPU the chapter executes without error, each GPU cell saying why in one sentence.
    Every code cell but the Colab setup runs here in one namespace with gemmlab.runtime.device answering as a T4."""
    import matplotlib

    matplotlib.use("Agg")
    from gemmlab.runtime import device
    from notebook_tools import ROOT, read

    monkeypatch.setattr(device, "current", lambda: device.T4)
    namespace, said = {}, {}
    for cell in read(ROOT / "chapters" / "09_hopper.ipynb").cells:
        if cell.cell_type != "code" or "colab-setup" in cell.metadata.get("tags", []):
            continue
        exec(compile(cell.source.replace("%matplotlib inline", ""), cell.get("id", "cell"), "exec"), namespace)
        said[cell.get("id")] = capsys.readouterr().out
    why = namespace["HOPPER_HERE"]
    assert why and "Hopper" in why and "T4" in why
    gpu_cells = [i for i, text in said.items() if why in text]
    assert {"t9-image", "t9-hang", "t9-wgmma-check", "t9-sass", "t9-time", "t9-sizes", "t9-correct"} <= set(gpu_cells)
    assert namespace["ladders"] == {}                      # nothing timed, and the figure cell drew nothing
    assert "accepted" in said["t9-rules"] and "0x4000004000010040" in said["t9-descriptor"]


def test_the_copy_engine_epilogue_pads_c_and_hands_back_n_columns(monkeypatch):
    """A tensor map's rows must be a multiple of 16 bytes apart, so the kernel that stores C through the copy engine
    gets C with its rows padded to 4 floats; the result is the first N columns, contiguous. The other kernels' C is
    packed."""
    import types

    import numpy as np
    from gemmlab.gemm import base, wgmma

    assert [wgmma.c_columns(wgmma.GEMM_TMA_STORE, n) for n in (1, 4, 17, 4100)] == [4, 4, 20, 4100]
    assert wgmma.c_columns(wgmma.GEMM_CLUSTER, 17) == 17
    monkeypatch.setattr(base.gpu, "cuda", lambda: types.SimpleNamespace(Context=types.SimpleNamespace(synchronize=lambda: None)))
    stored = np.arange(3 * 20, dtype=np.float32).reshape(3, 20)
    problem = base.DeviceProblem(wgmma.hopper_kernel(wgmma.GEMM_TMA_STORE), 3, 17, 5, None, None,
                                 types.SimpleNamespace(get=lambda: stored))
    C = problem.result()
    assert C.shape == (3, 17) and C.flags.c_contiguous and np.array_equal(C, stored[:, :17])


def test_a_kernel_s_shared_memory_limit_is_raised_once_not_at_every_launch(monkeypatch):
    """Chapter 9's launches go through the driver; asking for a kernel's attributes and raising its shared-memory
    limit at every launch cost each one microseconds (about as long as a whole GEMM at 2048³ on the H200), so the
    limit is raised once for each larger size asked for."""
    import types

    from gemmlab.runtime import compiler, gpu

    calls = []
    monkeypatch.setattr(gpu, "driver_call", lambda name, *args: calls.append(name))
    attributes = types.SimpleNamespace(num_regs=168, shared_size_bytes=1024, local_size_bytes=0, max_threads_per_block=384)
    unit = types.SimpleNamespace(path=None)
    compiled = compiler.CompiledFile(unit, "sm_90a", types.SimpleNamespace(get_function=lambda name: attributes))
    for shared in (230_400, 230_400, 100_000, 230_400):
        compiled.driver_function("wgmma_gemm_tmastore_bf16", shared)
    assert calls == ["cuModuleLoadData", "cuModuleGetFunction", "cuFuncSetAttribute"]
    compiled.driver_function("wgmma_gemm_tmastore_bf16", 232_448)
    assert calls[-1] == "cuFuncSetAttribute" and len(calls) == 4


def test_the_copy_engine_probe_compiles_the_course_unit_of_its_file():
    """tensor_maps.tile_image compiles 09_hopper.cu without asking the course's compile units (the runtime sits below
    them); its unit must be the one they give, or the file would be compiled twice, once without what Python adds."""
    from gemmlab.gemm import units
    from gemmlab.runtime import tensor_maps

    assert tensor_maps.unit() == units.unit(tensor_maps.SOURCE)
