"""gemmlab's architecture holds: the import-linter contracts in pyproject.toml are kept (the layers models <- runtime
<- gemm <- measure | book, the models' independence from the GPU side, the book's from the kernels, no import
cycles), each of them can fail, and no module name shadows a builtin or a standard-library module in a notebook's
namespace."""

from __future__ import annotations

import builtins
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import gemmlab

PACKAGE_DIR = Path(gemmlab.__file__).parent
ROOT = PACKAGE_DIR.parent
CONTRACTS = ("layers", "models-need-no-gpu", "book-needs-no-kernels", "no-cycles")
"""The ids of the contracts in pyproject.toml's [tool.importlinter]."""

# import-linter's `lint-imports` command, run by this interpreter (the venv's) whatever PATH holds.
LINT_IMPORTS = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` in ``root``: the contracts of its pyproject.toml over its gemmlab/ (the current folder comes
    first on the path, before the installed package)."""
    return subprocess.run([sys.executable, "-c", LINT_IMPORTS, "--no-cache", "--no-logo"], cwd=root, capture_output=True,
                          text=True, timeout=300)


def test_gemmlab_keeps_its_contracts():
    run = lint_imports(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in run.stdout, run.stdout


def broken_copy(tmp_path: Path, module: str, line: str) -> Path:
    """A copy of the repository's package and contracts with ``line`` added to gemmlab/``module``."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(PACKAGE_DIR, tmp_path / "gemmlab", ignore=shutil.ignore_patterns("__pycache__"))
    path = tmp_path / "gemmlab" / module
    path.write_text(path.read_text(encoding="utf-8") + "\n" + line + "\n", encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("module, line, broken, chain", [
    ("models/limits.py", "from ..runtime import gpu", {"layers", "models-need-no-gpu", "no-cycles"},
     "gemmlab.models.limits -> gemmlab.runtime.gpu"),
    ("models/verify.py", "def f():\n    import pycuda.driver", {"models-need-no-gpu"}, "gemmlab.models.verify -> pycuda"),
    ("book/source.py", "from ..gemm import registry", {"book-needs-no-kernels"}, "gemmlab.book.source -> gemmlab.gemm.registry"),
    ("book/figures.py", "from ..measure import bench", {"layers", "book-needs-no-kernels"},
     "gemmlab.book.figures -> gemmlab.measure.bench"),
    ("runtime/gpu.py", "from ..gemm import registry", {"layers", "book-needs-no-kernels", "no-cycles"},   # the book, through gpu
     "gemmlab.runtime.gpu -> gemmlab.gemm.registry"),
    ("models/traffic.py", "from . import banks", {"no-cycles"}, "No cycles are allowed in gemmlab.models"),
], ids=["models-up-to-runtime", "models-to-pycuda", "book-to-gemm", "book-to-measure", "runtime-up-to-gemm",
        "a-cycle-in-models"])
def test_the_contracts_can_fail(tmp_path, module, line, broken, chain):
    """One import planted in a copy of the package breaks exactly the contracts it should, and the report names it (an
    import that goes up a layer also closes a cycle between subpackages)."""
    run = lint_imports(broken_copy(tmp_path, module, line))
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"{len(CONTRACTS) - len(broken)} kept, {len(broken)} broken." in run.stdout, run.stdout
    assert chain in run.stdout, run.stdout


def test_the_contracts_are_the_ones_this_test_knows():
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    assert tuple(c["id"] for c in config["contracts"]) == CONTRACTS


def modules() -> list[str]:
    return sorted(".".join(p.relative_to(PACKAGE_DIR).with_suffix("").parts) for p in PACKAGE_DIR.rglob("*.py")
                  if not p.name.startswith("_"))


@pytest.mark.parametrize("module", modules())
def test_no_module_shadows_a_builtin_or_the_standard_library(module):
    """A notebook imports modules by their last name (``from gemmlab.runtime import timing``), and subpackages by
    theirs: neither may hide a builtin or a standard-library module there."""
    for name in module.split("."):
        assert name not in sys.stdlib_module_names, f"gemmlab.{module}: {name} shadows the standard library's {name}"
        assert not hasattr(builtins, name), f"gemmlab.{module}: {name} shadows the builtin {name}"
