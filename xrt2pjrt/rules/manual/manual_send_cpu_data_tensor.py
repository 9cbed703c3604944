"""xm.send_cpu_data_to_device(data, device) with data the text shows may be a bare tensor, and its result
read: 2.1+ returns a one-element list for a bare tensor (XRT: the tensor); report

Reported on evidence of a bare tensor: a value a local reading shows is one on some branch
(python/value_kinds.py: ``torch.ones(2)``, ``t.clone()``, a parameter annotated ``Tensor``), or a
result the code then reads as a tensor (``.shape``, ``.to(...)``, ``.sum()``: a list has none of
them, and under XRT neither had the dict or the tuple a container would have come back as), unless
the value handed in is shown to be something else: a model (``AutoModel.from_pretrained(...)``, whose
``.to`` a tensor shares), numpy's values. A value the text shows nothing of is not reported: the
XRT-era code read for this rule hands it batches and state dicts (timm's bits branch: a
``Dict[str, Tensor]``), which come back as they went.
"""

from __future__ import annotations

import ast

import libcst as cst

from xrt2pjrt.python import spawn_site, value_kinds
from xrt2pjrt.python.rule import PythonRule, argument
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.rules.manual._manual import XM

_ONE_TENSOR_LIST = (
    "torch_xla 2.x's send_cpu_data_to_device wraps a bare tensor in a list and returns the list (2.1+), "
    "where XRT's returned the tensor: if this is one tensor, take [0] of the result, or use "
    ".to(device); a list, tuple or dict of tensors comes back as before"
)
_CONTAINER_DISPLAYS = (cst.List, cst.Tuple, cst.Dict, cst.ListComp, cst.DictComp)


class SendCpuDataTensor(PythonRule):
    id = "manual-send-cpu-data-tensor"
    fix = "none"
    summary = "xm.send_cpu_data_to_device(tensor) read as a tensor (2.1+ returns a list): reported"
    targets = ("native",)  # the shim's returns a tensor for a tensor
    names = frozenset({f"{XM}.send_cpu_data_to_device"})
    examples = (
        Example(  # an Ising-model sampler's couplings; then couplings.shape[0]: AttributeError on a list
            dedent("""
                import torch_xla.core.xla_model as xm

                couplings = xm.send_cpu_data_to_device(couplings, device)
                n = couplings.shape[0]
            """),
            dedent("""
                import torch_xla.core.xla_model as xm

                # TODO(xrt2pjrt): take [0] if this is one tensor [manual-send-cpu-data-tensor]
                couplings = xm.send_cpu_data_to_device(couplings, device)
                n = couplings.shape[0]
            """),
            manual=("wraps a bare tensor in a list",),
        ),
        Example.unchanged(
            dedent("""
                import torch_xla.core.xla_model as xm

                x, y = xm.send_cpu_data_to_device((x, y), device)
            """),
        ),
    )

    def call(self, ctx, node, name):
        hit = argument(node, "datas", 0) or argument(node, "data", 0)
        if hit is None or isinstance(hit[1].value, _CONTAINER_DISPLAYS) or hit[1].star or ctx.is_whole_statement():
            return node  # a container comes back as one; a result thrown away is one no code reads
        if isinstance(ctx.parent(), cst.Subscript) and ctx.parent().value is ctx.original:
            return node  # send_cpu_data_to_device(t, device)[0]: the fix the item advises, made
        value = hit[1].value
        if value_kinds.shown_as_argument(ctx.tree, ctx.line, value, value_kinds.TENSOR) or (
            _read_as_a_tensor(ctx) and value_kinds.refused_argument(ctx.tree, ctx.line, value) is None
        ):
            ctx.decide("take [0] if this is one tensor", detail=_ONE_TENSOR_LIST)
        return node


def _read_as_a_tensor(ctx) -> bool:
    """Whether the name the result is assigned to is read below as a tensor (``x.shape``,
    ``x.to(...)``) in the code that assigns it."""
    assign = ctx.parent()
    if ctx.tree is None or not (
        isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name)
    ):
        return False
    name, scope = assign.targets[0].target.value, spawn_site.function_at(ctx.tree, ctx.line) or ctx.tree
    return any(
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == name
        and node.lineno > ctx.line
        and node.attr in value_kinds.TENSOR_ATTRIBUTES
        for node in spawn_site.own_nodes(scope)
    )
