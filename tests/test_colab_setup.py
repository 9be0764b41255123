"""The Colab setup cell, run for real against a local clone of this repository.

Colab is faked only where it must be: ``google.colab`` is put in sys.modules and the pip step
is recorded instead of run (PyCUDA cannot build without a GPU driver). The git clone, the path
set-up and the import of gemmlab from the clone are real.
"""

import json
import re
import subprocess
import sys
import textwrap

import pytest

from notebook_tools import CHAPTERS, ROOT, assigned_string, read, setup_cell

pytestmark = pytest.mark.skipif(not CHAPTERS, reason="no chapter notebooks yet")

DRIVER = textwrap.dedent('''
    import json, subprocess, sys, types
    sys.modules["google.colab"] = types.ModuleType("google.colab")
    pip_calls, real_run = [], subprocess.run
    def run(cmd, *args, **kwargs):
        if list(cmd[:3]) == [sys.executable, "-m", "pip"]:
            pip_calls.append(list(cmd))
            return subprocess.CompletedProcess(cmd, 0)
        return real_run(cmd, *args, **kwargs)
    subprocess.run = run
    cell = open(sys.argv[1]).read()
    exec(compile(cell, "<setup cell>", "exec"))
    exec(compile(cell, "<setup cell, run twice>", "exec"))
    import os, gemmlab, gemmlab.provenance as p
    print(json.dumps({"cwd": os.getcwd(), "gemmlab": gemmlab.__file__, "kernels": str(p.KERNELS_DIR),
                      "pip": pip_calls, "kernel_files": sorted(os.listdir(p.KERNELS_DIR))}))
''')


def substitute(src: str, name: str, value: str) -> str:
    out, n = re.subn(rf'^{name} = "[^"]*"', f'{name} = "{value}"', src, flags=re.M)
    assert n == 1, f"the setup cell must assign {name} exactly once"
    return out


@pytest.fixture(scope="module")
def local_clone(tmp_path_factory):
    """A clone of this repository's committed HEAD, standing in for the GitHub URL."""
    if subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True).returncode:
        pytest.skip("the repository has no commit to clone yet")
    origin = tmp_path_factory.mktemp("origin") / "repo"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(origin)], check=True)
    return origin


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.name for p in CHAPTERS])
def test_setup_cell_fetches_the_course_and_installs_pycuda(path, local_clone, tmp_path):
    src = setup_cell(read(path)).source
    assert assigned_string(src, "REPO_URL").startswith("https://github.com/")
    target = tmp_path / "content" / "course"
    src = substitute(substitute(src, "REPO_URL", local_clone.as_uri()), "COURSE_DIR", str(target))
    (tmp_path / "cell.py").write_text(src)
    (tmp_path / "driver.py").write_text(DRIVER)
    fake_bin = tmp_path / "bin"               # a GPU runtime: nvidia-smi answers
    fake_bin.mkdir()
    (fake_bin / "nvidia-smi").write_text("#!/bin/sh\necho 'GPU 0: Tesla T4'\n")
    (fake_bin / "nvidia-smi").chmod(0o755)
    env = {"PATH": f"{fake_bin}:/usr/bin:/bin:/usr/local/bin", "HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "driver.py", "cell.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["gemmlab"] == str(target / "gemmlab" / "__init__.py")
    assert result["kernels"] == str(target / "kernels")
    assert result["cwd"] == str(target / "chapters")
    assert {p.name for p in (ROOT / "kernels").glob("*.cu")} <= set(result["kernel_files"])
    assert all(call[3:] == ["install", "--quiet", "pycuda==2026.1"] for call in result["pip"])
    assert len(result["pip"]) == 2          # run twice: no second clone, the install is repeated


def test_setup_cell_stops_in_one_sentence_without_a_gpu_runtime(local_clone, tmp_path):
    src = setup_cell(read(CHAPTERS[0])).source
    target = tmp_path / "content" / "course"
    src = substitute(substitute(src, "REPO_URL", local_clone.as_uri()), "COURSE_DIR", str(target))
    (tmp_path / "cell.py").write_text(src)
    (tmp_path / "driver.py").write_text(DRIVER)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}      # no nvidia-smi: a CPU runtime
    proc = subprocess.run([sys.executable, "driver.py", "cell.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.strip() == ("No GPU in this Colab runtime: choose Runtime > Change runtime type > T4 GPU, "
                                   "then run this cell again.")
    assert not target.exists()


def test_setup_cell_does_nothing_off_colab(tmp_path):
    src = setup_cell(read(CHAPTERS[0])).source
    (tmp_path / "cell.py").write_text(src + "\nimport json; print(json.dumps(sys.path[:3]))\n")
    proc = subprocess.run([sys.executable, "cell.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip().startswith("[")
    assert "/content" not in proc.stdout
    assert not (tmp_path / "content").exists()
