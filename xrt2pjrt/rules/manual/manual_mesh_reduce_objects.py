"""xm.mesh_reduce(tag, data, fn) with data not surely a tensor or a plain Python value: from torch 2.6
(torch_xla 2.6+) it loads the gathered values with weights_only=True, and numpy values or objects
raise UnpicklingError; report. What a local reading proves a tensor, a number, a text or a dict of
them on every branch (python/value_kinds.py) loads as before
"""

from __future__ import annotations

from xrt2pjrt.python import value_kinds
from xrt2pjrt.python.rule import PythonRule, argument
from xrt2pjrt.registry import Example
from xrt2pjrt.rules.manual._manual import XM

_WEIGHTS_ONLY = ("torch_xla 2.x's mesh_reduce reads the gathered values back with torch.load, which from torch 2.6 "
                 "loads tensors and plain Python values only (weights_only=True): a numpy value (np.mean(...), "
                 "sklearn's metrics) or an object of a class of yours raises UnpicklingError, at the first reduce, "
                 "after the training before it. Hand it a tensor or a Python number (float(x)), or use the shim's "
                 "mesh_reduce, which loads any value as XRT's did")


class MeshReduceObjects(PythonRule):
    id = "manual-mesh-reduce-objects"
    fix = "none"
    min_version = (2, 6)  # torch 2.6 made weights_only=True the default of torch.load
    summary = ("xm.mesh_reduce(tag, data, fn) with data not surely a tensor or a plain Python value: from torch 2.6 "
               "(torch_xla 2.6+) it loads the gathered values with weights_only=True, and numpy values or objects "
               "raise UnpicklingError; report")
    targets = ("native",)  # the shim's mesh_reduce loads any value
    names = frozenset({f"{XM}.mesh_reduce"})
    examples = (
        Example(  # a Kaggle-style metric: sklearn gives a numpy.float64
            "import torch_xla.core.xla_model as xm\n\n"
            "acc = xm.mesh_reduce('acc', metrics.accuracy_score(y, p), np.mean)\n",
            (
                "import torch_xla.core.xla_model as xm\n"
                "\n"
                "# TODO(xrt2pjrt): pass a tensor or a Python number [manual-mesh-reduce-objects]\n"
                "acc = xm.mesh_reduce('acc', metrics.accuracy_score(y, p), np.mean)\n"
            ),
            manual=("UnpicklingError",),
        ),
        Example(
            "import torch_xla.core.xla_model as xm\n\nloss = xm.mesh_reduce('loss', loss.item(), sum)\n",
            "import torch_xla.core.xla_model as xm\n\nloss = xm.mesh_reduce('loss', loss.item(), sum)\n",
        ),
        Example(
            "import torch_xla.core.xla_model as xm\n\nacc = xm.mesh_reduce('acc', np.mean(a), np.mean)\n",
            "import torch_xla.core.xla_model as xm\n\nacc = xm.mesh_reduce('acc', np.mean(a), np.mean)\n",
            options={"target_version": (2, 5)},  # torch 2.5 loads anything by default
        ),
    )

    def call(self, ctx, node, name):
        hit = argument(node, "data", 1)
        if hit is not None and value_kinds.of_argument(ctx.tree, ctx.line, hit[1].value) is None:
            ctx.manual("pass a tensor or a Python number", detail=_WEIGHTS_ONLY)
        return node
