"""``--target shim``: the torch_xla modules the shim replaces, and the names it defines.

Migrated code imports the shim as ``xrt2pjrt_shim``, the copy carried into the project
(xrt2pjrt/shim_packages.py); ``--target shim`` points the XRT-era imports at it and keeps
every call site."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from xrt2pjrt.shim_packages import CARRIED, installed_name

SHIMMED = {
    "torch_xla.core.xla_model": f"{CARRIED}.xla_model",
    "torch_xla.distributed.xla_multiprocessing": f"{CARRIED}.xla_multiprocessing",
}


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
