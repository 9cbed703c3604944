"""``--target shim``: point the XRT-era imports at ``xrt2pjrt.shim``, keep every call site.

The shim keeps the XRT-era ``xm``/``xmp`` surface with correct PJRT semantics, so the
smallest diff is the import line alone."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from xrt2pjrt.python.imports import dotted

SHIMMED = {
    "torch_xla.core.xla_model": "xrt2pjrt.shim.xla_model",
    "torch_xla.distributed.xla_multiprocessing": "xrt2pjrt.shim.xla_multiprocessing",
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
    path = Path(__file__).parent.parent.joinpath(*module.split(".")[1:]).with_suffix(".py")
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
