"""Things only a person can decide: reported (with a TODO comment), never guessed."""

from __future__ import annotations

import libcst as cst

from xrt2pjrt.python.imports import dotted
from xrt2pjrt.python.rule import PythonRule
from xrt2pjrt.registry import all_rules

XM = "torch_xla.core.xla_model"


def imported_modules(node: cst.Import | cst.ImportFrom) -> list[str]:
    if isinstance(node, cst.Import):
        return [dotted(alias.name) for alias in node.names]
    if node.relative or node.module is None:
        return []
    module = dotted(node.module)
    if isinstance(node.names, cst.ImportStar):
        return [module]
    return [module] + [f"{module}.{alias.name.value}" for alias in node.names]


class ImportedModuleRule(PythonRule):
    """Reports imports of the modules ``matches`` accepts, and calls into them."""

    nodes = (cst.Import, cst.ImportFrom)

    def matches(self, module: str) -> bool:
        raise NotImplementedError

    def item(self, module: str) -> tuple[str, str]:
        """The item for a use of ``module``: its message (what to do) and long text (why)."""
        raise NotImplementedError

    def leave(self, ctx, original, updated):
        hits = [module for module in imported_modules(original) if self.matches(module)]
        if hits:
            message, detail = self.item(hits[0])
            ctx.decide(message, detail=detail)
        return updated

    def call(self, ctx, node, name):
        message, detail = self.item(name)
        ctx.decide(message, detail=detail)
        return node


# The names XRT-era code called torch_xla's modules by, when it borrowed them from a module
# of its own (``from tpu_utils import xm``).
CONVENTIONAL = {"xm": XM, "xmp": "torch_xla.distributed.xla_multiprocessing"}


def rule_names():
    """Every name a Python rule rewrites or reports (but the module names of
    manual-module-as-value, which come from these)."""
    return (
        name
        for cls in all_rules().values()
        if cls.kind == "python" and cls.id != "manual-module-as-value"
        for name in getattr(cls, "names", ())
    )
