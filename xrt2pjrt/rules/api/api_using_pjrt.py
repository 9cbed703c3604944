"""xr.using_pjrt() → True: from torch_xla 2.1 PJRT is the only runtime.

``using_pjrt()`` told PJRT from XRT while torch_xla had both. 2.1 deleted XRT, so every
later release answers True, and 2.5 removed the function (AttributeError). The call becomes
``True``, what it returned on every release the code can run on (safe); an ``if`` on it keeps
its PJRT branch and loses the XRT one (``if not ...`` keeps its else), as does an ``if`` on a
name bound only to it (``pjrt = xr.using_pjrt()``); no item is raised in the XRT one. An assertion on it is
reported, to be deleted: it tests which runtime runs. The experimental.pjrt spelling is
rewritten too, and under ``--target shim`` as well, as its module is gone.
"""

from __future__ import annotations

import libcst as cst

from xrt2pjrt.python.pjrt_branches import USING_PJRT, pjrt_side
from xrt2pjrt.python.renames import short
from xrt2pjrt.python.rule import PythonRule
from xrt2pjrt.registry import Example, dedent


class UsingPjrt(PythonRule):
    id = "api-using-pjrt"
    summary = "xr.using_pjrt() (removed in 2.5) → True; `if xr.using_pjrt():` loses its XRT-only else"
    # (with --target shim too: the shim serves xm and xmp, and the module of pjrt.using_pjrt is gone)
    names = USING_PJRT
    nodes = (cst.If,)
    examples = (
        Example(
            dedent("""
                import os
                import torch_xla.runtime as xr

                # the runtime decides
                if xr.using_pjrt():
                    setup()  # PJRT
                    run()
                else:
                    os.environ['XRT_TPU_CONFIG'] = config
            """),
            dedent("""
                import os

                # the runtime decides
                setup()  # PJRT
                run()
            """),
        ),
        Example(
            dedent("""
                import torch_xla.runtime as xr

                def main():
                    if not xr.using_pjrt():
                        legacy()
                    elif fast:
                        go()
                    else:
                        walk()
            """),
            dedent("""
                def main():
                    if fast:
                        go()
                    else:
                        walk()
            """),
        ),
        Example(
            dedent("""
                import torch_xla.runtime as xr

                pjrt = xr.using_pjrt()
            """),
            "pjrt = True\n",
        ),
        Example(  # the XRT branch under a name goes too, with what would be asked about in it
            dedent("""
                import torch.distributed as dist
                import torch_xla.runtime as xr

                def init(rank, world_size):
                    pjrt = xr.using_pjrt()
                    if pjrt:
                        dist.init_process_group('xla', init_method='xla://')
                    else:
                        dist.init_process_group('xla', rank=rank, world_size=world_size)
            """),
            dedent("""
                import torch.distributed as dist

                def init(rank, world_size):
                    pjrt = True
                    dist.init_process_group('xla', init_method='xla://')
            """),
        ),
        Example(  # pytorch/xla v1.13's own test of the runtime choice: rewritten, assertFalse(True)
            dedent("""
                import torch_xla.runtime as xr

                class TestRuntime(TestCase):
                    def test_using_pjrt(self):
                        self.assertFalse(xr.using_pjrt())
            """),
            dedent("""
                import torch_xla.runtime as xr

                class TestRuntime(TestCase):
                    def test_using_pjrt(self):
                        # TODO(xrt2pjrt): delete this assertion: PJRT always runs [api-using-pjrt]
                        self.assertFalse(xr.using_pjrt())
            """),
            manual=("a test asserts which runtime runs",),
        ),
        Example(
            dedent("""
                from torch_xla.experimental import pjrt
                import torch_xla.core.xla_model as xm

                if pjrt.using_pjrt():
                    xm.rendezvous('init')
            """),
            dedent("""
                import torch_xla.core.xla_model as xm

                xm.rendezvous('init')
            """),
            options={"target": "shim"},
        ),
    )

    def call(self, ctx, node, name):
        if node.args:
            return node
        if _asserted(ctx):
            ctx.decide(
                "delete this assertion: PJRT always runs",
                detail=f"a test asserts which runtime runs here: from torch_xla 2.1 it is always PJRT "
                f"({short(name)} is gone from 2.5): the assertion tests XRT-era behaviour; delete it",
            )
            return node
        ctx.change(f"{short(name)}() is always true from torch_xla 2.1")
        return cst.Name("True")

    def leave(self, ctx, original, updated):
        """``if True:`` (as the call became) keeps its body; ``if not True:`` its else."""
        side = pjrt_side(ctx, original.test) if ctx.in_block() else None
        if side is None:
            return updated
        kept, dropped = (updated.body, updated.orelse is not None) if side else (updated.orelse, True)
        ctx.change("if on using_pjrt(): only the PJRT branch is left" + (", the XRT one removed" if dropped else ""))
        if kept is None:
            ctx.remove_statement()
            return updated
        if isinstance(kept, cst.If):  # an elif: it becomes the if
            return kept.with_changes(leading_lines=updated.leading_lines)
        block = kept.body if isinstance(kept, cst.Else) else kept
        statements = _statements_of(block)
        header = block.header.comment if isinstance(block, cst.IndentedBlock) else None  # `if ...:  # note`
        above = [
            *updated.leading_lines,
            *([cst.EmptyLine(comment=header)] if header else []),
            *statements[0].leading_lines,
        ]
        statements[0] = statements[0].with_changes(leading_lines=above)
        return cst.FlattenSentinel(statements)


def _asserted(ctx) -> bool:
    """Whether the node being visited is inside an ``assert`` or a test's ``self.assert...(...)``."""
    level = 1
    while (node := ctx.parent(level)) is not None and not isinstance(node, cst.BaseCompoundStatement):
        if isinstance(node, cst.Assert) or (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value.startswith("assert")
        ):
            return True
        level += 1
    return False


def _statements_of(block: cst.BaseSuite) -> list[cst.BaseStatement]:
    """The statements of a block, each on its own line (``if x: a; b`` has them on one)."""
    if isinstance(block, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(body=list(block.body), trailing_whitespace=block.trailing_whitespace)]
    return list(block.body)
