"""any other torch_xla name, keyword or positional argument the target release lacks
(xm.CollectiveContext, torch_xla.amp.GradScaler through a module alias, removed _XLAC bindings):
reported with the release that removed it and its replacement, as the last check of every spot

A use of a name whose import fails is that import's spot (import-gone-module): the import
raises first. In a notebook, though, each cell is read and run on its own: a cell that uses a
module or name another cell imports from where torch_xla 2.x lacks it is told so once, so
that whoever mends the import finds every cell to mend with it. A use inside a ``try`` that
catches AttributeError is not reported: the code already says what to do where it is gone.
"""

from __future__ import annotations

import libcst as cst

from xrt2pjrt.python.api_surface import Lack, entry, keyword_lacks, lacks
from xrt2pjrt.python.replacements import advice, missing, spelled_release
from xrt2pjrt.python.rule import PythonRule, code, literal
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.python.shim_names import shim_defines


class NotInTarget(PythonRule):
    id = "api-not-in-target"
    fix = "none"
    summary = "Any other torch_xla name or argument the target lacks: reported, with its replacement"
    prefixes = ("torch_xla",)
    runs_last = True
    nodes = (cst.Call,)  # getattr(xm, 'name'), which raises as xm.name does
    examples = (
        Example(
            dedent("""
                import torch_xla.amp as xa

                scaler = xa.GradScaler()
            """),
            dedent("""
                import torch_xla.amp as xa

                # TODO(xrt2pjrt): drop it: bf16 autocast needs no scaler [api-not-in-target]
                scaler = xa.GradScaler()
            """),
            manual=("removed in 2.9",),
        ),
        Example(
            dedent("""
                import torch_xla

                torch_xla._XLAC._xla_set_use_full_mat_mul_precision(use_full_mat_mul_precision=True)
            """),
            dedent("""
                import torch_xla

                # TODO(xrt2pjrt): use set_mat_mul_precision('highest') [api-not-in-target]
                torch_xla._XLAC._xla_set_use_full_mat_mul_precision(use_full_mat_mul_precision=True)
            """),
            manual=("removed in 2.5",),
        ),
        Example(
            dedent("""
                import torch_xla.core.xla_model as xm

                CONTEXTS = {'all': xm.CollectiveContext}
            """),
            dedent("""
                import torch_xla.core.xla_model as xm

                # TODO(xrt2pjrt): drop it, and the collectives' cctx= [api-not-in-target]
                CONTEXTS = {'all': xm.CollectiveContext}
            """),
            manual=("in no torch_xla 2.x release",),
        ),
        Example(
            dedent("""
                import torch_xla.core.xla_model as xm

                xm.mark_step(reset_scope=False)
            """),
            dedent("""
                import torch_xla.core.xla_model as xm

                # TODO(xrt2pjrt): drop reset_scope=: not in torch_xla 2.3 [api-not-in-target]
                xm.mark_step(reset_scope=False)
            """),
            manual=("takes no reset_scope=",),
            options={"target_version": (2, 3)},
        ),
        Example.unchanged(
            dedent("""
                import torch_xla.core.xla_model as xm

                xm.mark_step(reset_scope=False)
            """),
        ),
        Example(  # by string: getattr raises as the attribute does (hasattr, or a default, does not)
            dedent("""
                import torch_xla.core.xla_model as xm

                n = getattr(xm, 'xrt_world_size')()
                m = getattr(xm, 'xrt_world_size', None)
            """),
            dedent("""
                import torch_xla.core.xla_model as xm

                # TODO(xrt2pjrt): replace it: not in torch_xla 2.9 [api-not-in-target]
                n = getattr(xm, 'xrt_world_size')()
                m = getattr(xm, 'xrt_world_size', None)
            """),
            manual=("removed in 2.7",),
        ),
    )

    def __init__(self):
        self._told: set[tuple[int, str]] = set()  # (notebook cell, name gone) told of in the cell

    def leave(self, ctx, original, updated):
        func, args = updated.func, updated.args
        if not (
            isinstance(func, cst.Name) and func.value == "getattr" and len(args) == 2 and ctx.resolve(func) is None
        ):
            return updated
        owner, attr = ctx.resolve(args[0].value), literal(args[1].value)
        if owner and isinstance(attr, str) and not args[0].star:
            lack = lacks(f"{owner}.{attr}", ctx.target_version)
            if lack is not None and lack.name == f"{owner}.{attr}":
                message, detail = missing(code(updated), lack, "an AttributeError")
                ctx.decide(message, detail=detail)
        return updated

    def call(self, ctx, node, name):
        if ctx.reported_here:
            return node
        written = self._written(ctx, node.func)
        if written is None:
            return node
        lack = lacks(written, ctx.target_version)
        if lack is not None:
            if lack.name == written or self._of_a_module_another_cell_imports(ctx, written, lack):
                self._missing(ctx, node.func, lack)
            return node
        positional = [arg for arg in node.args if arg.keyword is None]
        count = None if any(arg.star for arg in positional) else len(positional)
        keywords = [arg.keyword.value for arg in node.args if arg.keyword is not None]
        for lack in keyword_lacks(written, keywords, count, ctx.target_version):
            message, detail = self._argument(ctx, node.func, written, lack)
            ctx.decide(message, detail=detail)
        return node

    def reference(self, ctx, node, name):
        if ctx.reported_here or ctx.is_store():
            return node
        written = self._written(ctx, node)
        lack = written and lacks(written, ctx.target_version)
        if lack and (lack.name == written or self._of_a_module_another_cell_imports(ctx, written, lack)):
            self._missing(ctx, node, lack)
        return node

    @staticmethod
    def _of_a_module_another_cell_imports(ctx, written: str, lack: Lack) -> bool:
        """``gcs.read`` in a cell, ``import torch_xla.utils.gcsfs as gcs`` in another one."""
        return written.startswith(lack.name + ".") and ctx.in_another_piece(ctx.anchor)

    @staticmethod
    def _written(ctx, new: cst.BaseExpression) -> str | None:
        """What the spot names once the other rules are done with it (None: not a name of
        torch_xla's: with --target shim, xm and xmp names the shim defines). Resolved as
        written, which for a spot no rule changed is the name it was dispatched by."""
        written = ctx.resolve_written(new)
        if written and ctx.options.target == "shim" and shim_defines(written):
            return None
        return written

    def _missing(self, ctx, node: cst.BaseExpression, lack: Lack) -> None:
        imported = ctx.anchor.target if ctx.anchor is not None else None
        if imported and (imported == lack.name or imported.startswith(lack.name + ".")):
            # its import fails first: import-gone-module's spot; but a notebook's cell that
            # uses the name is read and run on its own, and is told once
            outer = ctx.parent()  # (``gcs`` of ``gcs.read``: the attribute is the spot)
            if (
                ctx.in_another_piece(ctx.anchor)
                and (ctx.piece, lack.name) not in self._told
                and not (isinstance(outer, cst.Attribute) and outer.value is ctx.original)
            ):
                self._told.add((ctx.piece, lack.name))
                found = advice(lack.name)
                ctx.decide(
                    found.do if found else "replace it: its import fails",
                    detail=f"{code(node)}: {lack.name} is not in {spelled_release(lack.release)}; the cell "
                    "that imports it fails" + (f"; {found}" if found else ""),
                )
            return
        if not ctx.caught("AttributeError"):  # (code that expects it gone has its fallback)
            message, detail = missing(code(node), lack, "an AttributeError")
            ctx.decide(message, detail=detail)

    @staticmethod
    def _argument(ctx, func: cst.BaseExpression, dotted: str, lack: Lack) -> tuple[str, str]:
        """The item for a call the target's signature refuses: its message and long text."""
        spot, release = _named(func, dotted), spelled_release(lack.release)
        found = advice(lack.name)
        then = f"; {found}" if found else ""
        if lack.name.endswith("=)"):
            keyword = lack.name[len(dotted) + 1 : -1]
            return (
                found.do if found else f"drop {keyword}: not in {release}",
                f"{spot} takes no {keyword} in {release} ({lack.history}): a TypeError there{then}",
            )
        if "(argument " not in lack.name:  # name(param): a parameter it needs, not passed
            param = lack.name[len(dotted) + 1 : -1]
            return (
                found.do if found else f"pass {param}: {release} needs it",
                f"{spot} needs {param} in {release}, which this call does not pass: a TypeError there{then}",
            )
        limit = entry(dotted, lack.release).positional_limit()
        return (
            f"pass at most {limit} argument{'s' * (limit != 1)} by position",
            f"{spot} takes at most {limit} positional argument{'s' * (limit != 1)} in {release}: a TypeError there",
        )


def _named(node: cst.BaseExpression, dotted: str) -> str:
    """The spot as the file spells it, and what it resolves to when that differs."""
    spelled = code(node)
    return spelled if spelled == dotted else f"{spelled} ({dotted})"
