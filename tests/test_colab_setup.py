"""The Colab setup cell, run for real against a local clone of this repository.

Colab is faked only where it must be: ``google.colab`` is put in sys.modules, the pip step
is recorded instead of run (PyCUDA cannot build without a GPU driver), and the release's download
address answers as the test says (a wheel there or not; the test machine may have no network). The git
clone of the release tag, the move of an earlier clone to it, the path set-up, the import of gemmlab
from the clone and its choice between the wheel and a build from source are real.
"""

import json
import re
import subprocess
import sys
import textwrap

import pytest

import gemmlab
from gemmlab.runtime import colab
from notebook_tools import CHAPTERS, ROOT, assigned_string, read, setup_cell

RELEASE = "v" + gemmlab.__version__

pytestmark = pytest.mark.skipif(not CHAPTERS, reason="no chapter notebooks yet")

DRIVER = textwrap.dedent('''
    import io, json, os, subprocess, sys, types, urllib.error, urllib.request
    sys.modules["google.colab"] = types.ModuleType("google.colab")
    pip_calls, asked, real_popen = [], [], subprocess.Popen
    class FakePip:                         # pip "succeeds" and prints one line
        def __init__(self, cmd, *args, **kwargs):
            pip_calls.append(list(cmd))
            self.stdout = io.StringIO("Successfully installed pycuda\\n")
        def wait(self):
            return 0
    def popen(cmd, *args, **kwargs):
        if list(cmd[:3]) == [sys.executable, "-m", "pip"]:
            return FakePip(cmd)
        return real_popen(cmd, *args, **kwargs)
    class Answer:
        status = 200
        def __enter__(self):
            return self
        def __exit__(self, *exc):
            return False
    def urlopen(request, timeout=None):    # the release's assets: a wheel there only if the test says so
        asked.append(request.full_url)
        if os.environ.get("WHEEL_IN_RELEASE") == "1":
            return Answer()
        raise urllib.error.HTTPError(request.full_url, 404, "Not Found", {}, None)
    subprocess.Popen, urllib.request.urlopen = popen, urlopen
    cell = open(sys.argv[1]).read()
    exec(compile(cell, "<setup cell>", "exec"))
    exec(compile(cell, "<setup cell, run twice>", "exec"))
    import os, gemmlab, gemmlab.runtime.provenance as p
    print(json.dumps({"cwd": os.getcwd(), "gemmlab": gemmlab.__file__, "kernels": str(p.KERNELS_DIR),
                      "pip": pip_calls, "asked": asked, "kernel_files": sorted(os.listdir(p.KERNELS_DIR))}))
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


def run_cell(src, local_clone, tmp_path, url=None, with_gpu=True, wheel=False):
    target = tmp_path / "content" / "course"
    src = substitute(substitute(src, "REPO_URL", url or local_clone.as_uri()), "COURSE_DIR", str(target))
    (tmp_path / "cell.py").write_text(src)
    (tmp_path / "driver.py").write_text(DRIVER)
    fake_bin = tmp_path / "bin"               # a GPU runtime: nvidia-smi answers
    fake_bin.mkdir(exist_ok=True)
    (fake_bin / "nvidia-smi").write_text("#!/bin/sh\necho 'GPU 0: Tesla T4'\n")
    (fake_bin / "nvidia-smi").chmod(0o755)
    path = f"{fake_bin}:/usr/bin:/bin:/usr/local/bin" if with_gpu else "/usr/bin:/bin"
    env = {"PATH": path, "HOME": str(tmp_path), "WHEEL_IN_RELEASE": "1" if wheel else "0"}
    proc = subprocess.run([sys.executable, "driver.py", "cell.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    return proc, target


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.name for p in CHAPTERS])
def test_setup_cell_fetches_the_release_and_installs_pycuda(path, local_clone, tmp_path):
    """Without a wheel in the release: PyCUDA is built from source, said first, with pip's output shown."""
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
    assert all(call[3:] == ["install", "--progress-bar", "off", colab.PYCUDA] for call in result["pip"])
    assert len(result["pip"]) == 2          # run twice: no second clone, the install is repeated
    assert result["asked"] == [colab.wheel_url(local_clone.as_uri(), RELEASE)] * 2
    assert "building pycuda==" in proc.stdout and "takes 3 to 4 minutes" in proc.stdout
    assert "Successfully installed pycuda" in proc.stdout        # pip's own lines reach the notebook
    assert git("-C", str(target), "rev-parse", "HEAD") == git("-C", str(local_clone), "rev-parse", RELEASE + "^{commit}")


def test_setup_cell_installs_the_release_wheel_where_there_is_one(local_clone, tmp_path):
    proc, target = run_cell(setup_cell(read(CHAPTERS[0])).source, local_clone, tmp_path, wheel=True)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    url = colab.wheel_url(local_clone.as_uri(), RELEASE)
    assert result["pip"][0][3:] == ["install", "--progress-bar", "off", "--quiet", url]
    assert url.endswith(f"/releases/download/{RELEASE}/{colab.wheel_name()}")
    assert "from source" not in proc.stdout and "installed from the release wheel" in proc.stdout


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


def test_the_wheel_is_named_as_pip_names_it():
    assert colab.wheel_name((3, 12)) == f"pycuda-{colab.PYCUDA_VERSION}-cp312-cp312-linux_x86_64.whl"
    assert colab.wheel_url("https://github.com/o/r/", "v9.9.9", (3, 11)) == \
        f"https://github.com/o/r/releases/download/v9.9.9/pycuda-{colab.PYCUDA_VERSION}-cp311-cp311-linux_x86_64.whl"


def test_no_network_means_no_wheel():
    assert colab.exists("http://127.0.0.1:9/no-such-wheel.whl", timeout_s=2) is False
    assert colab.exists("not a url") is False


def test_a_failed_install_stops_in_one_sentence(monkeypatch):
    """pip's failure becomes one sentence with pip's last line, not a traceback."""
    monkeypatch.setattr(colab.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(colab, "_pip", lambda args, say: (False, "error: no CUDA toolkit found"))
    said: list[str] = []
    with pytest.raises(SystemExit) as stop:
        colab.install_pycuda("https://github.com/o/r", "v1.0.0", say=said.append, has_wheel=lambda url: False)
    assert str(stop.value) == (f"Could not install PyCUDA {colab.PYCUDA_VERSION} (error: no CUDA toolkit found): "
                               "run this cell again, or restart the runtime first.")
    assert said and "from source" in said[0]


def test_an_installed_pycuda_is_left_alone(monkeypatch):
    monkeypatch.setattr(colab.importlib.util, "find_spec", lambda name: object())
    monkeypatch.setattr(colab, "_pip", lambda args, say: pytest.fail("pip must not run"))
    assert colab.install_pycuda("https://github.com/o/r", "v1.0.0", has_wheel=lambda url: True) == "present"
