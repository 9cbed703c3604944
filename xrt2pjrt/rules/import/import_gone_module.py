"""Imports of what the target lacks: removed when nothing uses them, else reported.

An import of a torch_xla module or name the target release lacks (python/api_surface.txt says
which, release by release: experimental.pjrt, utils.gcsfs, amp.GradScaler, ...) fails with
ImportError before anything else runs. The other rules rewrite the uses they know first; an
import nothing in the file still uses then goes (safe: it could only fail). One still used is
reported with what to use instead: its uses need a person. An import in a ``try`` that
catches ImportError is a probe, kept: its handler already says what runs without the module,
as on any machine that lacks it, and is reported only where it raises (the check then stops
the program on the target: SageMaker's ``torch_xla.distributed.xla_spawn``, in no open
release). A module named in a string, imported or run by that name (``importlib.import_module``,
``python -m``), is reported where the target lacks it. Under ``--target shim`` the names
the shim defines are shim-imports'.
"""

from __future__ import annotations

import re

import libcst as cst

from xrt2pjrt.python import imports
from xrt2pjrt.python.api_surface import lacks
from xrt2pjrt.python.replacements import missing, why_missing
from xrt2pjrt.python.rule import PythonRule
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.python.shim_names import shim_defines


class ImportGoneModule(PythonRule):
    id = "import-gone-module"
    summary = "Imports of torch_xla modules and names the target lacks: removed if unused, else reported"
    nodes = (cst.Import, cst.ImportFrom, cst.SimpleString)
    examples = (
        Example(
            dedent("""
                import os
                from torch_xla.experimental import pjrt
                from torch_xla.experimental.pjrt import world_size

                print(os.getpid())
            """),
            dedent("""
                import os

                print(os.getpid())
            """),
        ),
        Example(
            dedent("""
                import torch_xla.utils.gcsfs as gcs

                blob = gcs.read('gs://bucket/x')
            """),
            dedent("""
                # TODO(xrt2pjrt): use a GCS client of your own [import-gone-module]
                import torch_xla.utils.gcsfs as gcs

                blob = gcs.read('gs://bucket/x')
            """),
            manual=("a GCS client of your own",),
        ),
        Example(
            dedent("""
                from torch_xla.amp import GradScaler, autocast

                scaler = GradScaler()
            """),
            dedent("""
                # TODO(xrt2pjrt): drop it: bf16 autocast needs no scaler [import-gone-module]
                from torch_xla.amp import GradScaler, autocast

                scaler = GradScaler()
            """),
            manual=("needs no scaler",),
        ),
        Example.unchanged(  # the shim keeps the XRT-era names (shim-imports points the import at it)
            dedent("""
                from torch_xla.core.xla_model import xrt_world_size

                n = xrt_world_size()
            """),
            options={"target": "shim"},
        ),
        Example.unchanged(  # torch_xla 2.8 still has it
            dedent("""
                from torch_xla.amp import GradScaler, autocast

                scaler = GradScaler()
            """),
            options={"target_version": (2, 8)},
        ),
    )

    def leave(self, ctx, original, updated):
        if isinstance(original, cst.SimpleString):  # (most strings name no module: the text first)
            return self._named(ctx, original, updated) if "torch_xla." in original.value else updated
        for local, target, alias in imports.import_bindings(updated):
            spelled = imports.dotted(alias.name) if isinstance(updated, cst.Import) else target
            if ctx.options.target == "shim" and shim_defines(spelled):
                continue  # the import is pointed at the shim, which has it
            lack = lacks(spelled, ctx.target_version)
            if lack is None:
                continue
            probe = ctx.caught("ImportError", "ModuleNotFoundError")
            if probe:  # kept: its handler says what runs without the module
                if any(_raises(handler) for handler in probe):
                    ctx.decide(
                        "decide what runs without it",
                        detail=f"{spelled} {why_missing(lack, 'an ImportError', False)}, and a handler here raises: "
                        "this check stops the program on the target; decide what runs without it",
                    )
            else:
                kept, why = missing(local, lack, "an ImportError")
                ctx.drop_import_if_unused(
                    local,
                    f"import of {spelled} removed: {lack.name} {why_missing(lack, 'an ImportError', False)}, "
                    "and nothing uses it",
                    kept,
                    f"the import stays, as {local} is still used: {why}",
                )
        return updated

    def _named(self, ctx, original, updated):
        """A module named in a string, imported or run by that name (``importlib.import_module(
        'torch_xla.experimental.pjrt')``, ``[python, '-m', 'torch_xla.distributed.xla_spawn']``)."""
        named = _MODULE_NAME.match(original.evaluated_value if isinstance(original.evaluated_value, str) else "")
        lack = named and not isinstance(ctx.parent(1), cst.Expr) and lacks(named.group(1), ctx.target_version)
        if lack and not named.group(1).startswith(_LAUNCHER):  # (xla_dist's: manual-xla-dist)
            ctx.decide(
                "use a module the target has",
                detail=f"'{named.group(1)}' {why_missing(lack, 'the import or the run of this name fails')}",
            )
        return updated


# A string that is a torch_xla module's dotted name, or a command running one (python -m NAME).
_MODULE_NAME = re.compile(r"^(?:.*\s-m\s+)?(torch_xla(?:\.\w+)+)(?:\s.*)?$", re.S)
_LAUNCHER = "torch_xla.distributed.xla_dist"


def _raises(handler: cst.ExceptHandler) -> bool:
    """Whether the handler's own statements raise (not a nested function's)."""
    return any(
        isinstance(small, cst.Raise)
        for statement in handler.body.body
        if isinstance(statement, cst.SimpleStatementLine)
        for small in statement.body
    )
