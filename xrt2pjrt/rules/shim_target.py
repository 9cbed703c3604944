"""``--target shim``: point the XRT-era imports at ``xrt2pjrt.shim``, keep every call site.

The shim keeps the XRT-era ``xm``/``xmp`` surface with correct PJRT semantics, so the
smallest diff is the import line alone.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import libcst as cst

from xrt2pjrt.registry import Example, register
from xrt2pjrt.python.rule import PythonRule
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


def _name(text: str) -> cst.Attribute | cst.Name:
    return cst.parse_expression(text)


@register
class ShimImports(PythonRule):
    id = "shim-imports"
    summary = "--target shim: torch_xla's xla_model / xla_multiprocessing imports → xrt2pjrt.shim; calls kept"
    targets = ("shim",)
    nodes = (cst.Import, cst.ImportFrom)
    examples = (
        Example(
            "import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "xmp.spawn(_mp_fn, nprocs=8)\nn = xm.xrt_world_size()\n",
            "import xrt2pjrt.shim.xla_model as xm\nimport xrt2pjrt.shim.xla_multiprocessing as xmp\n\n"
            "xmp.spawn(_mp_fn, nprocs=8)\nn = xm.xrt_world_size()\n",
            options={"target": "shim"},
        ),
        Example(
            "from torch_xla.core import xla_model as xm\nfrom torch_xla.core.xla_model import get_ordinal\n",
            "from xrt2pjrt.shim import xla_model as xm\nfrom xrt2pjrt.shim.xla_model import get_ordinal\n",
            options={"target": "shim"},
        ),
        Example(
            "import torch_xla.core.xla_model\n\nrank = torch_xla.core.xla_model.get_ordinal()\n",
            "# TODO(xrt2pjrt): `import torch_xla.core.xla_model` without an alias: write "
            "`import xrt2pjrt.shim.xla_model as xm` and call it by that name [shim-imports]\n"
            "import torch_xla.core.xla_model\n\nrank = torch_xla.core.xla_model.get_ordinal()\n",
            manual=("without an alias",),
            options={"target": "shim"},
        ),
    )

    def leave(self, ctx, original, updated):
        if isinstance(updated, cst.Import):
            return self._import(ctx, updated)
        if updated.relative or updated.module is None:
            return updated
        module = dotted(updated.module)
        if module in SHIMMED:
            ctx.change(f"from {module} import ... → from {SHIMMED[module]} import ...")
            return updated.with_changes(module=_name(SHIMMED[module]))
        if isinstance(updated.names, cst.ImportStar):
            return updated
        full = [f"{module}.{alias.name.value}" for alias in updated.names]
        shimmed = [name for name in full if name in SHIMMED]
        if not shimmed:
            return updated
        parents = {SHIMMED[name].rpartition(".")[0] for name in shimmed}
        if len(shimmed) != len(full) or len(parents) != 1:
            ctx.manual(f"from {module} imports shimmed and other modules together: split the import, "
                       "then point the shimmed ones at xrt2pjrt.shim")
            return updated
        ctx.change(f"from {module} import ... → from {parents.pop()} import ...")
        return updated.with_changes(module=_name("xrt2pjrt.shim"))

    def _import(self, ctx, node: cst.Import) -> cst.Import:
        names = []
        for alias in node.names:
            full = dotted(alias.name)
            if full in SHIMMED:
                if alias.asname is None:
                    ctx.manual(f"`import {full}` without an alias: write "
                               f"`import {SHIMMED[full]} as {'xm' if 'model' in full else 'xmp'}` and call it by that name")
                else:
                    ctx.change(f"import {full} → import {SHIMMED[full]}")
                    alias = alias.with_changes(name=_name(SHIMMED[full]))
            names.append(alias)
        return node.with_changes(names=names)
