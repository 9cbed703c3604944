"""from torch_xla... import *: reported.

A star import binds names the codemod cannot see: ``get_ordinal()`` taken by ``from
torch_xla.core.xla_model import *`` is not known as xm's, so its XRT-era calls are left as they
are, and those torch_xla 2.x removed fail at run time. The import is reported: import the module
by name (``import torch_xla.core.xla_model as xm``), call through it, and run xrt2pjrt again.
"""

from __future__ import annotations

import libcst as cst

from xrt2pjrt.python.imports import dotted
from xrt2pjrt.python.rule import PythonRule
from xrt2pjrt.registry import Example, dedent


class StarImport(PythonRule):
    id = "manual-star-import"
    fix = "none"
    summary = "from torch_xla... import * (the names it brings cannot be followed): reported"
    nodes = (cst.ImportFrom,)
    examples = (
        Example(
            dedent("""
                from torch_xla.core.xla_model import *

                n = xrt_world_size()
            """),
            dedent("""
                # TODO(xrt2pjrt): import the module by name, then rerun [manual-star-import]
                from torch_xla.core.xla_model import *

                n = xrt_world_size()
            """),
            manual=("cannot be followed",),
        ),
    )

    def leave(self, ctx, original, updated):
        if isinstance(updated.names, cst.ImportStar) and not updated.relative and updated.module is not None:
            module = dotted(updated.module)
            if module.split(".")[0] in ("torch_xla", "torch_xla_py"):
                alias = {
                    "torch_xla.core.xla_model": " as xm",
                    "torch_xla.distributed.xla_multiprocessing": " as xmp",
                }.get(module, "")
                ctx.decide(
                    "import the module by name, then rerun",
                    detail=f"names from `from {module} import *` cannot be followed: import the module by name "
                    f"(import {module}{alias}), then run xrt2pjrt again",
                )
        return updated
