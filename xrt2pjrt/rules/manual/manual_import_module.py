"""import_module('torch_xla...') / __import__: a module reached by string is not rewritten; report
"""

from __future__ import annotations

import libcst as cst

from xrt2pjrt.python.rule import PythonRule, literal
from xrt2pjrt.registry import Example


class ImportModule(PythonRule):
    id = "manual-import-module"
    fix = "none"
    statement_words = ("import_module", "__import__")
    summary = "import_module('torch_xla...') / __import__: a module reached by string is not rewritten; report"
    names = frozenset({"importlib.import_module"})
    nodes = (cst.Call,)
    examples = (
        Example(
            "import importlib\n\nxm = importlib.import_module('torch_xla.core.xla_model')\n",
            (
                "import importlib\n"
                "\n"
                "# TODO(xrt2pjrt): migrate the module's uses by hand [manual-import-module]\n"
                "xm = importlib.import_module('torch_xla.core.xla_model')\n"
            ),
            manual=("imported by string",),
        ),
    )

    def call(self, ctx, node, name):
        if node.args:
            module = literal(node.args[0].value)
            if isinstance(module, str) and module.split(".")[0] in ("torch_xla", "torch_xla_py"):
                ctx.decide("migrate the module's uses by hand",
                           detail=f"{module} is imported by string: the codemod cannot follow it; migrate its uses "
                           "by hand")
        return node

    def leave(self, ctx, original, updated):
        # ``__import__`` is a builtin: it resolves to nothing unless rebound.
        if isinstance(updated.func, cst.Name) and updated.func.value == "__import__" and ctx.resolve(updated.func) is None:
            return self.call(ctx, updated, "__import__")
        return updated
