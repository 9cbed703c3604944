"""A torch_xla module imported by string: reported.

``importlib.import_module('torch_xla.core.xla_model')`` or ``__import__('torch_xla...')`` reaches
a module through a string, which the codemod does not follow: the XRT-era calls made on what it
returns are left as they are, and those the target lacks fail at run time (the import itself,
for a module 2.x deleted). Each such call with a literal torch_xla (or torch_xla_py) name is
reported, to be migrated by hand; a name built at run time is not seen.
"""

from __future__ import annotations

import libcst as cst

from xrt2pjrt.python.rule import PythonRule, literal
from xrt2pjrt.registry import Example, dedent


class ImportModule(PythonRule):
    id = "manual-import-module"
    fix = "none"
    statement_words = ("import_module", "__import__")
    summary = "A torch_xla module imported by string (import_module, __import__): reported"
    names = frozenset({"importlib.import_module"})
    nodes = (cst.Call,)
    examples = (
        Example(
            dedent("""
                import importlib

                xm = importlib.import_module('torch_xla.core.xla_model')
            """),
            dedent("""
                import importlib

                # TODO(xrt2pjrt): migrate the module's uses by hand [manual-import-module]
                xm = importlib.import_module('torch_xla.core.xla_model')
            """),
            manual=("imported by string",),
        ),
    )

    def call(self, ctx, node, name):
        if node.args:
            module = literal(node.args[0].value)
            if isinstance(module, str) and module.split(".")[0] in ("torch_xla", "torch_xla_py"):
                ctx.decide(
                    "migrate the module's uses by hand",
                    detail=f"{module} is imported by string: the codemod cannot follow it; migrate its uses by hand",
                )
        return node

    def leave(self, ctx, original, updated):
        # ``__import__`` is a builtin: it resolves to nothing unless rebound.
        if (
            isinstance(updated.func, cst.Name)
            and updated.func.value == "__import__"
            and ctx.resolve(updated.func) is None
        ):
            return self.call(ctx, updated, "__import__")
        return updated
