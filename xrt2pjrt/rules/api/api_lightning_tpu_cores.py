"""Lightning's ``Trainer(tpu_cores=8)`` (``num_tpu_cores`` in 0.7) → ``accelerator="tpu", devices=8``.

torch_xla 2.9 trains under Lightning 2.5.3 and later only: earlier releases call
``xm.xrt_world_size()`` or ``xr.using_pjrt()``, which torch_xla 2.7 and 2.5 removed
(install-library-pin). Lightning 2.0 removed ``tpu_cores`` from the Trainer, deprecated since
1.7 for ``accelerator='tpu'`` and ``devices=x`` (pytorch_lightning 1.7.7
trainer/trainer.py:376-381; 2.0.0's Trainer has no such parameter), so the XRT-era call raises
TypeError there. A number of cores, or the list of one core's index, is passed as ``devices``
with ``accelerator="tpu"``, what 1.7 maps it to (safe); ``None``, the default, goes. Any other
value (``tpu_cores=args.tpu_cores``, None on a run without a TPU) is reported:
``accelerator="tpu"`` would ask for a TPU on every run.
"""

from __future__ import annotations

import libcst as cst

from xrt2pjrt.python.rule import PythonRule, argument, literal, named, without_args
from xrt2pjrt.registry import Example, dedent

_TRAINER = ("pytorch_lightning", "lightning", "lightning.pytorch")
_KEYWORDS = ("tpu_cores", "num_tpu_cores")
_WHY = (
    "Lightning 2.0 removed the Trainer's tpu_cores (deprecated in 1.7), and torch_xla 2.9 needs Lightning 2.5.3 "
    "or later: pass accelerator='tpu' and devices=... on the runs that use a TPU"
)


class LightningTpuCores(PythonRule):
    id = "api-lightning-tpu-cores"
    summary = "Lightning's Trainer(tpu_cores=8) (gone in Lightning 2.0) → accelerator='tpu', devices=8"
    words = _KEYWORDS[:1]
    names = frozenset(
        f"{package}{module}.Trainer" for package in _TRAINER for module in ("", ".trainer", ".trainer.trainer")
    )
    examples = (
        Example(
            dedent("""
                import pytorch_lightning as pl

                trainer = pl.Trainer(tpu_cores=8, max_epochs=3)
            """),
            dedent("""
                import pytorch_lightning as pl

                trainer = pl.Trainer(accelerator="tpu", devices=8, max_epochs=3)
            """),
        ),
        Example(
            dedent("""
                from pytorch_lightning import Trainer

                trainer = Trainer(tpu_cores=args.tpu_cores)
            """),
            dedent("""
                from pytorch_lightning import Trainer

                # TODO(xrt2pjrt): pass accelerator and devices [api-lightning-tpu-cores]
                trainer = Trainer(tpu_cores=args.tpu_cores)
            """),
            manual=("removed the Trainer's tpu_cores",),
        ),
    )

    def call(self, ctx, node, name):
        found = next((hit for keyword in _KEYWORDS if (hit := argument(node, keyword, None))), None)
        if found is None:
            return node
        index, arg = found
        accelerator, devices = argument(node, "accelerator", None), argument(node, "devices", None)
        if literal(arg.value) is None:  # the default: no TPU
            ctx.change(f"{arg.keyword.value}=None dropped (the default; Lightning 2.x has no such parameter)")
            return without_args(node, {index})
        if not _cores(arg.value) or devices or (accelerator and literal(accelerator[1].value) != "tpu"):
            ctx.decide("pass accelerator and devices", detail=_WHY)
            return node
        ctx.change(f"{arg.keyword.value}= → accelerator='tpu', devices= (Lightning 2.x)")
        moved = [named(arg, "devices")]  # (its comma, and what follows it, stay)
        if not accelerator:
            tpu = cst.Arg(cst.SimpleString('"tpu"'), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            moved.insert(0, named(tpu, "accelerator"))
        return node.with_changes(args=[*node.args[:index], *moved, *node.args[index + 1 :]])


def _cores(value: cst.BaseExpression) -> bool:
    """A number of cores, or a list of core indexes: what ``devices`` takes as it is."""
    if isinstance(value, cst.List):
        return bool(value.elements) and all(isinstance(e.value, cst.Integer) for e in value.elements)
    return isinstance(value, cst.Integer)
