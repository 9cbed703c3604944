"""xm.xla_device() and xr.xla_device() → torch_xla.device(), torch_xla 2.3's name.

torch_xla 2.8 deprecates ``xm.xla_device`` and removes ``xr.xla_device``; ``torch_xla.device(n)``
(2.3+) returns the same device, so the call is renamed (safe). ``devkind`` goes: PJRT_DEVICE
chooses the device type, and a kind other than 'TPU' is reported, to be set there.

An index is reported, but a parameter of the enclosing function that defaults to None and that
no call in the file gives (a ``get_device(n=None)`` helper). Where it meant a replica's device
(the call is in code a spawn of this file runs in its replicas, or the index is made of the
replica's number: the spawned function's index, a rank, an ordinal), a PJRT process sees only
its own. Elsewhere one process sees every chip, but counted from another start: XRT listed the
host's CPU device with the TPU cores, and ``CPU:0`` sorted first, so the cores were xla:1 to
xla:8 and xla:0 the CPU (torch_xla 1.13 computation_client.cc adds one CPU device to a TPU
host's map; its Colab notebook of 1.8 says ``xm.xla_device()`` "acquired the first Cloud TPU
core ('xla:1')" and takes the second with ``n=2``; Lightning's ``tpu_cores=[5]`` took core IDs 1
to 8). Under PJRT the chips are xla:0 and up: a Kaggle kernel's ``xm.xla_device(fold + 1)`` for
eight folds asks for a chip one over, and for fold 7 one that does not exist.
"""

from __future__ import annotations

import ast

import libcst as cst

from xrt2pjrt.python import spawn_site
from xrt2pjrt.python.renames import RenameRule, XM, XR, renames_of
from xrt2pjrt.python.rule import argument, code, literal
from xrt2pjrt.python.spawn_graph import in_replicas_code, reads_replica_number
from xrt2pjrt.registry import Example, dedent

# XRT code picked a replica's device by number; under PJRT a process sees only its own.
_OWN_DEVICES = (
    "under PJRT the index counts the devices this process sees: in a replica of xmp.spawn only its "
    "own (one on TPU v4 and later, so another index raises IndexError; on v2/v3 two, one per thread, so "
    "another is the other thread's), without a spawn every chip of the host; where it meant this "
    "replica's device, use torch_xla.device()"
)
_COUNTED_FROM_ONE = (
    "under XRT the TPU cores were xla:1 to xla:8 (xla:0 was the host's CPU device); under PJRT the chips "
    "are xla:0 and up: XRT's index n is n - 1 here"
)


class XlaDevice(RenameRule):
    id = "api-xla-device"
    summary = "xm.xla_device(n, devkind) / xr.xla_device() → torch_xla.device(n) (2.3+)"
    targets = ("native",)
    table = renames_of(f"{XM}.xla_device", f"{XR}.xla_device")
    examples = (
        Example(
            dedent("""
                import torch_xla.core.xla_model as xm

                device = xm.xla_device()
            """),
            dedent("""
                import torch_xla

                device = torch_xla.device()
            """),
        ),
        Example(
            dedent("""
                import torch_xla
                import torch_xla.core.xla_model as xm

                device = xm.xla_device(n=1, devkind='CPU')
            """),
            dedent("""
                import torch_xla

                # TODO(xrt2pjrt): set PJRT_DEVICE for the devkind dropped [api-xla-device]
                device = torch_xla.device(index=1)
            """),
            manual=("devkind='CPU' dropped",),
        ),
        Example(  # BigGAN-Pytorch-TPU: the TPUs it ran on are what PJRT_DEVICE=TPU gives
            dedent("""
                import torch_xla.core.xla_model as xm

                device = xm.xla_device(devkind='TPU')
            """),
            dedent("""
                import torch_xla

                device = torch_xla.device()
            """),
        ),
        Example.unchanged(
            dedent("""
                import torch_xla.core.xla_model as xm

                device = xm.xla_device()
            """),
            options={"target_version": (2, 2)},
        ),
        Example(  # a Kaggle kernel's eight folds in threads, one TPU core each
            dedent("""
                import torch_xla.core.xla_model as xm

                def run(fold):
                    device = xm.xla_device(fold + 1)
            """),
            dedent("""
                import torch_xla

                def run(fold):
                    # TODO(xrt2pjrt): XRT counted TPU cores from xla:1 [api-xla-device]
                    device = torch_xla.device(fold + 1)
            """),
            manual=("xla:0 was the host's CPU device",),
        ),
        Example(  # XRT's device per replica (n=index): a PJRT process drives only its own
            dedent("""
                import torch_xla.core.xla_model as xm

                def _mp_fn(index):
                    device = xm.xla_device(n=index)
            """),
            dedent("""
                import torch_xla

                def _mp_fn(index):
                    # TODO(xrt2pjrt): use torch_xla.device() if n meant its own [api-xla-device]
                    device = torch_xla.device(index=index)
            """),
            manual=("n=index",),
        ),
    )

    def call(self, ctx, node, name):
        hit = argument(ctx.original, "n", 0)
        # (an index the callers pass through, None unless one asks, is theirs: asked at that call)
        if hit is not None and literal(hit[1].value) is not None and not _passed_through(ctx, hit[1].value):
            n = code(hit[1].value)
            kind = argument(ctx.original, "devkind", 1)  # (another kind's item says what to set)
            if _a_replicas(ctx, hit[1].value):
                if literal(hit[1].value) != 0:
                    ctx.decide("use torch_xla.device() if n meant its own", detail=f"n={n}: {_OWN_DEVICES}")
            elif kind is None or literal(kind[1].value) == "TPU":
                ctx.decide("XRT counted TPU cores from xla:1", detail=f"n={n}: {_COUNTED_FROM_ONE}")
        return super().call(ctx, node, name)


def _a_replicas(ctx, index: cst.BaseExpression) -> bool:
    """Whether the device asked for by ``index`` is a replica's: the call runs in the replicas
    of a spawn of this file, or ``index`` is made of the replica's number."""
    if ctx.tree is None or in_replicas_code(ctx):
        return True
    expression = ast.parse(f"({code(index)})", mode="eval").body
    return reads_replica_number(ctx.tree, spawn_site.function_at(ctx.tree, ctx.line), expression)


def _passed_through(ctx, index: cst.BaseExpression) -> bool:
    """Whether ``index`` is a parameter of the enclosing function that defaults to None and
    that no call of the function in this file gives (``def get_device(n=None):`` around
    ``xm.xla_device(n=n)``, called as ``get_device()``): the default device, as on XRT."""
    function = spawn_site.function_at(ctx.tree, ctx.line) if ctx.tree is not None else None
    if function is None or not isinstance(index, cst.Name):
        return False
    positional = [*function.args.posonlyargs, *function.args.args]
    names = [a.arg for a in positional]
    defaults = dict(zip(names[len(names) - len(function.args.defaults) :], function.args.defaults))
    defaults |= {a.arg: d for a, d in zip(function.args.kwonlyargs, function.args.kw_defaults) if d is not None}
    default = defaults.get(index.value)
    if not (isinstance(default, ast.Constant) and default.value is None):
        return False
    position = names.index(index.value) if index.value in names else None
    skip = 1 if names[:1] in (["self"], ["cls"]) else 0  # a method's callers do not pass it
    for call in spawn_site.of_type(ctx.tree, (ast.Call,)):
        if spawn_site.called_name(call.func) != function.name:
            continue
        given = position is not None and len(call.args) > position - skip
        if given or any(k.arg in (index.value, None) for k in call.keywords):
            return False
    return True
