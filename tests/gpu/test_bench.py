"""The bench on small sizes and the command line that writes its JSON."""

import json
import subprocess
import sys

from gemmlab.gemm import registry
from gemmlab.measure import bench
from gemmlab.models import traffic
from gemmlab.runtime import environment, provenance


def test_ladder_small_sizes_all_correct():
    sizes = [(96, 80, 72), (33, 17, 5)]
    results = bench.ladder(sizes, repeat=2, log=lambda *_: None)
    for M, N, K in sizes:
        at = [r for r in results if (r.M, r.N, r.K) == (M, N, K)]
        assert [r.kernel for r in at][: len(registry.kernels())] == list(registry.kernels())
        for r in at:
            assert r.correct and r.seconds > 0
            assert abs(r.tflops * 1e12 * r.seconds - traffic.gemm_flops(M, N, K)) < 1e-6 * traffic.gemm_flops(M, N, K)


def test_interleaved_ladder_small_sizes_all_correct():
    """The same ladder with every kernel and cuBLAS of a size timed against each other (--interleaved)."""
    sizes = [(96, 80, 72)]
    results = bench.ladder(sizes, log=lambda *_: None, interleave=True)
    assert [r.kernel for r in results][: len(registry.kernels())] == list(registry.kernels())
    assert all(r.correct and r.seconds > 0 for r in results)
    shares = [r.share_of_cublas for r in results]           # per-round ratios to cuBLAS, where CuPy brings it
    if bench.cupy_or_none() is None:
        assert shares == [None] * len(results)
    else:
        assert all(low <= median <= high for median, low, high in shares) and shares[-1] == (1.0, 1.0, 1.0)


def test_cli_writes_json(tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, "-m", "gemmlab", "bench", "--sizes", "64x48x40", "--repeat", "2",
                           "--json", str(out)], capture_output=True, text=True, timeout=300, cwd=provenance.ROOT)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert {r["kernel"] for r in data["results"]} >= set(registry.kernels())
    assert all(r["correct"] for r in data["results"])
    env = data["environment"]                       # where the numbers came from
    assert set(env) >= {"gpu", "driver", "CUDA toolkit (nvcc)", "PyCUDA", "CuPy", "NumPy", "Python"}
    assert data["device"] in env["gpu"] and env["PyCUDA"] != environment.MISSING and env["CUDA toolkit (nvcc)"][0].isdigit()


def test_without_cupy_the_shares_of_cublas_read_dash(monkeypatch, capsys):
    import numpy as np

    monkeypatch.setattr(bench, "cupy_or_none", lambda: None)
    monkeypatch.setattr(bench, "_said", set())
    A = np.ones((8, 8), np.float32)
    assert bench.time_cublas(A, A) is None
    assert capsys.readouterr().out.strip() == bench.NO_CUBLAS
    assert bench.time_cublas(A, A) is None and capsys.readouterr().out == ""       # said once
    r = bench.time_gemm(registry.lookup("tiled32"), A, A)
    assert bench.of_cublas(r, None) == "-" and bench.of_cublas(r, r) == "100.0%"
    assert "cuBLAS" not in bench.sweep(["naive"], [16])


def test_cli_precision_all_writes_every_format_with_its_own_cublas(tmp_path):
    """``--precision all``: chapter 8's ladders next to the FP32 one, each row saying its format; tensor rows
    compared with cuBLAS in their own format and with the measured mma.sync ceiling of their format."""
    from gemmlab.gemm import tensor_cores
    from gemmlab.runtime import device

    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, "-m", "gemmlab", "bench", "--sizes", "100x60x36", "--repeat", "2",
                           "--precision", "all", "--json", str(out)], capture_output=True, text=True, timeout=600,
                          cwd=provenance.ROOT)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    rows = data["results"]
    spec = device.current()
    formats = ["FP32"] + [p for p in ("TF32", "FP16", "BF16") if tensor_cores.supports(p, spec.compute_capability)]
    assert {r["precision"] for r in rows} == set(formats)
    assert set(data["mma_ceilings_tflops"]) == set(formats) - {"FP32"}
    # the FMA probe's ceiling, measured in the same run, and the day
    assert data["fp32_ceiling_tflops"] > 0 and len(data["date"]) == 10
    fp32 = [r for r in rows if r["precision"] == "FP32"]
    ceiling = data["fp32_ceiling_tflops"]
    assert all(r["fraction_of_fp32_ceiling"] == r["tflops"] / ceiling for r in fp32)
    for p in formats[1:]:
        mine = [r for r in rows if r["precision"] == p and r["kernel"] != "cuBLAS"]
        assert {r["kernel"] for r in mine} <= set(registry.by_precision(p)) and mine
        assert all(r["correct"] and 0 < r["fraction_of_mma_ceiling"] for r in mine)
        cub = [r for r in rows if r["precision"] == p and r["kernel"] == "cuBLAS"]
        assert len(cub) == 1 and cub[0]["correct"]
        assert all(r["fraction_of_cublas"] == r["tflops"] / cub[0]["tflops"] for r in mine)
        assert all(r["fraction_of_fp32_peak"] is None for r in mine)


def test_the_tuners_trials_give_their_share_of_cublas():
    """Chapter 7's tuning table: every trial is checked, ranked fastest first, and its bench result reads as a share
    of cuBLAS (the cell broke when a trial was handed to ``of_cublas`` in place of its result)."""
    from gemmlab.gemm import fast_configs
    from gemmlab.measure import tuning
    from gemmlab.models import verify

    configs = fast_configs.search_space()[:3]
    trials = tuning.tune(256, 192, 160, configs=configs, repeat=2, log=lambda line: None)
    assert {t.config for t in trials} == set(configs) and len(trials) == len(configs) and all(t.correct for t in trials)
    assert [t.tflops for t in trials] == sorted((t.tflops for t in trials), reverse=True)
    A, B = verify.random_operands(256, 192, 160, seed=7)
    cublas = bench.time_cublas(A, B, 2)
    shares = [bench.of_cublas(t.result, cublas) for t in trials]
    assert all(s.endswith("%") for s in shares) if cublas else shares == ["-"] * len(trials)
