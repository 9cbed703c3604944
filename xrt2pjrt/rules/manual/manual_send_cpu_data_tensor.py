"""xm.send_cpu_data_to_device(data, device) with data that may be a bare tensor, and its result read: 2.1+
returns a one-element list for a bare tensor (XRT: the tensor); report. A container display, or a value a
local reading proves a dict, a sequence or a number (python/value_kinds.py), comes back as it went
"""

from __future__ import annotations

import libcst as cst

from xrt2pjrt.python import value_kinds
from xrt2pjrt.python.rule import PythonRule, argument
from xrt2pjrt.registry import Example
from xrt2pjrt.rules.manual._manual import XM

_ONE_TENSOR_LIST = ("torch_xla 2.x's send_cpu_data_to_device wraps a bare tensor in a list and returns the list (2.1+), "
                    "where XRT's returned the tensor: if this is one tensor, take [0] of the result, or use "
                    ".to(device); a list, tuple or dict of tensors comes back as before")
_CONTAINER_DISPLAYS = (cst.List, cst.Tuple, cst.Dict, cst.ListComp, cst.DictComp)


class SendCpuDataTensor(PythonRule):
    id = "manual-send-cpu-data-tensor"
    fix = "none"
    summary = ("xm.send_cpu_data_to_device(data, device) with data that may be a bare tensor, and its result read: "
               "2.1+ returns a one-element list for a bare tensor (XRT: the tensor); report")
    targets = ("native",)  # the shim's returns a tensor for a tensor
    names = frozenset({f"{XM}.send_cpu_data_to_device"})
    examples = (
        Example(  # an Ising-model sampler's couplings; then couplings.shape[0]: AttributeError on a list
            "import torch_xla.core.xla_model as xm\n\ncouplings = xm.send_cpu_data_to_device(couplings, device)\n",
            (
                "import torch_xla.core.xla_model as xm\n"
                "\n"
                "# TODO(xrt2pjrt): take [0] if this is one tensor [manual-send-cpu-data-tensor]\n"
                "couplings = xm.send_cpu_data_to_device(couplings, device)\n"
            ),
            manual=("wraps a bare tensor in a list",),
        ),
        Example(
            "import torch_xla.core.xla_model as xm\n\nx, y = xm.send_cpu_data_to_device((x, y), device)\n",
            "import torch_xla.core.xla_model as xm\n\nx, y = xm.send_cpu_data_to_device((x, y), device)\n",
        ),
    )

    def call(self, ctx, node, name):
        hit = argument(node, "datas", 0) or argument(node, "data", 0)
        if hit is None or isinstance(hit[1].value, _CONTAINER_DISPLAYS) or hit[1].star or ctx.is_whole_statement():
            return node  # a container comes back as one; a result thrown away is one no code reads
        if isinstance(ctx.parent(), cst.Subscript) and ctx.parent().value is ctx.original:
            return node  # send_cpu_data_to_device(t, device)[0]: the fix the item advises, made
        kinds = value_kinds.of_argument(ctx.tree, ctx.line, hit[1].value)
        if kinds is not None and value_kinds.TENSOR not in kinds:
            return node  # a dict (x.state_dict()), a sequence or a number comes back as it went
        ctx.manual("take [0] if this is one tensor", detail=_ONE_TENSOR_LIST)
        return node
