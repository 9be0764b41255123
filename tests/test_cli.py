"""Without a GPU every GPU entry point answers in one sentence, not a traceback."""

import subprocess
import sys

import pytest

import gemmlab
from gemmlab.runtime import gpu

REASON = gpu.unavailable_reason()
no_gpu_only = pytest.mark.skipif(REASON is None, reason="this machine has a usable GPU")


def one_sentence(msg: str) -> bool:
    msg = msg.strip()
    return msg.endswith(".") and "\n" not in msg and "Traceback" not in msg and len(msg) < 400


@no_gpu_only
@pytest.mark.parametrize("command", [["bench", "--sizes", "64"], ["bench", "--sizes", "64", "--precision", "all"], ["info"]])
def test_cli_says_why_in_one_sentence(command, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "gemmlab", *command, *(["--json", str(tmp_path / "b.json")] if command[0] == "bench" else [])],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.startswith("gemmlab: ") and one_sentence(proc.stderr[len("gemmlab: "):]), proc.stderr
    assert not (tmp_path / "b.json").exists()


@no_gpu_only
def test_calling_a_kernel_raises_one_sentence():
    import numpy as np

    A = np.ones((2, 2), np.float32)
    with pytest.raises(gemmlab.GPUUnavailable) as err:
        gemmlab.kernels()["naive"](A, A)
    assert one_sentence(str(err.value)), str(err.value)


def test_bad_size_argument_is_refused():
    proc = subprocess.run([sys.executable, "-m", "gemmlab", "bench", "--sizes", "0"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "must be N or MxNxK with positive integers" in proc.stderr


def test_a_size_given_twice_is_refused_before_the_gpu():
    # 4096 and 4096x4096x4096 are the same size: both rows would take their share from one cuBLAS timing
    proc = subprocess.run([sys.executable, "-m", "gemmlab", "bench", "--sizes", "4096", "512", "4096x4096x4096"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "size 4096x4096x4096 given twice" in proc.stderr


@pytest.mark.parametrize("value", ["0", "-3", "five"])
def test_bad_repeat_is_refused_before_the_gpu(value):
    proc = subprocess.run([sys.executable, "-m", "gemmlab", "bench", "--repeat", value], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and f"{value!r} must be a positive integer" in proc.stderr


def test_unknown_kernel_name_is_refused_before_the_gpu():
    proc = subprocess.run([sys.executable, "-m", "gemmlab", "bench", "--kernels", "fastest"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "no course kernel named fastest; choose from naive" in proc.stderr


def test_precision_names_its_own_kernels():
    proc = subprocess.run([sys.executable, "-m", "gemmlab", "bench", "--precision", "TF32", "--kernels", "tc_prefetch_f16"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "no course kernel named tc_prefetch_f16; choose from tc_prefetch_tf32" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "gemmlab", "bench", "--precision", "FP8"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "invalid choice: 'FP8'" in proc.stderr
