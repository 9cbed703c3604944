"""A torch_xla module stored or handed on as a value: reported.

The codemod rewrites calls made through a module's import name (``xm.get_ordinal()``). A module
stored or passed on (``self.tpu = xm``, ``f(xm)``) is called through another name, which it does
not follow: the XRT-era calls made there are left as they are, and those torch_xla 2.x removed
fail at run time. Such a use of a module whose names the rules migrate is reported: call its
functions by the import name, or migrate them by hand. Not reported: ``getattr``/``hasattr`` with
the name spelled out (api-not-in-target reads those), an alias in a function whose every use is
an attribute the target still has (``save = xm; save.save(...)``), or an attribute of ``self``
whose every read in the file is (none, for a private one), an attribute of the module's
conventional name (``model.xm = xm``: manual-borrowed-alias reports the calls through ``.xm``
the target lacks, in whichever file makes them), and ``--target shim``, where
the module handed on is the shim's, with the XRT-era API.
"""

from __future__ import annotations

import ast
import functools

import libcst as cst

from xrt2pjrt.python import api_surface, spawn_site
from xrt2pjrt.python.rule import PythonRule, code, literal
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.rules.manual._manual import CONVENTIONAL, rule_names


@functools.cache
def _migrated_modules() -> frozenset[str]:
    """The torch_xla modules whose names the Python rules rewrite or report."""
    return frozenset(name.rpartition(".")[0] for name in rule_names() if name.startswith("torch_xla."))


class _ModuleNames:
    """``names`` read when the rules are registered, after every module of rules loaded."""

    def __get__(self, instance, owner) -> frozenset[str]:
        return _migrated_modules()


class ModuleAsValue(PythonRule):
    id = "manual-module-as-value"
    fix = "none"
    summary = "A torch_xla module handed on as a value (self.tpu = xm, f(xm)): reported"
    targets = ("native",)  # under the shim, the module handed on is the shim's, with the XRT-era API
    names = _ModuleNames()
    examples = (
        Example(  # a trainer keeps the module on self, then self.tpu.xrt_world_size() is an AttributeError on 2.9
            dedent("""
                import torch_xla.core.xla_model as xm

                class Trainer:
                    def __init__(self):
                        self.tpu = xm
            """),
            dedent("""
                import torch_xla.core.xla_model as xm

                class Trainer:
                    def __init__(self):
                        # TODO(xrt2pjrt): call its functions by its import name [manual-module-as-value]
                        self.tpu = xm
            """),
            manual=("stored as self.tpu",),
        ),
        Example.unchanged(  # danielkunin/neural-mechanics: a local alias used only for names 2.9 still has
            dedent("""
                import torch

                def save(state, path, tpu):
                    save_lib = torch
                    if tpu:
                        import torch_xla.core.xla_model as xm
                        save_lib = xm
                    save_lib.save(state, path)
            """),
        ),
        Example(  # ... and one used for a name 2.9 lacks
            dedent("""
                import torch_xla.core.xla_model as xm

                def world():
                    lib = xm
                    return lib.xrt_world_size()
            """),
            dedent("""
                import torch_xla.core.xla_model as xm

                def world():
                    # TODO(xrt2pjrt): call its functions by its import name [manual-module-as-value]
                    lib = xm
                    return lib.xrt_world_size()
            """),
            manual=("stored as lib",),
        ),
        Example.unchanged(  # its own names, and a test of the import fallback, are no hand-over
            dedent("""
                try:
                    import torch_xla.core.xla_model as xm
                except ImportError:
                    xm = None

                if xm is not None:
                    device = xm.xla_device()
            """),
        ),
    )

    def reference(self, ctx, node, name):
        parent = ctx.parent(1)
        if (
            (isinstance(parent, cst.Attribute) and parent.value is ctx.original)
            or isinstance(parent, (cst.Comparison, cst.ComparisonTarget))
            or ctx.is_store()
            or _named_attribute(ctx)
        ):
            return node
        local = code(ctx.original)
        if _alias_of_names_kept(ctx, parent, name):
            return node
        if isinstance(parent, cst.Assign) and parent.value is ctx.original:
            how = "is stored as " + ", ".join(code(target.target) for target in parent.targets)
            through = code(parent.targets[0].target)
        else:
            how, through = "is handed on here as a value", "another name"
        ctx.decide(
            "call its functions by its import name",
            detail=f"{local} ({name}) {how}: the codemod follows calls made by its import name only, so the XRT-era "
            f"calls made through {through} are left as they are, and those torch_xla 2.x removed fail there: "
            f"call them as {local}.…, or migrate them by hand",
        )
        return node


def _named_attribute(ctx) -> bool:
    """``getattr(xm, 'get_ordinal')``, ``hasattr(xm, ...)`` with the name spelled out: the
    attribute is named at this spot, as in ``xm.get_ordinal`` (and api-not-in-target reads the
    two-argument getattr, the one that raises), so no other name hides it."""
    call = ctx.parent(2)
    return (
        isinstance(ctx.parent(1), cst.Arg)
        and isinstance(call, cst.Call)
        and isinstance(call.func, cst.Name)
        and call.func.value in ("getattr", "hasattr")
        and len(call.args) >= 2
        and call.args[0] is ctx.parent(1)
        and isinstance(literal(call.args[1].value), str)
    )


def _alias_of_names_kept(ctx, parent, module: str) -> bool:
    """``save_lib = xm`` in a function, every use of ``save_lib`` there an attribute that
    the target release still has (``save_lib.save(...)``): the calls through the alias work
    as they are, so nothing is left unmigrated. ``self._xm = xm`` alike, its uses the file's
    reads of ``._xm``: where none is read, a private one (``_xm``) is called by nobody."""
    if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1) or ctx.tree is None:
        return False
    target = parent.targets[0].target
    if isinstance(target, cst.Attribute) and CONVENTIONAL.get(target.attr.value) == module:
        return True  # model.xm = xm: manual-borrowed-alias reports each read of .xm the target lacks, in any file
    if isinstance(target, cst.Name) and (function := spawn_site.function_at(ctx.tree, ctx.line)) is not None:
        nodes = list(spawn_site.own_nodes(function))
        uses = [node for node in nodes if isinstance(node, ast.Name) and node.id == target.value]
        needed = bool(uses)
    elif isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
        nodes = spawn_site.walk(ctx.tree)
        uses = [node for node in nodes if isinstance(node, ast.Attribute) and node.attr == target.attr.value]
        needed = not target.attr.value.startswith("_")
    else:
        return False
    uses = [use for use in uses if isinstance(use.ctx, ast.Load)]
    used_as = {id(node.value): node.attr for node in nodes if isinstance(node, ast.Attribute)}
    return (bool(uses) or not needed) and all(
        id(use) in used_as and api_surface.lacks(f"{module}.{used_as[id(use)]}", ctx.target_version) is None
        for use in uses
    )
