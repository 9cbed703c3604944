"""xm.save(): no longer ends with a rendezvous (2.1); report where code may rely on it (not where a
rendezvous follows; in a run of saves, the last), and where xm.save is passed as a function
(save_function=xm.save)
"""

from __future__ import annotations

import libcst as cst

from xrt2pjrt.python.rule import PythonRule
from xrt2pjrt.registry import Example
from xrt2pjrt.rules.manual._manual import XM

_BARRIERS = frozenset({f"{XM}.rendezvous", f"{XM}.xla_rendezvous", "torch.distributed.barrier"})
_NO_BARRIER = "xm.save no longer waits for every replica (2.1)"


class SaveBarrier(PythonRule):
    id = "manual-save-barrier"
    fix = "none"
    summary = ("xm.save(): no longer ends with a rendezvous (2.1); report where code may rely on it (not where a "
               "rendezvous follows; in a run of saves, the last), and where xm.save is passed as a function "
               "(save_function=xm.save)")
    targets = ("native",)  # the shim's save keeps the barrier
    names = frozenset({f"{XM}.save"})
    examples = (
        Example(
            "import torch_xla.core.xla_model as xm\n\nxm.save(model.state_dict(), path)\n",
            (
                "import torch_xla.core.xla_model as xm\n"
                "\n"
                "# TODO(xrt2pjrt): add xm.rendezvous('saved') for readers [manual-save-barrier]\n"
                "xm.save(model.state_dict(), path)\n"
            ),
            manual=("rendezvous",),
        ),
        Example(
            "import torch_xla.core.xla_model as xm\n\nxm.save(model.state_dict(), path)\nxm.rendezvous('saved')\n",
            "import torch_xla.core.xla_model as xm\n\nxm.save(model.state_dict(), path)\nxm.rendezvous('saved')\n",
        ),
        Example(  # BigGAN-Pytorch-TPU's checkpoint: a run of saves, read (if at all) after the last
            "import torch_xla.core.xla_model as xm\n\nxm.save(G.state_dict(), g_path)\nxm.save(D.state_dict(), d_path)\n",
            (
                "import torch_xla.core.xla_model as xm\n"
                "\n"
                "xm.save(G.state_dict(), g_path)\n"
                "# TODO(xrt2pjrt): add xm.rendezvous('saved') for readers [manual-save-barrier]\n"
                "xm.save(D.state_dict(), d_path)\n"
            ),
            manual=("rendezvous",),
        ),
        Example(  # transformers' Trainer: save_pretrained(..., save_function=xm.save)
            "import torch_xla.core.xla_model as xm\n\nmodel.save_pretrained(out, save_function=xm.save)\n",
            (
                "import torch_xla.core.xla_model as xm\n"
                "\n"
                "# TODO(xrt2pjrt): add xm.rendezvous('saved') after saving [manual-save-barrier]\n"
                "model.save_pretrained(out, save_function=xm.save)\n"
            ),
            manual=("passed here as a function",),
        ),
    )

    def call(self, ctx, node, name):
        if not _barrier_follows(ctx):
            ctx.manual("add xm.rendezvous('saved') for readers",
                       detail=f"{_NO_BARRIER}: if others read the file next, add xm.rendezvous('saved') after it")
        return node

    def reference(self, ctx, node, name):
        if not ctx.is_store() and not _barrier_follows(ctx):
            ctx.manual("add xm.rendezvous('saved') after saving",
                       detail=f"xm.save is passed here as a function: {_NO_BARRIER}; if others read what it saves "
                       "next, add xm.rendezvous('saved') after this")
        return node


def _barrier_follows(ctx) -> bool:
    """Whether the statement after the one being visited, in its block, is a rendezvous
    or a barrier: the replicas wait there anyway; or another xm.save: a reader of the files
    comes after the last save of the run, whose item answers for them all."""
    level = 1
    while not isinstance(ctx.parent(level), (cst.SimpleStatementLine, type(None))):
        level += 1
    statement, block = ctx.parent(level), ctx.parent(level + 1)
    body = list(getattr(block, "body", ()))
    if statement is None or statement not in body or body.index(statement) + 1 == len(body):
        return False
    after = body[body.index(statement) + 1]
    first = after.body[0] if isinstance(after, cst.SimpleStatementLine) else None
    return (isinstance(first, cst.Expr) and isinstance(first.value, cst.Call)
            and ctx.resolve(first.value.func) in _BARRIERS | {f"{XM}.save"})
