"""No import runs from a lower floor to a higher one, and none inside a function hides a
cycle: the floors are the ones xrt2pjrt/__init__.py's docstring writes down, and every
module's imports are read from its source (ast), those inside functions too."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import xrt2pjrt

PACKAGE = Path(xrt2pjrt.__file__).resolve().parent


def _floors() -> list[tuple[str, list[str]]]:
    """(floor, module patterns), top to bottom, from the package docstring's table."""
    table = xrt2pjrt.__doc__.split("A module is on the first floor a pattern of which names it.")[1]
    floors: list[tuple[str, list[str]]] = []
    for line in table.strip("\n").splitlines():
        head = re.match(r"    (\w+)\s+(.*)", line)
        if head:
            floors.append((head[1], head[2].split()))
        else:
            floors[-1][1].extend(line.split())
    return floors


FLOORS = _floors()


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _modules()


def floor_of(module: str) -> int:
    for level, (_, patterns) in enumerate(FLOORS):
        if any(module == p or (p.endswith(".*") and (module == p[:-2] or module.startswith(p[:-1]))) for p in patterns):
            return level
    raise AssertionError(f"{module} is on no floor: add it to xrt2pjrt/__init__.py's table")


@functools.cache
def _imports(module: str) -> list[tuple[str, bool, int]]:
    """(imported module of the package, inside a function, line) for each import of ``module``."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    local = {
        id(n)
        for f in ast.walk(tree)
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
        for n in ast.walk(f)
        if n is not f
    }
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name.startswith("xrt2pjrt") and name != module:
                out.append((name, id(node) in local, node.lineno))
    return out


def test_every_module_is_on_a_floor():
    for module in MODULES:
        floor_of(module)


def test_no_import_runs_up_a_floor():
    upward = [
        f"{m}:{line} imports {target} ({FLOORS[floor_of(target)][0]}, above {FLOORS[floor_of(m)][0]})"
        for m in MODULES
        for target, _, line in _imports(m)
        if floor_of(target) < floor_of(m)
    ]
    assert not upward, "\n".join(upward)


def _reaches(start: str, goal: str) -> bool:
    """Whether ``start`` imports ``goal``, through imports at the top of modules."""
    seen, pending = set(), [start]
    while pending:
        module = pending.pop()
        if module == goal:
            return True
        if module not in seen:
            seen.add(module)
            pending += [t for t, inside, _ in _imports(module) if not inside]
    return False


def test_no_cycle_at_the_top_and_none_hidden_in_a_function():
    cycles = [
        f"{m}:{line} imports {target}, which imports {m}" + (" (inside a function)" if inside else "")
        for m in MODULES
        for target, inside, line in _imports(m)
        if _reaches(target, m)
    ]
    assert not cycles, "\n".join(cycles)


def test_the_floors_see_what_they_are_meant_to():
    """The test reads imports as they are written: a rule's import of its analyses, inside
    a function or not, and the registry's way up only through discovery."""
    assert ("xrt2pjrt.python.rule", False) in {(t, i) for t, i, _ in _imports("xrt2pjrt.rules.spawn.spawn_exit")}
    assert [t for t, _, _ in _imports("xrt2pjrt.registry")] == ["xrt2pjrt.rule_index"]
    assert (
        floor_of("xrt2pjrt.python.rewriter")
        < floor_of("xrt2pjrt.rules.api.api_ordinal")
        < floor_of("xrt2pjrt.python.context")
    )
