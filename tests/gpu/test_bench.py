"""The bench on small sizes and the command line that writes its JSON."""

import json
import subprocess
import sys

from gemmlab import bench, models, provenance, registry


def test_ladder_small_sizes_all_correct():
    sizes = [(96, 80, 72), (33, 17, 5)]
    results = bench.ladder(sizes, repeat=2, log=lambda *_: None)
    for M, N, K in sizes:
        at = [r for r in results if (r.M, r.N, r.K) == (M, N, K)]
        assert [r.kernel for r in at][: len(registry.kernels())] == list(registry.kernels())
        for r in at:
            assert r.correct and r.seconds > 0
            assert abs(r.tflops * 1e12 * r.seconds - models.gemm_flops(M, N, K)) < 1e-6 * models.gemm_flops(M, N, K)


def test_cli_writes_json(tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, "-m", "gemmlab", "bench", "--sizes", "64x48x40", "--repeat", "2",
                           "--json", str(out)], capture_output=True, text=True, timeout=300, cwd=provenance.ROOT)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert {r["kernel"] for r in data["results"]} >= set(registry.kernels())
    assert all(r["correct"] for r in data["results"])
