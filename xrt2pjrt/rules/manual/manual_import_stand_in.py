"""A stand-in for a torch_xla module where it cannot be imported: reported, as it keeps XRT's names

Code that runs with and without torch_xla (a notebook tested on a laptop, a library with a TPU
backend) imports it in a ``try`` and gives the name a stand-in in the ``except``:
``xm = SimpleNamespace(xrt_world_size=lambda: 1, get_ordinal=lambda: 0)``. Where torch_xla is
installed the name is the module, and the migration respells its calls there
(``xm.xrt_world_size()`` → ``xr.world_size()``, with ``import torch_xla.runtime as xr`` beside
the other imports of the ``try``). The stand-in still offers the XRT-era names, and nothing
stands in for the new ones, so the run without torch_xla fails (NameError on ``xr``) where it
worked. Reported at the ``try``, citing the stand-in, when the file calls a name the migration
respells through it: give the stand-in the new spellings (an ``xr`` stand-in, ``torch_xla.device``)
or guard their calls.
"""

from __future__ import annotations

import libcst as cst

from xrt2pjrt.python.imports import only_none, torch_xla_imports
from xrt2pjrt.python.renames import RENAMES
from xrt2pjrt.python.rule import PythonRule
from xrt2pjrt.registry import Example, dedent

# The attributes whose calls the migration respells (xm.xrt_world_size, xm.mark_step, ...).
_RESPELT = frozenset(rename.old.rpartition(".")[2] for rename in RENAMES if rename.spellings[0].dotted != rename.old)


class ImportStandIn(PythonRule):
    id = "manual-import-stand-in"
    fix = "none"
    summary = "A stand-in for torch_xla where it cannot be imported (it keeps XRT's names): reported"
    nodes = (cst.Try,)
    examples = (
        Example(
            dedent("""
                try:
                    import torch_xla.core.xla_model as xm
                except ImportError:
                    xm = SimpleNamespace(xrt_world_size=lambda: 1)

                n = xm.xrt_world_size()
            """),
            dedent("""
                # TODO(xrt2pjrt): give the stand-in the new names [manual-import-stand-in]
                try:
                    import torch_xla.core.xla_model as xm
                except ImportError:
                    xm = SimpleNamespace(xrt_world_size=lambda: 1)

                n = xm.xrt_world_size()
            """),
            manual=("a stand-in elsewhere",),
        ),
        Example.unchanged(  # None is no stand-in: code tests it before any call
            dedent("""
                try:
                    import torch_xla.core.xla_model as xm
                except ImportError:
                    xm = None
            """),
        ),
    )

    def leave(self, ctx, original, updated):
        imported = torch_xla_imports(original)
        stand_ins = [
            (target.target.value, line)
            for handler in original.handlers
            for line in handler.body.body
            if isinstance(line, cst.SimpleStatementLine)
            for small in line.body
            if isinstance(small, cst.Assign) and not only_none(small.value)
            for target in small.targets
            if isinstance(target.target, cst.Name) and target.target.value in imported
        ]
        called = [(name, line) for name, line in stand_ins if any(f"{name}.{attr}" in ctx.source for attr in _RESPELT)]
        if called:
            name = called[0][0]
            ctx.decide(
                "give the stand-in the new names",
                cites=[ctx.line_of(line) for _, line in called],
                quoted=1,
                cited_as="at ",
                detail=f"`{name}` is torch_xla's where it imports and a stand-in elsewhere: the migration respells the "
                "calls made through it (xr.world_size(), torch_xla.device(), ...), which the stand-in lacks, so a "
                "run without torch_xla fails there: give the stand-in the new spellings, or guard their calls",
            )
        return updated
