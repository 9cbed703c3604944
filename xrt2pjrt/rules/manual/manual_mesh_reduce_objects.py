"""xm.mesh_reduce(tag, data, fn) with data not surely a tensor or a plain Python value: from torch 2.6
(torch_xla 2.6+) it loads the gathered values with weights_only=True, and numpy values or objects
raise UnpicklingError; report
"""

from __future__ import annotations

import ast
import dataclasses
import functools

from xrt2pjrt.python import spawn_site
from xrt2pjrt.python.rule import PythonRule, argument, code
from xrt2pjrt.registry import Example
from xrt2pjrt.rules.manual._manual import XM

_WEIGHTS_ONLY = ("torch_xla 2.x's mesh_reduce reads the gathered values back with torch.load, which from torch 2.6 "
                 "loads tensors and plain Python values only (weights_only=True): a numpy value (np.mean(...), "
                 "sklearn's metrics) or an object of a class of yours raises UnpicklingError, at the first reduce, "
                 "after the training before it. Hand it a tensor or a Python number (float(x)), or use the shim's "
                 "mesh_reduce, which loads any value as XRT's did")
# Methods whose result is a tensor or a plain Python value whatever tensor they are called on
# (numpy's arrays have none of them but item and tolist, which give Python values there too).
_PLAIN_RESULTS = frozenset({"item", "tolist", "detach", "cpu", "clone", "to"})


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
                "# TODO(xrt2pjrt): hand mesh_reduce a tensor or a Python... [manual-mesh-reduce-objects]\n"
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
        if hit is not None and ctx.tree is not None:
            # in parentheses, as in the call: a line break or a walrus is valid there
            data = ast.parse(f"({code(hit[1].value)})", mode="eval").body
            if not _plain(data, _Names(ctx.tree, ctx.line)):
                ctx.manual("hand mesh_reduce a tensor or a Python number", detail=_WEIGHTS_ONLY)
        return node


@dataclasses.dataclass(frozen=True)
class _Names:
    """Where the names of an expression at ``line`` are bound, as far as the file tells."""

    tree: ast.Module
    line: int

    def values(self, name: str) -> list[ast.AST | None]:
        """What binds ``name`` before ``line`` (``acc = xm.mesh_reduce('acc', acc, ...)`` is after),
        or after it in a loop around it (the next round's value)."""
        bound = spawn_site.bindings_seen_at(self.tree, self.line, name)
        return [value for value in bound if value is None or value.lineno < self.line
                or any(loop.lineno <= value.lineno <= loop.end_lineno for loop in self._loops)]

    @functools.cached_property
    def _loops(self) -> list[ast.stmt]:
        """The loops around ``line`` (walked once, whatever the names the expression holds)."""
        return [node for node in ast.walk(self.tree) if isinstance(node, (ast.For, ast.AsyncFor, ast.While))
                and node.lineno <= self.line <= node.end_lineno]

    def called(self, call: ast.Call) -> str | None:
        """The dotted name ``call`` calls, through the file's imports (``np.mean`` -> ``numpy.mean``)."""
        return spawn_site.resolved(call.func, spawn_site.imported(self.tree))


def _plain(value: ast.expr, names: _Names, seen: frozenset[str] = frozenset()) -> bool:
    """Surely a tensor or a plain Python value, as far as the file tells: a literal, a number
    made of them (``100.0 * correct.item() / total``), ``float(x)``, ``x.item()``, a torch call,
    or a name bound to one of those before the call."""
    if isinstance(value, (ast.Constant, ast.JoinedStr)):
        return True
    if isinstance(value, (ast.UnaryOp, ast.NamedExpr)):
        return _plain(value.operand if isinstance(value, ast.UnaryOp) else value.value, names, seen)
    if isinstance(value, ast.BinOp):  # total.item() / flags.batches: a count, as code reads
        sides = (value.left, value.right)
        plain = [_plain(side, names, seen) for side in sides]
        return any(plain) and all(p or isinstance(side, (ast.Name, ast.Attribute)) for p, side in zip(plain, sides))
    if isinstance(value, ast.Name):
        bound = names.values(value.id) if value.id not in seen else []
        return bool(bound) and all(v is not None and _plain(v, names, seen | {value.id}) for v in bound)
    if not isinstance(value, ast.Call):
        return False
    if isinstance(value.func, ast.Attribute) and value.func.attr in _PLAIN_RESULTS:
        return True
    called = names.called(value)
    if called is None:
        return isinstance(value.func, ast.Name) and value.func.id in ("float", "int", "str", "bool", "len")
    return called.startswith("torch.")
