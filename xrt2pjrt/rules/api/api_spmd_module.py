"""torch_xla.experimental.xla_sharding / xla_sharded_tensor (2.0–2.4) → torch_xla.distributed.spmd,
in the import, where everything the file takes from it is there under the same name.

SPMD's Python API lived in torch_xla.experimental.xla_sharding (and xla_sharded_tensor)
from torch_xla 2.0; 2.2 moved it to torch_xla.distributed.spmd, kept the old modules as
aliases with a deprecation warning, and 2.5 deleted them. Mesh, HybridMesh,
mark_sharding, clear_sharding, wrap_if_sharded, ShardingSpec, ShardingType,
XLAShardedTensor, XLAShard, XLAPatchedLinear and xla_patched_nn_linear_forward are the same
objects under the new module, with the same parameters (XLAShardedTensor took two more
keywords), read from the API surface tables (python/api_surface.txt). So where a file takes
only these names from the old module, the import is pointed at the new one and nothing
else changes (safe: the old import fails on 2.5+, the new one gives the same objects). A
file that takes anything else (a private helper, the module passed around) is left to
import-gone-module, which reports it; so is an import nothing uses, which it removes.
"""

from __future__ import annotations

import ast

import libcst as cst

from xrt2pjrt.python import api_surface, imports
from xrt2pjrt.python.rule import PythonRule
from xrt2pjrt.registry import Example, dedent

NEW = "torch_xla.distributed.spmd"
OLD = ("torch_xla.experimental.xla_sharding", "torch_xla.experimental.xla_sharded_tensor")


def _moved(old: str) -> frozenset[str]:
    """The public functions and classes of ``old`` (as torch_xla 2.1 had it) that the new module
    has with the same parameters or more, in every release from 2.2."""
    out = set()
    for dotted in api_surface.table():
        parent, _, name = dotted.rpartition(".")
        was, now = api_surface.entry(dotted, (2, 1)), api_surface.entry(f"{NEW}.{name}", (2, 9))
        if parent != old or name.startswith("_") or was is None or was.kind not in ("def", "class") or now is None:
            continue
        if all(api_surface.entry(f"{NEW}.{name}", (2, minor)) for minor in range(2, 10)) and (
            was.params is None or now.params is None or set(was.params) <= set(now.params)
        ):
            out.add(name)
    return frozenset(out)


MOVED = {old: _moved(old) for old in OLD}


class SpmdModule(PythonRule):
    id = "api-spmd-module"
    summary = "Imports of torch_xla.experimental.xla_sharding (deleted in 2.5) → torch_xla.distributed.spmd"
    words = ("xla_sharding", "xla_sharded_tensor")
    nodes = (cst.Import, cst.ImportFrom)
    min_version = (2, 2)
    examples = (
        Example(
            dedent("""
                import torch_xla.experimental.xla_sharding as xs

                mesh = xs.Mesh(ids, (4, 2))
                xs.mark_sharding(t, mesh, (0, 1))
            """),
            dedent("""
                import torch_xla.distributed.spmd as xs

                mesh = xs.Mesh(ids, (4, 2))
                xs.mark_sharding(t, mesh, (0, 1))
            """),
        ),
        Example(
            dedent("""
                from torch_xla.experimental.xla_sharding import Mesh, mark_sharding

                mark_sharding(t, Mesh(ids, (8,)), (0,))
            """),
            dedent("""
                from torch_xla.distributed.spmd import Mesh, mark_sharding

                mark_sharding(t, Mesh(ids, (8,)), (0,))
            """),
        ),
        Example(
            dedent("""
                from torch_xla.experimental import xla_sharding as xs

                xs.clear_sharding(t)
            """),
            dedent("""
                from torch_xla.distributed import spmd as xs

                xs.clear_sharding(t)
            """),
        ),
    )

    def leave(self, ctx, original, updated):
        if isinstance(updated, cst.ImportFrom):
            return self._from(ctx, updated)
        for alias in updated.names:  # import torch_xla.experimental.xla_sharding as xs
            old = imports.dotted(alias.name)
            if (
                old in MOVED
                and alias.asname is not None
                and len(updated.names) == 1
                and _taken(ctx.tree, alias.asname.name.value, MOVED[old])
            ):
                ctx.change(f"import of {old} → {NEW}: the same names, moved in torch_xla 2.2")
                return updated.with_changes(names=[alias.with_changes(name=_dotted(NEW))])
        return updated

    def _from(self, ctx, node: cst.ImportFrom):
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return node
        module = imports.dotted(node.module)
        if (
            module in MOVED
            and {a.name.value for a in node.names} <= MOVED[module]
            and any(_uses(ctx.tree, (a.asname.name if a.asname else a.name).value) for a in node.names)
        ):
            ctx.change(f"import from {module} → {NEW}: the same names, moved in torch_xla 2.2")
            return node.with_changes(module=_dotted(NEW))
        if module == "torch_xla.experimental" and len(node.names) == 1 and node.names[0].asname is not None:
            alias = node.names[0]
            old = f"{module}.{alias.name.value}"
            if old in MOVED and _taken(ctx.tree, alias.asname.name.value, MOVED[old]):
                ctx.change(f"import of {old} → {NEW}: the same names, moved in torch_xla 2.2")
                return node.with_changes(
                    module=_dotted("torch_xla.distributed"), names=[alias.with_changes(name=cst.Name("spmd"))]
                )
        return node


def _taken(tree: ast.Module | None, local: str, moved: frozenset[str]) -> bool:
    """Whether the file uses the module bound to ``local``, and only for names that moved."""
    used = _uses(tree, local)
    return bool(used) and used <= moved


def _uses(tree: ast.Module | None, local: str) -> set[str]:
    """The attributes the file reads off ``local``; '*' where it uses the name otherwise (passes
    the module on), or where the file cannot be read."""
    if tree is None:
        return {"*"}
    attributes = {
        id(node.value): node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == local
    }
    out = set(attributes.values())
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == local and id(node) not in attributes:
            out.add("*")
    return out


def _dotted(name: str) -> cst.Attribute | cst.Name:
    return cst.parse_expression(name)
