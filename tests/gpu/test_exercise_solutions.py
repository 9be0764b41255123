"""Every exercise solution that needs a GPU runs, and every kernel solution passes gemmlab's check."""

import re
import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from notebook_tools import CHAPTERS, GPU_MODULES, read  # noqa: E402


def gpu_solutions():
    for path in CHAPTERS:
        for cell in read(path).cells:
            if cell.cell_type != "markdown":
                continue
            for details in re.findall(r"<details>(.*?)</details>", cell.source, re.S):
                for code in re.findall(r"```python\n(.*?)```", details, re.S):
                    if any(g in code for g in GPU_MODULES):
                        yield pytest.param(code, id=f"{path.stem}-{len(code)}")


@pytest.mark.parametrize("code", list(gpu_solutions()))
def test_solution_runs(code, monkeypatch):
    from gemmlab.measure import exercises

    verdicts = []
    real = exercises.check_kernel
    monkeypatch.setattr(exercises, "check_kernel", lambda *a, **k: verdicts.append(real(*a, **k)) or verdicts[-1])
    exec(compile(textwrap.dedent(code), "<solution>", "exec"), {})
    assert all(verdicts), "a kernel solution failed gemmlab's check"
