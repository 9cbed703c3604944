"""The shim's names: the package installed with xrt2pjrt, the copy that migrated code imports.

Migrated code imports the shim as ``xrt2pjrt_shim``, the copy ``migrate --write`` carries into
the project (xrt2pjrt/carry.py), not as ``xrt2pjrt.shim``: the job's machines need nothing
installed but torch and torch_xla. ``--target shim`` points the XRT-era imports at it and
keeps every call site."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from xrt2pjrt.python.imports import dotted

INSTALLED = "xrt2pjrt.shim"  # the package, as this tool installs it
CARRIED = "xrt2pjrt_shim"  # the copy of it in the migrated project, which its code imports
SHIMMED = {
    "torch_xla.core.xla_model": f"{CARRIED}.xla_model",
    "torch_xla.distributed.xla_multiprocessing": f"{CARRIED}.xla_multiprocessing",
}


def carried_name(name: str) -> str | None:
    """The name in the carried copy of ``name``, a module of the installed shim; None for
    any other name."""
    if name == INSTALLED or name.startswith(f"{INSTALLED}."):
        return CARRIED + name[len(INSTALLED):]
    return None


def installed_name(name: str) -> str:
    """``name`` with the carried copy's name spelled as the installed package's: the
    two name the same code."""
    if name == CARRIED or name.startswith(f"{CARRIED}."):
        return INSTALLED + name[len(CARRIED):]
    return name


def shim_defines(dotted: str) -> bool:
    """Whether ``dotted``, a name in one of the SHIMMED torch_xla modules, is one the shim
    module defines itself (its other names it takes from torch_xla's module)."""
    module, _, rest = dotted.rpartition(".")
    while module and module not in SHIMMED:
        module, _, head = module.rpartition(".")
        rest = f"{head}.{rest}"
    return bool(module) and rest.split(".")[0] in _shim_names(SHIMMED[module])


@functools.cache
def _shim_names(module: str) -> frozenset[str]:
    """The names a shim module binds at its top level, read from its source (no import:
    the shim imports torch_xla)."""
    path = Path(__file__).parent.parent.joinpath(*installed_name(module).split(".")[1:]).with_suffix(".py")
    tree = ast.parse(path.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return frozenset(names)
