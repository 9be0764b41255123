"""The type check: mypy over gemmlab/ and scripts/ (``[tool.mypy]`` in pyproject.toml) and, through nbQA, over
the code cells of every notebook (``[tool.nbqa.addopts]``), at zero errors.

Every gemmlab function is annotated, so a notebook cell that hands a gemmlab function the wrong kind of object
fails here, on a CPU. The GPU runner would find the same mistake only by running the cell on a GPU; until
then a reader meets the traceback. The last test shows the check catching such a cell: chapter 7's tuning
table as it was before its fix.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from notebook_tools import ROOT

TIMEOUT_S = 900          # a cold mypy cache (a fresh clone, CI) checks NumPy's and matplotlib's stubs too


def typecheck(*args: str) -> subprocess.CompletedProcess:
    """``python -m ARGS`` from the repository root, where pyproject.toml configures mypy and nbQA."""
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=TIMEOUT_S, env={**os.environ, "MYPY_FORCE_COLOR": "0", "NO_COLOR": "1"})


def test_gemmlab_and_scripts_type_check():
    run = typecheck("mypy")
    assert run.returncode == 0, run.stdout + run.stderr


def test_every_notebook_type_checks():
    run = typecheck("nbqa", "mypy", "chapters", "book")
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_check_fails_on_chapter_7_before_its_fix():
    """Chapter 7 handed ``bench.of_cublas`` a ``tuning.Trial`` (which has no share of cuBLAS) instead of the trial's
    bench result; on a GPU the cell raised AttributeError. Undo the fix in a copy: the check must fail there."""
    fixed = "bench.of_cublas(t.result, cublas)"
    text = (ROOT / "chapters" / "07_toward_cublas.ipynb").read_text(encoding="utf-8")
    assert fixed in text, "chapter 7's tuning table no longer reads the trial's result"
    folder = ROOT / "_build" / "typecheck-revert"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    (folder / "07_toward_cublas.ipynb").write_text(text.replace(fixed, "bench.of_cublas(t, cublas)"), encoding="utf-8")
    run = typecheck("nbqa", "mypy", str((folder / "07_toward_cublas.ipynb").relative_to(ROOT)))
    out = run.stdout + run.stderr
    assert run.returncode != 0 and 'Argument 1 to "of_cublas" has incompatible type "Trial"' in out, out
