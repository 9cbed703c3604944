"""The shim's floors, as its package docstring lists them, held by reading every import (ast).

A module imports only modules on its own floor or below, at its top (an import inside a
function would hide a circle); no two modules import each other, even through others; and
the shim imports the standard library, torch, torch_xla and PyYAML (torch_xla's own
requirement) and nothing of the codemod side.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import xrt2pjrt.shim

SHIM = Path(xrt2pjrt.shim.__file__).resolve().parent
PACKAGE = "xrt2pjrt.shim"
ALLOWED_OUTSIDE = {"torch", "torch_xla", "yaml"}


def _floors() -> dict[str, int]:
    """{module (relative to the shim, 'cpu.world'): its floor number} from the docstring."""
    floors = {}
    for number, names in re.findall(r"^(\d+)\. (.*?):", xrt2pjrt.shim.__doc__, re.MULTILINE):
        for name in re.findall(r"``([\w.]+)``", names):
            assert name not in floors, f"{name} is on two floors"
            floors[name] = int(number)
    return floors


def _modules() -> dict[str, Path]:
    return {
        ".".join(path.relative_to(SHIM).with_suffix("").parts): path
        for path in SHIM.rglob("*.py")
        if path.name != "__init__.py"
    }


def _imports(path: Path, module: str):
    """(imported module, line, at the module's top level) for every import in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(node) for node in tree.body}
    package = f"{PACKAGE}.{module}".rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno, id(node) in top
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                yield base, node.lineno, id(node) in top
                yield f"{base}.{alias.name}", node.lineno, id(node) in top  # a submodule, when it is one


def _edges() -> dict[str, list[tuple[str, int, bool]]]:
    """{module: [(shim module it imports, line, at top level)]}."""
    modules = _modules()
    edges = {}
    for module, path in modules.items():
        edges[module] = [
            (name[len(PACKAGE) + 1 :], line, at_top)
            for name, line, at_top in _imports(path, module)
            if name.startswith(f"{PACKAGE}.") and name[len(PACKAGE) + 1 :] in modules
        ]
    return edges


def test_every_module_of_the_shim_is_on_one_floor():
    assert sorted(_floors()) == sorted(_modules())


def test_a_package_of_the_shim_is_its_docstring_alone():
    """So that importing a low floor never loads a high one through its package."""
    for init in SHIM.rglob("__init__.py"):
        body = ast.parse(init.read_text(encoding="utf-8")).body
        assert len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant), init


def test_no_import_runs_up_a_floor_or_hides_in_a_function():
    floors = _floors()
    wrong = [
        f"{module}:{line} imports {target} ({'floor %d -> %d' % (floors[module], floors[target])})"
        for module, imported in _edges().items()
        for target, line, at_top in imported
        if floors[target] < floors[module]
    ]
    hidden = [
        f"{module}:{line} imports {target} inside a function or class"
        for module, imported in _edges().items()
        for target, line, at_top in imported
        if not at_top
    ]
    assert wrong + hidden == []


def test_no_circle():
    edges = {module: {target for target, _, _ in imported} for module, imported in _edges().items()}
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        assert module not in path, f"circle: {' -> '.join(path[path.index(module) :] + [module])}"
        if module in done:
            return
        for target in sorted(edges[module]):
            visit(target, path + [module])
        done.add(module)

    for module in sorted(edges):
        visit(module, [])


def test_the_shim_needs_nothing_but_the_standard_library_torch_and_torch_xla():
    outside = []
    for module, path in _modules().items():
        for name, line, _ in _imports(path, module):
            root = name.split(".")[0]
            if root == "xrt2pjrt":
                if not (name == PACKAGE or name.startswith(f"{PACKAGE}.")):
                    outside.append(f"{module}:{line} imports {name}: the codemod side")
            elif root not in sys.stdlib_module_names and root not in ALLOWED_OUTSIDE:
                outside.append(f"{module}:{line} imports {name}")
    assert outside == []
