"""The bench on a small size, the command line, and compute-sanitizer over every kernel."""

import json
import re
import shutil
import subprocess
import sys

import pytest

from gemmlab import bench, launch, provenance


def test_ladder_small_size_all_correct():
    results = bench.ladder([(96, 80, 72)], repeat=2, log=lambda *_: None)
    names = [r.kernel for r in results]
    assert names[: len(launch.kernels())] == list(launch.kernels())
    assert all(r.correct and r.tflops > 0 for r in results)
    data = bench.to_json(results)
    if "cuBLAS" in names:
        assert [r for r in data["results"] if r["kernel"] == "cuBLAS"][0]["fraction_of_cublas"] == 1.0


def test_cli_writes_json(tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, "-m", "gemmlab", "bench", "--sizes", "64x48x40", "--repeat", "2",
                           "--json", str(out)], capture_output=True, text=True, timeout=300, cwd=provenance.ROOT)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert {r["kernel"] for r in data["results"]} >= set(launch.kernels())
    assert all(r["correct"] for r in data["results"])


SANITIZED = """
import gemmlab
from gemmlab import verify
for name, k in gemmlab.kernels().items():
    A, B = verify.random_operands(37, 41, 29)
    assert verify.check(k(A, B), A, B).ok, name
"""


@pytest.mark.skipif(shutil.which("compute-sanitizer") is None, reason="compute-sanitizer is not installed")
@pytest.mark.parametrize("tool", ["memcheck", "racecheck", "synccheck"])
def test_sanitizer_clean(tool):
    proc = subprocess.run(["compute-sanitizer", f"--tool={tool}", "--error-exitcode=9", sys.executable, "-c", SANITIZED],
                          capture_output=True, text=True, timeout=400, cwd=provenance.ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # memcheck and synccheck end with "ERROR SUMMARY", racecheck with "RACECHECK SUMMARY: 0 hazards"
    assert re.search(r"(ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards displayed \(0 errors)", proc.stdout), proc.stdout
