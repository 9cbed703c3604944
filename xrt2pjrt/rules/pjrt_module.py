"""``torch_xla.experimental.pjrt`` (2022–2.4, deleted in 2.5) → ``torch_xla.runtime`` and friends.

Every import form resolves to the same dotted names, so ``pjrt.world_size()``,
``from torch_xla.experimental.pjrt import world_size`` and the full dotted spelling are
all rewritten; the old import goes once nothing uses it.
"""

from __future__ import annotations

import libcst as cst

from xrt2pjrt.registry import Example, register
from xrt2pjrt.python.rule import PythonRule, argument, code, keywordize, named
from xrt2pjrt.rules.runtime_api import DEVKIND, XM, XR, Dropped, Rename, RenameRule, Spelling

PJRT = "torch_xla.experimental.pjrt"
XMP = "torch_xla.distributed.xla_multiprocessing"
SHIM_XMP = "xrt2pjrt.shim.xla_multiprocessing"

_SAME_IN_RUNTIME = (
    "world_size", "global_ordinal", "local_ordinal", "local_process_count", "global_device_count",
    "local_device_count", "addressable_device_count", "process_index", "process_count",
    "device_type", "set_device_type",
)

PJRT_RENAMES: tuple[Rename, ...] = (
    *(Rename(f"{PJRT}.{name}", (Spelling(XR, name, "xr", (2, 1)),)) for name in _SAME_IN_RUNTIME),
    Rename(f"{PJRT}.xla_device",
           (Spelling("torch_xla", "device", None, (2, 3), keywords=(("n", "index"),)),
            Spelling(XR, "xla_device", "xr", (2, 1), (2, 7))),
           (Dropped("devkind", 1, None, DEVKIND),)),
    Rename(f"{PJRT}.device_attributes", (Spelling(XR, "runtime_device_attributes", "xr", (2, 1)),)),
    Rename(f"{PJRT}.global_device_attributes", (Spelling(XR, "global_runtime_device_attributes", "xr", (2, 1)),)),
    Rename(f"{PJRT}.broadcast_master_param", (Spelling(XM, "broadcast_master_param", "xm", (2, 1)),)),
)


@register
class PjrtRuntime(RenameRule):
    id = "pjrt-runtime"
    summary = "torch_xla.experimental.pjrt.* (deleted in 2.5) → torch_xla.runtime (xr.*)"
    table = PJRT_RENAMES
    examples = (
        Example(
            "from torch_xla.experimental import pjrt\n\nif pjrt.global_ordinal() == 0:\n    print(pjrt.world_size())\n",
            "import torch_xla.runtime as xr\n\nif xr.global_ordinal() == 0:\n    print(xr.world_size())\n",
        ),
        Example(  # the device kind goes: torch_xla.device takes none (TypeError)
            "from torch_xla.experimental import pjrt\n\ndevice = pjrt.xla_device(0, 'TPU')\n",
            "import torch_xla\n\n# TODO(xrt2pjrt): devkind='TPU' dropped: PJRT_DEVICE chooses the device type "
            "[pjrt-runtime]\ndevice = torch_xla.device(0)\n",
            manual=("devkind='TPU' dropped",),
        ),
        Example(
            "import torch_xla.runtime as xr\nfrom torch_xla.experimental.pjrt import local_ordinal, world_size\n\n"
            "n = world_size()\n",
            "import torch_xla.runtime as xr\nfrom torch_xla.experimental.pjrt import local_ordinal\n\n"
            "n = xr.world_size()\n",
        ),
    )


@register
class PjrtRendezvous(PythonRule):
    id = "pjrt-rendezvous"
    summary = "pjrt.rendezvous(tag, payload, ordinals) → xm.xla_rendezvous(payload, ordinals, tag=tag)"
    names = frozenset({f"{PJRT}.rendezvous"})
    examples = (
        Example(
            "import torch_xla.experimental.pjrt as pjrt\n\nreplies = pjrt.rendezvous('init', b'hi', [0, 1])\n",
            "import torch_xla.core.xla_model as xm\n\nreplies = xm.xla_rendezvous(b'hi', [0, 1], tag='init')\n",
        ),
    )

    def call(self, ctx, node, name):
        found = {param: argument(node, param, position)
                 for position, param in enumerate(("tag", "payload", "ordinals"))}
        if any(arg.star for arg in node.args) or len(node.args) > sum(hit is not None for hit in found.values()):
            ctx.manual("pjrt.rendezvous with extra or *-arguments: move it to xm.xla_rendezvous(payload, ordinals, tag) by hand")
            return node
        args = []
        for param in ("payload", "ordinals", "tag"):
            hit = found[param]
            if hit is None:
                continue
            arg = cst.Arg(hit[1].value)
            by_name = param == "tag" or (param == "ordinals" and found["payload"] is None)
            args.append(named(arg, param) if by_name else arg)
        ctx.change("pjrt.rendezvous(tag, payload, ordinals) → xm.xla_rendezvous(payload, ordinals, tag=tag)")
        return node.with_changes(func=ctx.ref(XM, "xla_rendezvous", "xm"), args=args)

    def reference(self, ctx, node, name):
        ctx.manual("pjrt.rendezvous passed around: its replacement xm.xla_rendezvous takes (payload, ordinals, tag)")
        return node


@register
class PjrtSpawn(PythonRule):
    id = "pjrt-spawn"
    summary = "pjrt.spawn(fn, ...) → xmp.spawn(fn, args=..., ...), arguments passed by name"
    names = frozenset({f"{PJRT}.spawn"})
    examples = (
        Example(
            "from torch_xla.experimental import pjrt\n\npjrt.spawn(_mp_fn, None, 'fork', (flags,))\n",
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "xmp.spawn(_mp_fn, nprocs=None, start_method='fork', args=(flags,))\n",
        ),
        Example(
            "from torch_xla.experimental import pjrt\n\npjrt.spawn(_mp_fn, (flags,))\n",
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\nxmp.spawn(_mp_fn, args=(flags,))\n",
        ),
        Example(
            "from torch_xla.experimental import pjrt\n\npjrt.spawn(_mp_fn, extra)\n",
            "from torch_xla.experimental import pjrt\n\n# TODO(xrt2pjrt): pjrt.spawn(fn, x): x is `args` "
            "(torch_xla 1.13) or `nprocs` (2.0): name it, then run xrt2pjrt again [pjrt-spawn]\n"
            "pjrt.spawn(_mp_fn, extra)\n",
            manual=("name it",),
        ),
    )

    def call(self, ctx, node, name):
        positional = [arg for arg in node.args if arg.keyword is None and not arg.star]
        if len(positional) == 2:
            # spawn(fn, args) before 2.0, spawn(fn, nprocs, ...) from 2.0: only a tuple tells.
            if not isinstance(positional[1].value, cst.Tuple):
                ctx.manual("pjrt.spawn(fn, x): x is `args` (torch_xla 1.13) or `nprocs` (2.0): "
                           "name it, then run xrt2pjrt again")
                return node
            params = ("fn", "args")
        else:
            params = ("fn", "nprocs", "start_method", "args")
        ctx.change("pjrt.spawn → xmp.spawn (arguments passed by name: the order differs)")
        return keywordize(node, params).with_changes(func=ctx.ref(XMP, "spawn", "xmp"))


_RESULTS = "results now come from xrt2pjrt.shim; torch_xla has no public API that returns per-process results"


@register
class PjrtRunMultiprocess(PythonRule):
    id = "pjrt-run-multiprocess"
    summary = ("pjrt.run_multiprocess(fn, *args) / pjrt._run_multiprocess → xrt2pjrt.shim's run_multiprocess, "
               "which calls fn(*args) as before (xmp.spawn would call fn(index, *args)); a used result is reported")
    safe = False
    names = frozenset({f"{PJRT}.run_multiprocess", f"{PJRT}._run_multiprocess"})
    examples = (
        Example(
            "from torch_xla.experimental import pjrt\n\npjrt._run_multiprocess(train, flags)\n",
            "import xrt2pjrt.shim.xla_multiprocessing as shim_xmp\n\nshim_xmp.run_multiprocess(train, flags)\n",
        ),
        Example(
            "from torch_xla.experimental import pjrt\n\nresults = pjrt.run_multiprocess(evaluate, model)\n",
            "import xrt2pjrt.shim.xla_multiprocessing as shim_xmp\n\n"
            f"# TODO(xrt2pjrt): {_RESULTS} [pjrt-run-multiprocess]\n"
            "results = shim_xmp.run_multiprocess(evaluate, model)\n",
            manual=("results",),
        ),
    )

    def call(self, ctx, node, name):
        # Not xmp.spawn, even where the result goes unused: it calls fn(index, *args).
        if not ctx.is_whole_statement():
            ctx.manual(_RESULTS)
        ctx.change(f"pjrt.{name.rsplit('.', 1)[1]} → xrt2pjrt.shim.xla_multiprocessing.run_multiprocess "
                   "(fn(*args), as before)")
        return node.with_changes(func=ctx.ref(SHIM_XMP, "run_multiprocess", "shim_xmp"))
