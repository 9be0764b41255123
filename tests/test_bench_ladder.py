"""bench.ladder on the CPU: fake kernels and a fake cuBLAS stand in for the GPU, so that the order, the checks and
both timings (each kernel on its own; all of a size interleaved) can be seen without one."""

from dataclasses import replace

import numpy as np
import pytest

from gemmlab.measure import bench
from gemmlab.models import verify
from gemmlab.runtime import device, environment, gpu, timing

SECONDS = {"good": 2e-3, "bad": 1e-3, "cuBLAS": 4e-3}      # what the fake timer says each call takes


class FakeProblem:
    def __init__(self, name, A, B, wrong):
        self.name, (self.M, self.K), self.N = name, A.shape, B.shape[1]
        self.C = (A.astype(np.float64) @ B).astype(np.float32) + (1.0 if wrong else 0.0)

    def launch(self):
        return self.name                                    # the fake timer knows whose block it times

    def result(self):
        return self.C


class FakeKernel:
    input_precision = "FP32"

    def __init__(self, name, wrong=False):
        self.name, self.wrong = name, wrong

    def on_device(self, A, B, extra_shared=0):
        return FakeProblem(self.name, A, B, self.wrong)

    def reference(self, A, B):
        return verify.Reference(A, B)


@pytest.fixture
def fake_gpu(monkeypatch):
    calls = []

    def fake_time_gpu(run, warmup=2, repeat=10, min_seconds=2e-3, max_inner=1000):
        name = run()
        calls.append((name, min_seconds))
        return timing.Timing(SECONDS[name], SECONDS[name], repeat)

    def fake_cublas(A, B, reference):
        ok = reference.check((A.astype(np.float64) @ B).astype(np.float32)).ok
        return bench.Prepared("cuBLAS", A.shape[0], B.shape[1], A.shape[1], lambda: "cuBLAS", ok)

    monkeypatch.setattr(gpu, "cuda", lambda: None)
    monkeypatch.setattr(timing, "time_gpu", fake_time_gpu)
    monkeypatch.setattr(bench, "prepare_cublas", fake_cublas)
    return calls


KERNELS = {"good": FakeKernel("good"), "bad": FakeKernel("bad", wrong=True)}
SIZES = [(8, 6, 5), (3, 4, 7)]


@pytest.mark.parametrize("interleave", [False, True])
def test_every_kernel_then_cublas_checked_and_timed(fake_gpu, interleave):
    lines = []
    results = bench.ladder(SIZES, kernels=KERNELS, log=lines.append, interleave=interleave)
    assert [(r.kernel, (r.M, r.N, r.K)) for r in results] == [(k, s) for s in SIZES for k in ("good", "bad", "cuBLAS")]
    assert [r.correct for r in results] == [True, False, True] * 2
    assert all(r.seconds == SECONDS[r.kernel] for r in results)
    assert len(lines) == len(results) and "WRONG RESULT" in lines[1]


def test_interleaved_blocks_alternate_between_the_kernels_of_a_size(fake_gpu):
    bench.ladder(SIZES[:1], kernels=KERNELS, log=lambda line: None, interleave=True)
    timed = [name for name, block in fake_gpu if block > 0]      # the warm-up's single calls have no block
    assert timed == ["good", "bad", "cuBLAS"] * (len(timed) // 3) and len(timed) >= 3 * 5


def test_separate_timing_times_each_kernel_in_turn(fake_gpu):
    bench.ladder(SIZES[:1], kernels=KERNELS, log=lambda line: None, repeat=3)
    assert [name for name, _ in fake_gpu] == ["good", "bad", "cuBLAS"]


@pytest.mark.parametrize("interleave, said", [(False, "separate"), (True, "interleaved")])
def test_the_json_says_how_the_times_were_taken(fake_gpu, monkeypatch, interleave, said):
    monkeypatch.setattr(device, "current", lambda: device.H200)
    monkeypatch.setattr(environment, "versions", lambda: {})
    data = bench.to_json(bench.ladder(SIZES[:1], kernels=KERNELS, log=lambda line: None, interleave=interleave),
                         interleaved=interleave)
    assert data["timing"] == said
    good = next(r for r in data["results"] if r["kernel"] == "good")
    assert good["fraction_of_cublas"] == pytest.approx(SECONDS["cuBLAS"] / SECONDS["good"])
    assert ("fraction_of_cublas_quartiles" in good) == interleave


def test_an_interleaved_share_is_the_median_of_the_rounds_ratios(monkeypatch):
    # 11 rounds whose times move in different ways for the kernel and cuBLAS: the medians are level (2 ms each), but
    # round by round the kernel is slower in 7 rounds of 11; the share must say so (the median of the ratios, 2/3)
    rounds = {"good": [1e-3, 2e-3, 3e-3] * 3 + [1e-3, 2e-3], "cuBLAS": [3e-3, 1e-3, 2e-3] * 3 + [3e-3, 1e-3]}
    left = {name: iter(times) for name, times in rounds.items()}

    def fake_time_gpu(run, warmup=2, repeat=10, min_seconds=2e-3, max_inner=1000):
        name = run()
        t = next(left[name]) if min_seconds > 0 else 1e-3            # the warm-up's calls are not rounds
        return timing.Timing(t, t, repeat)

    monkeypatch.setattr(gpu, "cuda", lambda: None)
    monkeypatch.setattr(timing, "time_gpu", fake_time_gpu)
    monkeypatch.setattr(bench, "prepare_cublas", lambda A, B, ref: bench.Prepared("cuBLAS", 8, 6, 5, lambda: "cuBLAS", True))
    monkeypatch.setattr(device, "current", lambda: device.H200)
    monkeypatch.setattr(environment, "versions", lambda: {})
    results = bench.ladder(SIZES[:1], kernels={"good": KERNELS["good"]}, log=lambda line: None, interleave=True)
    good = next(r for r in bench.to_json(results, interleaved=True)["results"] if r["kernel"] == "good")
    assert results[0].seconds == results[1].seconds == 2e-3                   # level medians
    assert good["fraction_of_cublas"] == pytest.approx(2 / 3)
    assert good["fraction_of_cublas_quartiles"] == pytest.approx([0.5, 3.0])
    assert bench.of_cublas(results[0], results[1]) == "66.7%"                 # the tables say what the JSON says
    assert bench.of_cublas(replace(results[0], share_of_cublas=None), results[1]) == "100.0%"
    assert bench.of_cublas(results[0], None) == "-"


def test_a_size_given_twice_is_refused_before_the_gpu(monkeypatch):
    """Results and the JSON's shares of cuBLAS are keyed by size: a Python caller passing one twice is refused, as
    the command line refuses it, before anything reaches the GPU."""
    def no_gpu():
        raise AssertionError("the GPU was reached")

    monkeypatch.setattr(gpu, "cuda", no_gpu)
    with pytest.raises(ValueError, match="size 64x64x64 given twice"):
        bench.ladder([(64, 64, 64), (32, 48, 16), [64, 64, 64]], kernels={"good": FakeKernel("good")})
    assert bench.distinct_sizes([[1, 2, 3], (3, 2, 1)]) == [(1, 2, 3), (3, 2, 1)]


def test_the_json_records_the_day_and_the_measured_fp32_ceiling(fake_gpu, monkeypatch):
    """The book's ladder at a glance states each file's day and each FP32 row's share of
    the FMA probe's ceiling measured in the same run; without a ceiling the JSON says
    nothing of one (the book then shows a dash)."""
    import datetime

    monkeypatch.setattr(device, "current", lambda: device.H200)
    monkeypatch.setattr(environment, "versions", lambda: {})
    results = bench.ladder(SIZES[:1], kernels=KERNELS, log=lambda line: None)
    data = bench.to_json(results, fp32_ceiling=0.5)
    assert datetime.date.fromisoformat(data["date"])
    assert data["fp32_ceiling_tflops"] == 0.5
    assert all(r["fraction_of_fp32_ceiling"] == pytest.approx(r["tflops"] / 0.5)
               for r in data["results"])
    plain = bench.to_json(results)
    assert "fp32_ceiling_tflops" not in plain
    assert all("fraction_of_fp32_ceiling" not in r for r in plain["results"])
