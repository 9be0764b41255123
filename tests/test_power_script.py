"""scripts/power_under_load.py on the CPU: how it reads nvidia-smi's samples and a run's batches, the columns of its
stored H200 result, and its refusals. The measurement itself needs a GPU (results/power-h200.txt is one run)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from notebook_tools import load_script

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "power_under_load.py"


@pytest.fixture(scope="module")
def power():
    return load_script("power_under_load")


def test_a_sample_line_is_read_or_refused(power):
    stamp, mhz, watts, reasons = power.parse_sample("2026/12/01 20:07:05.250, 1510, 695.80, 0x0000000000000004\n")
    assert (mhz, watts, reasons) == (1510.0, 695.8, 4) and stamp % 1 == pytest.approx(0.25)
    assert power.parse_sample("timestamp, clocks.current.sm [MHz], power.draw [W], reasons") is None
    assert power.parse_sample("2026/12/01 20:07:05.250, [N/A], 695.80, 0x4") is None


def test_a_reading_keeps_the_steady_part_only(power):
    t0 = 100.0
    # batches: (end time, seconds per call); the first 1.5 s run at another speed and must not count
    batches = [(t0 + 0.5, 1e-3), (t0 + 1.0, 1e-3), (t0 + 2.0, 2e-3), (t0 + 3.0, 2e-3), (t0 + 3.5, 4e-3)]
    samples = [(t0 + 1.0, 1980.0, 300.0, 0), (t0 + 2.0, 1500.0, 690.0, 4), (t0 + 3.0, 1400.0, 700.0, 4 | 0x40)]
    r = power.reading(2e9, t0, t0 + 4.0, batches, samples)
    assert r.tflops == pytest.approx(2e9 / 2e-3 / 1e12)           # the median of the steady batches
    assert (r.mhz, r.watts) == (1450.0, 695.0) and r.reasons == "SW power cap, HW thermal"
    assert r.kflop_per_cycle == pytest.approx(1e12 / 1450e6 / 1e3) and r.gflop_per_joule == pytest.approx(1e12 / 695 / 1e9)
    assert power.reading(2e9, t0, t0 + 1.0, batches, samples) is None   # nothing after the clock settled


def test_the_stored_h200_run_is_consistent(power):
    """Each line's FLOP per cycle and per joule are its TFLOP/s over its clock and its power, and every GEMM ran
    under the power cap while the probe did not: what chapters 8 and 9 say about it."""
    lines = (ROOT / "results" / "power-h200.txt").read_text().splitlines()
    pattern = re.compile(r"^(.+?)\s+([\d.]+) TFLOP/s\s+(\d+) MHz\s+([\d.]+) W\s+([\d.]+) kFLOP/cycle\s+([\d.]+) GFLOP/J"
                         r"\s+reasons: (.+)$")
    rows = [m.groups() for m in map(pattern.match, lines) if m]
    assert len(rows) == 11
    for name, tflops, mhz, watts, per_cycle, per_joule, reasons in rows:
        r = power.Reading(float(tflops), float(mhz), float(watts), reasons)
        # the file prints the clock rounded to 1 MHz
        assert r.kflop_per_cycle == pytest.approx(float(per_cycle), rel=1e-3), name
        assert r.gflop_per_joule == pytest.approx(float(per_joule), rel=1e-3), name
        assert ("SW power cap" in reasons) == (not name.startswith("mma.sync probe")), name


def test_a_reading_against_cublas_is_what_the_energy_run_printed(power):
    # results/energy-h200-tile-groups.txt: cuBLAS and the last step (g8) alone at 4096^3, and the line it printed
    cublas, last = power.Reading(648.3, 1522, 690.1, "SW power cap"), power.Reading(646.2, 1509, 688.1, "SW power cap")
    assert last.against(cublas) == "99.7% per second, 100.5% per cycle, 100.0% per joule"
    assert "last_g8      of cuBLAS: 99.7% per second, 100.5% per cycle, 100.0% per joule" in \
        (ROOT / "results" / "energy-h200-tile-groups.txt").read_text()


@pytest.mark.parametrize("args, message", [(["--kernels", "hopper_tmastore_f16"], "no BF16 kernel named hopper_tmastore_f16"),
                                           (["--precision", "FP16", "--kernels", "tc_wide_bf16"], "no FP16 kernel named tc_wide_bf16"),
                                           (["--precision", "TF32"], "invalid choice: 'TF32'"),
                                           (["--seconds", "1"], "--seconds more than the 1.5 s"),
                                           (["--sizes", "0"], "sizes must be positive")])
def test_bad_arguments_are_refused_before_the_gpu(args, message):
    proc = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
