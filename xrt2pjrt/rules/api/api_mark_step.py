"""xm.mark_step() → torch_xla.sync(), the name torch_xla 2.4 gave it.

``xm.mark_step()`` cuts the lazy graph traced so far and runs it. torch_xla 2.4 added
``torch_xla.sync()`` for the same operation, and 2.8 deprecates ``mark_step`` (a
DeprecationWarning at each step). The call is renamed (safe: one function under two names); a
call with arguments (``wait=True``) needs 2.5, where ``sync`` takes them, so on 2.4 only a call
without arguments is rewritten. ``--target shim`` keeps the call: the shim serves it.
"""

from __future__ import annotations

from xrt2pjrt.python.renames import RenameRule, XM, renames_of
from xrt2pjrt.registry import Example, dedent


class MarkStep(RenameRule):
    id = "api-mark-step"
    summary = "xm.mark_step() (deprecated in 2.8) → torch_xla.sync() (2.4+)"
    targets = ("native",)
    table = renames_of(f"{XM}.mark_step")
    examples = (
        Example(
            dedent("""
                import torch_xla.core.xla_model as xm

                loss.backward()
                xm.mark_step()
            """),
            dedent("""
                import torch_xla

                loss.backward()
                torch_xla.sync()
            """),
        ),
        Example.unchanged(
            dedent("""
                import torch_xla.core.xla_model as xm

                xm.mark_step(wait=True)
            """),
            options={"target_version": (2, 4)},
        ),
    )
