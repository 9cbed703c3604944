"""xm.save / torch.save of a checkpoint that holds numpy values: from torch 2.6 (torch_xla 2.6+)
torch.load refuses the file by default (weights_only=True); report

XRT-era trainers kept their metrics in the checkpoint beside the weights: a validation score
from sklearn or ``xm.mesh_reduce(..., np.mean)`` (numpy's float64), a loss as ``.numpy()``.
torch 2.6 made ``weights_only=True`` the default of ``torch.load``, which loads tensors and
plain Python values only: the project's own predict script, or its resume, raises
UnpicklingError on the checkpoint its trainer wrote. Reported at the save, on evidence only
(python/value_kinds.py, ``Reading.refused``, numpy's values alone: a state_dict, a loss as
``.item()`` and a value the text shows nothing of go unasked). Save ``float(x)``, or load
the files you wrote yourself with ``weights_only=False``.
"""

from __future__ import annotations

from xrt2pjrt.python import value_kinds
from xrt2pjrt.python.rule import PythonRule, argument
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.rules.manual._manual import XM

_WEIGHTS_ONLY = (
    "from torch 2.6 torch.load loads tensors and plain Python values only (weights_only=True): a "
    "checkpoint holding numpy's values raises UnpicklingError where it is loaded. Save float(x), or "
    "load the files you wrote yourself with weights_only=False"
)


class SavedNumpy(PythonRule):
    id = "manual-saved-numpy"
    fix = "none"
    min_version = (2, 6)  # torch 2.6 made weights_only=True the default of torch.load
    summary = "xm.save / torch.save of numpy values (torch 2.6+'s torch.load refuses the file): reported"
    names = frozenset({f"{XM}.save", "torch.save"})
    statement_words = ("torch.save",)  # torch is no import of torch_xla's: its statements fold
    examples = (
        Example(  # a validation score kept beside the weights
            dedent("""
                import numpy as np
                import torch_xla.core.xla_model as xm

                mse = xm.mesh_reduce('val_mse', mse, np.mean)
                xm.save({'model': model.state_dict(), 'val_mse': mse}, 'best.ckpt')
            """),
            dedent("""
                import numpy as np
                import torch_xla.core.xla_model as xm

                mse = xm.mesh_reduce('val_mse', mse, np.mean)
                # TODO(xrt2pjrt): save float(x): torch.load refuses numpy [manual-saved-numpy]
                xm.save({'model': model.state_dict(), 'val_mse': mse}, 'best.ckpt')
            """),
            manual=("UnpicklingError",),
        ),
        Example(
            dedent("""
                import torch
                import torch_xla

                state = {'step': step, 'loss': loss.detach().cpu().numpy()}
                torch.save(state, 'last.ckpt')
            """),
            dedent("""
                import torch
                import torch_xla

                state = {'step': step, 'loss': loss.detach().cpu().numpy()}
                # TODO(xrt2pjrt): save float(x): torch.load refuses numpy [manual-saved-numpy]
                torch.save(state, 'last.ckpt')
            """),
            manual=("gives a numpy array",),
        ),
        Example.unchanged(  # weights, Python numbers, and a helper's parameter the text shows nothing of
            dedent("""
                import torch_xla.core.xla_model as xm

                xm.save({'model': model.state_dict(), 'loss': loss.item(), 'epoch': epoch}, path)

                def save(obj, path):
                    xm.save(obj, path)
            """),
        ),
    )

    def call(self, ctx, node, name):
        hit = argument(node, "data" if name.startswith("torch_xla") else "obj", 0)
        evidence = hit and value_kinds.refused_argument(ctx.tree, ctx.line, hit[1].value)
        if evidence and "numpy" in evidence:  # numpy only: a helper's `obj` shows nothing saved
            ctx.decide("save float(x): torch.load refuses numpy", detail=f"{evidence}: {_WEIGHTS_ONLY}")
        return node
