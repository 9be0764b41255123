"""gemmlab's architecture holds: no import cycles, no import that goes up the layer map of
gemmlab.LAYERS (function-level imports included), every module in exactly one layer, and no module
name that shadows a builtin or a standard-library module in a notebook's namespace."""

from __future__ import annotations

import ast
import builtins
import sys
from pathlib import Path

import pytest

import gemmlab

PACKAGE_DIR = Path(gemmlab.__file__).parent


def imports_of(path: Path, package: str, modules: set[str]) -> set[str]:
    """The package's modules that ``path`` imports, anywhere in the file (also inside functions)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            parts = (node.module or "").split(".") if node.module else []
            if node.level == 1 or (node.level == 0 and parts[:1] == [package]):
                rest = parts if node.level == 1 else parts[1:]
                found |= {rest[0]} if rest else {a.name for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith(package + ".")}
    return found & modules


def architecture_problems(package_dir: Path, layers) -> list[str]:
    """Everything wrong with a package's imports against its layer map ``((name, modules), ...)``, bottom first."""
    package = package_dir.name
    files = {p.stem: p for p in package_dir.glob("*.py") if p.stem != "__init__"}
    layer_of = {m: i for i, (_, ms) in enumerate(layers) for m in ms}
    problems = [f"{m}.py is in no layer" for m in sorted(set(files) - set(layer_of))]
    problems += [f"the layer map names {m}, which is no module" for m in sorted(set(layer_of) - set(files))]
    listed = [m for _, ms in layers for m in ms]
    problems += [f"{m} is in more than one layer" for m in sorted({m for m in listed if listed.count(m) > 1})]
    graph = {m: imports_of(p, package, set(files)) - {m} for m, p in files.items()}
    for m, deps in sorted(graph.items()):
        for d in sorted(deps):
            if m in layer_of and d in layer_of and layer_of[d] > layer_of[m]:
                problems.append(f"{m} (layer {layer_of[m] + 1}) imports {d} from layer {layer_of[d] + 1}, above it")
    state: dict[str, int] = {}

    def visit(m, path):
        state[m] = 1
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                problems.append("import cycle: " + " -> ".join(path[path.index(d):] + [d]))
            elif d not in state:
                visit(d, path + [d])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    return problems


def test_gemmlab_holds_its_layers():
    assert architecture_problems(PACKAGE_DIR, gemmlab.LAYERS) == []


def plant(tmp_path, files: dict[str, str]) -> Path:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name, text in files.items():
        (pkg / f"{name}.py").write_text(text)
    return pkg


def test_a_planted_cycle_is_found(tmp_path):
    pkg = plant(tmp_path, {"a": "from . import b\n", "b": "def f():\n    from .a import x\n", "c": "import pkg.a\n"})
    problems = architecture_problems(pkg, (("low", ("a", "b", "c")),))
    assert problems == ["import cycle: a -> b -> a"]


def test_an_upward_import_and_an_unlisted_module_are_found(tmp_path):
    pkg = plant(tmp_path, {"low": "def f():\n    from pkg import high\n", "high": "from . import low\n", "stray": ""})
    problems = architecture_problems(pkg, (("bottom", ("low",)), ("top", ("high", "ghost"))))
    assert "low (layer 1) imports high from layer 2, above it" in problems
    assert "stray.py is in no layer" in problems and "the layer map names ghost, which is no module" in problems
    assert any(p.startswith("import cycle: ") for p in problems)


@pytest.mark.parametrize("module", sorted(p.stem for p in PACKAGE_DIR.glob("*.py") if not p.stem.startswith("_")))
def test_no_module_shadows_a_builtin_or_the_standard_library(module):
    assert module not in sys.stdlib_module_names, f"gemmlab.{module} shadows the standard library's {module}"
    assert not hasattr(builtins, module), f"gemmlab.{module} shadows the builtin {module}"


def test_the_api_page_follows_the_layer_map():
    """book/api.md documents every module, layer by layer, in the order of gemmlab.LAYERS."""
    import re

    text = (PACKAGE_DIR.parent / "book" / "api.md").read_text(encoding="utf-8")
    documented = re.findall(r"^### `gemmlab\.(\w+)`$", text, re.M)
    assert documented == [m for _, ms in gemmlab.LAYERS for m in ms if m != "__main__"]
