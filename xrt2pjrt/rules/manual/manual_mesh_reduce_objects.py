"""xm.mesh_reduce(tag, data, fn) with data the text shows may be numpy's or an object: from torch 2.6
(torch_xla 2.6+) it loads the gathered values with weights_only=True, which refuses them (UnpicklingError);
report

Reported on evidence only (python/value_kinds.py, ``Reading.refused``): a call into numpy, sklearn,
scipy or pandas (``np.mean(accs)``, ``confusion_matrix(y, p)``), ``.numpy()``, an object of a class
of the project's, a name that says it holds any object (``obj``, ``object_list``: accelerate's
``broadcast_object_list`` carries its batches' structure that way), or what a function of the file
returns on every path. A value the text shows nothing of is not reported: in the XRT-era code read
for this rule (accelerate 0.10, Lightning 1.7, transformers 4.19, DLRM's TPU port, pytorch/xla's
examples) mesh_reduce was handed losses (``loss.item()``), counters, tensors and dicts of them in 13
of 14 calls, and those load on 2.9 as before; a helper that returns a tensor on its TPU path and
numpy's on another is no evidence either. Nor are sklearn's scalar metrics (``accuracy_score``,
``roc_auc_score``, ``log_loss``): numpy's float64 in the releases of the XRT era, Python floats from
sklearn 1.7 (1.6.1: accuracy_score a float, roc_auc_score still numpy's), the release an environment
of torch 2.9 installs; a project that pins an older sklearn keeps numpy's. ``xrt2pjrt run`` sees the
value itself at each mesh_reduce it passes, and says whether it loads under weights_only=True.
"""

from __future__ import annotations

from xrt2pjrt.python import value_kinds
from xrt2pjrt.python.rule import PythonRule, argument
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.rules.manual._manual import XM

_WEIGHTS_ONLY = (
    "torch_xla 2.x's mesh_reduce reads the gathered values back with torch.load, which from torch 2.6 "
    "loads tensors and plain Python values only (weights_only=True): a numpy value (np.mean(...), "
    "an array) or an object of a class of yours raises UnpicklingError, at the first reduce, "
    "after the training before it. Hand it a tensor or a Python number (float(x)), or use the shim's "
    "mesh_reduce, which loads any value as XRT's did"
)


class MeshReduceObjects(PythonRule):
    id = "manual-mesh-reduce-objects"
    fix = "none"
    min_version = (2, 6)  # torch 2.6 made weights_only=True the default of torch.load
    summary = "xm.mesh_reduce of numpy values or objects (torch 2.6+ refuses to load them): reported"
    targets = ("native",)  # the shim's mesh_reduce loads any value
    names = frozenset({f"{XM}.mesh_reduce"})
    examples = (
        Example(  # a Kaggle-style metric: numpy gives a numpy.float64
            dedent("""
                import numpy as np
                import torch_xla.core.xla_model as xm

                acc = xm.mesh_reduce('acc', np.mean(hits), np.mean)
            """),
            dedent("""
                import numpy as np
                import torch_xla.core.xla_model as xm

                # TODO(xrt2pjrt): pass a tensor or a Python number [manual-mesh-reduce-objects]
                acc = xm.mesh_reduce('acc', np.mean(hits), np.mean)
            """),
            manual=("UnpicklingError",),
        ),
        Example.unchanged(
            dedent("""
                import torch_xla.core.xla_model as xm

                loss = xm.mesh_reduce('loss', loss.item(), sum)
            """),
        ),
        Example(  # an object of a class of the project's: weights_only refuses its class
            dedent("""
                import torch_xla.core.xla_model as xm
                from .meters import Meters

                meters = Meters(loss.item())
                meters = xm.mesh_reduce('meters', meters, Meters.merge)
            """),
            dedent("""
                import torch_xla.core.xla_model as xm
                from .meters import Meters

                meters = Meters(loss.item())
                # TODO(xrt2pjrt): pass a tensor or a Python number [manual-mesh-reduce-objects]
                meters = xm.mesh_reduce('meters', meters, Meters.merge)
            """),
            manual=("makes an object of a class of yours",),
        ),
        Example.unchanged(  # a counter, and a value the text shows nothing of: no evidence, no item
            dedent("""
                import torch_xla.core.xla_model as xm

                seen = 0
                for x, y in loader:
                    seen += y.size(0)
                seen = xm.mesh_reduce('seen', seen, np.sum)
                rate = xm.mesh_reduce('rate', tracker.rate(), np.mean)
            """),
        ),
        Example.unchanged(  # the reduced value of the round before is no evidence: each round binds it anew
            dedent("""
                import numpy as np
                import torch_xla.core.xla_model as xm

                for epoch in range(3):
                    acc = evaluate(model)
                    acc = xm.mesh_reduce('acc', acc, np.mean)
            """),
        ),
        Example.unchanged(
            dedent("""
                import torch_xla.core.xla_model as xm

                acc = xm.mesh_reduce('acc', np.mean(a), np.mean)
            """),
            options={"target_version": (2, 5)},  # torch 2.5 loads anything by default
        ),
    )

    def call(self, ctx, node, name):
        hit = argument(node, "data", 1)
        evidence = hit and value_kinds.refused_argument(ctx.tree, ctx.line, hit[1].value)
        if evidence:
            ctx.decide("pass a tensor or a Python number", detail=f"{evidence}: {_WEIGHTS_ONLY}")
        return node
