"""The watchdog: a child that finishes, one that fails and one that hangs (with a grandchild)."""

import os

import pytest

from gemmlab import watchdog


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


def test_sanitizer_says_why_it_cannot_run_or_counts(monkeypatch):
    import shutil

    with pytest.raises(ValueError, match="tool must be one of"):
        watchdog.run_sanitized("leakcheck", "pass")
    if shutil.which("compute-sanitizer"):
        pytest.skip("compute-sanitizer is installed here; tests/gpu covers it")
    monkeypatch.setattr(watchdog.os.path, "exists", lambda p: False)
    r = watchdog.run_sanitized("memcheck", "pass")
    assert r.errors is None and str(r) == "memcheck: compute-sanitizer is not installed on this machine"


def test_child_env_puts_the_course_first_with_no_empty_entry(monkeypatch):
    from gemmlab import provenance

    monkeypatch.delenv("PYTHONPATH", raising=False)
    assert watchdog.child_env()["PYTHONPATH"] == str(provenance.ROOT)
    monkeypatch.setenv("PYTHONPATH", "")
    assert watchdog.child_env()["PYTHONPATH"] == str(provenance.ROOT)
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    assert watchdog.child_env()["PYTHONPATH"].split(os.pathsep) == [str(provenance.ROOT), "/elsewhere"]
