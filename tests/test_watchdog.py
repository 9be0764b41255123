"""The watchdog: a child that finishes, one that fails and one that hangs (with a grandchild)."""

import os

import pytest

from gemmlab.runtime import watchdog


def test_finishes():
    o = watchdog.run_isolated("import gemmlab; print('hello from', gemmlab.__name__)", timeout_s=30)
    assert (o.status, o.returncode) == ("ok", 0) and o.stdout.strip() == "hello from gemmlab"
    assert str(o).startswith("finished in")


def test_fails():
    o = watchdog.run_isolated("raise SystemExit('kernel launch failed')", timeout_s=30)
    assert o.status == "error" and o.returncode == 1
    assert "kernel launch failed" in str(o)


def test_hang_is_stopped_with_its_children():
    code = ("import subprocess, sys, time\n"
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
            "print('waiting forever', flush=True)\n"
            "time.sleep(60)\n")
    o = watchdog.run_isolated(code, timeout_s=1.5)
    assert o.status == "timeout" and o.returncode is None
    assert 1.5 <= o.seconds < 10, "the watchdog returned promptly, without waiting for the grandchild"
    assert o.stdout.strip() == "waiting forever"
    assert str(o).startswith("hung: no answer after")


def test_bad_timeout():
    with pytest.raises(ValueError, match="timeout_s must be positive"):
        watchdog.run_isolated("pass", timeout_s=0)


def _executable(path, text="#!/bin/sh\nexit 0\n"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_find_tool_looks_on_path_then_beside_nvcc(tmp_path, monkeypatch):
    toolkit = tmp_path / "cuda" / "bin"
    _executable(toolkit / "nvcc")
    on_path = tmp_path / "bin"
    on_path.mkdir()
    (on_path / "nvcc").symlink_to(toolkit / "nvcc")        # as Debian links /usr/bin/nvcc into the toolkit
    monkeypatch.setenv("PATH", str(on_path))
    monkeypatch.setattr(watchdog, "wheel_bins", lambda: [])  # and no wheel of it
    assert watchdog.find_tool("cuobjdump") is None          # a toolkit without the tool
    beside = _executable(toolkit / "cuobjdump")
    assert watchdog.find_tool("cuobjdump") == str(beside)
    first = _executable(on_path / "cuobjdump")
    assert watchdog.find_tool("cuobjdump") == str(first)    # PATH wins
    elsewhere = _executable(tmp_path / "opt" / "ncu")
    assert watchdog.find_tool("ncu", str(tmp_path / "nowhere"), str(elsewhere)) == str(elsewhere)


def test_find_tool_looks_in_nvidias_wheels_after_the_toolkit(tmp_path, monkeypatch):
    """pip's nvidia-cuda-cuobjdump puts the tool in site-packages/nvidia/cu13/bin, which is on no PATH."""
    site = tmp_path / "site-packages"
    old, new = _executable(site / "nvidia" / "cu12" / "bin" / "cuobjdump"), _executable(site / "nvidia" / "cu13" / "bin" / "cuobjdump")
    monkeypatch.setattr(watchdog.sys, "path", [str(site)])
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert watchdog.wheel_bins() == [str(new.parent), str(old.parent)]      # the newest CUDA major first
    assert watchdog.find_tool("cuobjdump") == str(new)
    toolkit = tmp_path / "cuda" / "bin"
    _executable(toolkit / "nvcc")
    beside = _executable(toolkit / "cuobjdump")
    monkeypatch.setenv("PATH", str(toolkit))
    assert watchdog.find_tool("cuobjdump") == str(beside)                   # the toolkit's own wins


def test_sanitizer_says_why_it_cannot_run(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="tool must be one of"):
        watchdog.run_sanitized("leakcheck", "pass")
    monkeypatch.setenv("PATH", str(tmp_path))              # no compute-sanitizer, no nvcc to look beside
    r = watchdog.run_sanitized("memcheck", "pass")
    assert r.errors is None
    assert str(r) == ("memcheck: compute-sanitizer (part of the CUDA toolkit) is not installed here, so nothing was "
                      "checked: the stored outputs show what it reports on the H200")


def test_child_env_puts_the_course_first_with_no_empty_entry(monkeypatch):
    from gemmlab.runtime import provenance

    monkeypatch.delenv("PYTHONPATH", raising=False)
    assert watchdog.child_env()["PYTHONPATH"] == str(provenance.ROOT)
    monkeypatch.setenv("PYTHONPATH", "")
    assert watchdog.child_env()["PYTHONPATH"] == str(provenance.ROOT)
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    assert watchdog.child_env()["PYTHONPATH"].split(os.pathsep) == [str(provenance.ROOT), "/elsewhere"]
