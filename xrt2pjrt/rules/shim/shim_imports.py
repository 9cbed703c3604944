"""``--target shim``: point the XRT-era imports at the shim, keep every call site.

The shim keeps the XRT-era ``xm``/``xmp`` surface with correct PJRT semantics, so the
smallest diff is the import line alone. The imports name ``xrt2pjrt_shim``, the shim's copy
that ``migrate --write`` carries into the project (beside the paths migrated, stamped with
the version of xrt2pjrt that wrote it, refreshed by the next run): xrt2pjrt is not on PyPI,
a pod's workers fetch nothing, and the shim's version then travels with the code it runs.
Code migrated before the copy, which imports ``xrt2pjrt.shim``, is pointed at the copy too.
"""

from __future__ import annotations

import libcst as cst

from xrt2pjrt.python.imports import dotted
from xrt2pjrt.python.rule import PythonRule
from xrt2pjrt.python.shim_names import SHIMMED
from xrt2pjrt.shim_packages import CARRIED, carried_name
from xrt2pjrt.registry import Example, dedent


def _name(text: str) -> cst.Attribute | cst.Name:
    return cst.parse_expression(text)


def _carried(module: str) -> str | None:
    """What the code imports instead of ``module``: the carried shim's module, or None."""
    return SHIMMED.get(module) or carried_name(module)


def _alias(module: str) -> str:
    """The name XRT-era code gave the module: xm, xmp, or its last part."""
    last = module.rpartition(".")[2]
    return {"xla_model": "xm", "xla_multiprocessing": "xmp", "parallel_loader": "pl"}.get(last, last)


class ShimImports(PythonRule):
    id = "shim-imports"
    summary = "--target shim: xla_model / xla_multiprocessing imports → xrt2pjrt_shim; calls kept"
    targets = ("shim",)
    words = ("torch_xla", "xrt2pjrt")
    nodes = (cst.Import, cst.ImportFrom)
    examples = (
        Example(
            dedent("""
                import torch_xla.core.xla_model as xm
                import torch_xla.distributed.xla_multiprocessing as xmp

                xmp.spawn(_mp_fn, nprocs=8)
                n = xm.xrt_world_size()
            """),
            dedent("""
                import xrt2pjrt_shim.xla_model as xm
                import xrt2pjrt_shim.xla_multiprocessing as xmp

                xmp.spawn(_mp_fn, nprocs=8)
                n = xm.xrt_world_size()
            """),
            options={"target": "shim"},
        ),
        Example(
            dedent("""
                from torch_xla.core import xla_model as xm
                from torch_xla.core.xla_model import get_ordinal
            """),
            dedent("""
                from xrt2pjrt_shim import xla_model as xm
                from xrt2pjrt_shim.xla_model import get_ordinal
            """),
            options={"target": "shim"},
        ),
        Example(
            dedent("""
                import xrt2pjrt.shim.xla_model as xm
                from xrt2pjrt.shim import xla_multiprocessing as xmp
            """),
            dedent("""
                import xrt2pjrt_shim.xla_model as xm
                from xrt2pjrt_shim import xla_multiprocessing as xmp
            """),
            options={"target": "shim"},
        ),
        Example(
            dedent("""
                import torch_xla.core.xla_model

                rank = torch_xla.core.xla_model.get_ordinal()
            """),
            dedent("""
                # TODO(xrt2pjrt): import it as xm from the shim [shim-imports]
                import torch_xla.core.xla_model

                rank = torch_xla.core.xla_model.get_ordinal()
            """),
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
        if _carried(module):
            ctx.change(f"from {module} import ... → from {_carried(module)} import ...")
            return updated.with_changes(module=_name(_carried(module)))
        if isinstance(updated.names, cst.ImportStar):
            return updated
        full = [f"{module}.{alias.name.value}" for alias in updated.names]
        shimmed = [name for name in full if name in SHIMMED]
        if not shimmed:
            return updated
        parents = {SHIMMED[name].rpartition(".")[0] for name in shimmed}
        if len(shimmed) != len(full) or len(parents) != 1:
            ctx.decide(
                "split the import: shimmed names apart",
                detail=f"from {module} imports shimmed and other modules together: split the import, "
                f"then point the shimmed ones at {CARRIED}",
            )
            return updated
        ctx.change(f"from {module} import ... → from {parents.pop()} import ...")
        return updated.with_changes(module=_name(CARRIED))

    def _import(self, ctx, node: cst.Import) -> cst.Import:
        names = []
        for alias in node.names:
            full = dotted(alias.name)
            carried = _carried(full)
            if carried and alias.asname is None:
                ctx.decide(
                    f"import it as {_alias(carried)} from the shim",
                    detail=f"`import {full}` without an alias: write `import {carried} as {_alias(carried)}` "
                    "and call it by that name",
                )
            elif carried:
                ctx.change(f"import {full} → import {carried}")
                alias = alias.with_changes(name=_name(carried))
            names.append(alias)
        return node.with_changes(names=names)
