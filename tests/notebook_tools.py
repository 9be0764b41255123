"""Shared helpers of the notebook tests: reading chapters, _config.yml and cell sources, and loading the scripts in
scripts/ that tests exercise."""

import importlib.util
import re
import sys
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
# Pages among the chapters that carry no number of their own: their title is a name ("# Start here: ..."),
# not "# N. Title", and their file name sorts them before the chapter whose number they borrow.
UNNUMBERED = {"00_first_kernel.ipynb"}

# A solution that calls one of these needs a GPU: tests/gpu/test_exercise_solutions.py runs it there,
# tests/test_notebooks.py runs the others on any machine. They are spelled as cells spell them, a module by its last
# name (`from gemmlab.measure import bench`, then `bench.`): the registry's kernels, every module of gemmlab.measure,
# the launchers that take tensor maps, compiling a unit, and PyCUDA itself.
GPU_MODULES = ("gemmlab.kernels(", "gemmlab.lookup(", "registry.", "bench.", "precisions.", "ceilings.", "probes.", "tuning.",
               "nsight.", "driver.", "exercises.", "wgmma.", "tensor_tma.", "tensor_maps.", "units.load(", ".compiled()",
               "pycuda")


def load_script(name: str):
    """scripts/NAME.py as a module (registered in sys.modules, where dataclasses look their module up)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text())


def read(path: Path):
    return nbformat.read(path, as_version=4)


def tags(cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def output_text(cell) -> str:
    """All text a code cell's outputs carry (streams, text/plain, text/markdown, errors)."""
    parts = []
    for out in cell.get("outputs", []):
        if "text" in out:
            parts.append(out["text"])
        for key in ("text/plain", "text/markdown", "text/html"):
            if key in out.get("data", {}):
                parts.append(out["data"][key])
        if out.get("output_type") == "error":
            parts.append("\n".join(out.get("traceback", [])))
    return "\n".join(p if isinstance(p, str) else "".join(p) for p in parts)


def setup_cell(nb):
    return next(c for c in nb.cells if "colab-setup" in tags(c))


def assigned_string(src: str, name: str) -> str:
    m = re.search(rf'^{name} = "([^"]*)"', src, re.M)
    assert m, f"the setup cell assigns no {name}"
    return m.group(1)
