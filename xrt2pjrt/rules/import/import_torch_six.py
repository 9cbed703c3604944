"""``torch._six`` (gone from torch 2.0) imported in a torch_xla file: reported, with what replaces it.

XRT-era code ran on torch 1.x, whose private ``torch._six`` held Python 2/3 shims that training
code copied from apex, Megatron and tacotron2 imported (``from torch._six import inf`` in a
gradient-clipping helper). torch 2.0 removed the module, and torch_xla 2.9 needs torch 2.9, so the
import fails before anything runs. Each name has a plain Python spelling (torch 1.13
torch/_six.py): ``inf`` and ``nan`` are ``math``'s, ``string_classes`` is ``(str, bytes)``,
``int_classes`` is ``int``, ``container_abcs`` is ``collections.abc``. The import is reported with
those, since a name may be used in ways a rename does not cover.
"""

from __future__ import annotations

import libcst as cst

from xrt2pjrt.python.imports import dotted
from xrt2pjrt.python.rule import PythonRule
from xrt2pjrt.registry import Example, dedent

_SIX = "torch._six"
# What each name of torch 1.13's torch/_six.py is in plain Python.
_INSTEAD = {
    "inf": "math.inf",
    "nan": "math.nan",
    "string_classes": "(str, bytes)",
    "int_classes": "int",
    "container_abcs": "collections.abc",
    "PY3": "True",
    "PY37": "True",
}


class TorchSix(PythonRule):
    id = "import-torch-six"
    fix = "none"
    summary = "torch._six imported (gone from torch 2.0, which torch_xla 2.x needs): reported"
    nodes = (cst.Import, cst.ImportFrom)
    statement_words = (_SIX,)
    examples = (
        Example(
            dedent("""
                import torch_xla.core.xla_model as xm
                from torch._six import inf
            """),
            dedent("""
                import torch_xla.core.xla_model as xm
                # TODO(xrt2pjrt): torch 2.x has no torch._six: use math.inf [import-torch-six]
                from torch._six import inf
            """),
            manual=("gone from torch 2.0",),
        ),
        Example.unchanged(
            dedent("""
                import torch_xla.core.xla_model as xm
                from math import inf
            """),
        ),
    )

    def leave(self, ctx, original, updated):
        if isinstance(updated, cst.ImportFrom):
            module = dotted(updated.module) if updated.module is not None and not updated.relative else ""
            names = [] if isinstance(updated.names, cst.ImportStar) else [dotted(a.name) for a in updated.names]
        else:
            imported = [dotted(a.name) for a in updated.names]
            module, names = (_SIX if _SIX in imported else ""), []
        if module != _SIX:
            return updated
        instead = ", ".join(f"{_INSTEAD[name]}" for name in names if name in _INSTEAD) or "plain Python"
        ctx.decide(
            f"torch 2.x has no torch._six: use {instead}",
            detail=f"torch._six is gone from torch 2.0, which torch_xla 2.x needs: use {instead} "
            "(inf, nan: math's; string_classes: (str, bytes); int_classes: int; container_abcs: collections.abc)",
        )
        return updated
