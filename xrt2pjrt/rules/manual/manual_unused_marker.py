"""A ``# xrt2pjrt: ignore`` marker settles a spot a person decided; one that settles nothing is
an item, as ruff's RUF100 reports an unused ``noqa``. Such a marker names no rule (a typo:
``ignore[api-ordinall]``), or the rules it names, run without it, report nothing on the lines
it covers: the code was fixed, or moved. It keeps nothing off today, and would silently keep
off a spot that comes back. Only the rules a run takes are judged (``--select api`` leaves a
marker of a manual rule alone). A TODO line whose ``[rule-id]`` names no rule is reported too.
Nothing is rewritten: remove the marker, or name the rule it meant. The check is the
engine's (xrt2pjrt/settling.py), for every kind of file.
"""

from __future__ import annotations

from xrt2pjrt.python.rule import PythonRule
from xrt2pjrt.registry import Example, dedent


class UnusedMarker(PythonRule):
    id = "manual-unused-marker"
    fix = "none"
    summary = "A `# xrt2pjrt: ignore` marker that settles nothing, or names no rule: reported"
    words = ()  # every file with a marker is read (rewriters.SETTLING_WORDS)
    examples = (
        Example.unchanged(
            dedent("""
                import torch_xla.runtime as xr

                rank = xr.global_ordinal()  # xrt2pjrt: ignore
            """),
            manual=("settles nothing",),
        ),
        Example.unchanged(
            dedent("""
                import torch_xla.core.xla_model as xm

                rank = xm.get_ordinal()  # xrt2pjrt: ignore[api-ordinall]
            """),
            manual=("not api-ordinall",),
        ),
    )
