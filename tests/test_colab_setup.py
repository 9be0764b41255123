"""The Colab setup cell, run for real against a local clone of this repository.

Colab is faked only where it must be: ``google.colab`` is put in sys.modules and the pip step
is recorded instead of run (PyCUDA cannot build without a GPU driver). The git clone of the release
tag, the move of an earlier clone to it, the path set-up and the import of gemmlab from the clone
are real.
"""

import json
import re
import subprocess
import sys
import textwrap

import pytest

import gemmlab
from notebook_tools import CHAPTERS, ROOT, assigned_string, read, setup_cell

RELEASE = "v" + gemmlab.__version__

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


def git(*args, cwd=None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def local_clone(tmp_path_factory):
    """A clone of this repository's committed HEAD, standing in for the GitHub URL, with the release
    tag on a commit of its own after HEAD (so that a clone of the default branch would be wrong)."""
    if subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True).returncode:
        pytest.skip("the repository has no commit to clone yet")
    origin = tmp_path_factory.mktemp("origin") / "repo"
    git("clone", "--quiet", str(ROOT), str(origin))
    ident = ["-c", "user.name=test", "-c", "user.email=test@example.com"]
    git("-C", str(origin), *ident, "commit", "--quiet", "--allow-empty", "-m", "the release")
    git("-C", str(origin), *ident, "tag", "-f", RELEASE)
    git("-C", str(origin), *ident, "commit", "--quiet", "--allow-empty", "-m", "after the release")
    return origin


def run_cell(src, local_clone, tmp_path, url=None, with_gpu=True):
    target = tmp_path / "content" / "course"
    src = substitute(substitute(src, "REPO_URL", url or local_clone.as_uri()), "COURSE_DIR", str(target))
    (tmp_path / "cell.py").write_text(src)
    (tmp_path / "driver.py").write_text(DRIVER)
    fake_bin = tmp_path / "bin"               # a GPU runtime: nvidia-smi answers
    fake_bin.mkdir(exist_ok=True)
    (fake_bin / "nvidia-smi").write_text("#!/bin/sh\necho 'GPU 0: Tesla T4'\n")
    (fake_bin / "nvidia-smi").chmod(0o755)
    path = f"{fake_bin}:/usr/bin:/bin:/usr/local/bin" if with_gpu else "/usr/bin:/bin"
    env = {"PATH": path, "HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "driver.py", "cell.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    return proc, target


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.name for p in CHAPTERS])
def test_setup_cell_fetches_the_release_and_installs_pycuda(path, local_clone, tmp_path):
    src = setup_cell(read(path)).source
    assert assigned_string(src, "REPO_URL").startswith("https://github.com/")
    assert assigned_string(src, "RELEASE") == RELEASE
    proc, target = run_cell(src, local_clone, tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["gemmlab"] == str(target / "gemmlab" / "__init__.py")
    assert result["kernels"] == str(target / "kernels")
    assert result["cwd"] == str(target / "chapters")
    assert {p.name for p in (ROOT / "kernels").glob("*.cu")} <= set(result["kernel_files"])
    assert all(call[3:] == ["install", "--quiet", "pycuda==2026.1"] for call in result["pip"])
    assert len(result["pip"]) == 2          # run twice: no second clone, the install is repeated
    assert git("-C", str(target), "rev-parse", "HEAD") == git("-C", str(local_clone), "rev-parse", RELEASE + "^{commit}")


def test_setup_cell_moves_an_earlier_clone_to_the_release(local_clone, tmp_path):
    target = tmp_path / "content" / "course"
    git("clone", "--quiet", "--no-tags", local_clone.as_uri(), str(target))
    git("-C", str(target), "checkout", "--quiet", "--detach", "HEAD~2")     # an older course
    assert git("-C", str(target), "tag", "--list", RELEASE) == ""           # that has never seen the tag
    proc, target = run_cell(setup_cell(read(CHAPTERS[0])).source, local_clone, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert git("-C", str(target), "rev-parse", "HEAD") == git("-C", str(local_clone), "rev-parse", RELEASE + "^{commit}")


@pytest.mark.parametrize("what", ["missing repository", "missing tag"])
def test_setup_cell_stops_in_one_sentence_when_the_clone_fails(what, local_clone, tmp_path):
    src = setup_cell(read(CHAPTERS[0])).source
    url = (tmp_path / "no-such-repo").as_uri() if what == "missing repository" else None
    if what == "missing tag":
        src = src.replace(f'RELEASE = "{RELEASE}"', 'RELEASE = "v0.0.0-never"')
    proc, target = run_cell(src, local_clone, tmp_path, url=url)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith("Could not get release v") and "may not be published yet" in lines[0]
    assert lines[0].count(". ") == 0 and lines[0].endswith("wrong.")       # one sentence
    assert not (target / "gemmlab").exists()


def test_setup_cell_stops_in_one_sentence_without_a_gpu_runtime(local_clone, tmp_path):
    proc, target = run_cell(setup_cell(read(CHAPTERS[0])).source, local_clone, tmp_path, with_gpu=False)
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
