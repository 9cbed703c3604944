"""Removed and deprecated ``xm`` APIs → the runtime APIs of torch_xla 2.x.

The renames are data (``Rename``), each new spelling with the releases it exists in;
the one written is the first that exists in ``--target-version``.
tests/test_rename_table.py resolves every spelling valid in 2.9 against the installed
torch_xla.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import ClassVar

import libcst as cst

from xrt2pjrt.registry import Example, register
from xrt2pjrt.python import spawn_site
from xrt2pjrt.python.rule import NOT_LITERAL, PythonRule, argument, code, keywordize, literal, without_args

XM = "torch_xla.core.xla_model"
XR = "torch_xla.runtime"
PL = "torch_xla.distributed.parallel_loader"
FSDP = "torch_xla.distributed.fsdp"
LATEST = (2, 9)


@dataclass(frozen=True)
class Spelling:
    module: str
    attr: str
    alias: str | None  # the conventional import alias (None: ``import module``)
    since: tuple[int, int]
    until: tuple[int, int] = LATEST
    takes_args: bool = True  # False: only for calls without arguments
    keywords: tuple[tuple[str, str], ...] = ()  # (old keyword, new keyword)

    @property
    def dotted(self) -> str:
        return f"{self.module}.{self.attr}"


@dataclass(frozen=True)
class Dropped:
    """A parameter the new spelling does not take."""

    name: str
    position: int | None
    default: object
    why: str
    # Match a positional argument only when it is a string or None literal: the new
    # function may take something else at that position.
    positional_if_str: bool = False
    # Dropping it never changes what the call does (an XRT-only hint): no item to decide.
    harmless: bool = False


@dataclass(frozen=True)
class Rename:
    old: str
    spellings: tuple[Spelling, ...]
    dropped: tuple[Dropped, ...] = ()
    note: str = ""
    # The old positional parameters: arguments after a dropped one are passed by name.
    params: tuple[str, ...] = ()

    def spelling_for(self, version: tuple[int, int], has_args: bool) -> Spelling | None:
        for spelling in self.spellings:
            if spelling.since <= version <= spelling.until and (spelling.takes_args or not has_args):
                return spelling
        return None


_DEFVAL = "under PJRT the fallback is never used; check nothing relied on it"
DEVKIND = "PJRT_DEVICE chooses the device type"
# A list that used to be empty on a host without that kind (timm's is_xla_available('TPU')
# read len(devices) >= 1 on the next line, and said True on every CPU host).
_LISTED_DEVKIND = ("the list holds the devices of the type PJRT_DEVICE chose, whatever kind it asked for (CPU "
                   "devices on a CPU host, where XRT listed none): where it tells whether there are devices of "
                   "that kind, compare xr.device_type() with the kind instead")

_DEVICE = Spelling("torch_xla", "device", None, (2, 3), keywords=(("n", "index"),))
# XRT code picked a replica's device by number; under PJRT a process sees only its own.
_OWN_DEVICES = ("under PJRT the index counts the devices this process sees: in a replica of xmp.spawn only its "
                "own (one on TPU v4 and later, so another index raises IndexError; on v2/v3 two, one per thread, so "
                "another is the other thread's), without a spawn every chip of the host; where it meant this "
                "replica's device, use torch_xla.device()")

RENAMES: tuple[Rename, ...] = (
    Rename(f"{XM}.xrt_world_size", (Spelling(XR, "world_size", "xr", (2, 1)),),
           (Dropped("defval", 0, 1, _DEFVAL),),
           note="counts devices, not processes"),
    Rename(f"{XM}.get_ordinal", (Spelling(XR, "global_ordinal", "xr", (2, 1)),),
           (Dropped("defval", 0, 0, _DEFVAL),)),
    Rename(f"{XM}.get_local_ordinal", (Spelling(XR, "local_ordinal", "xr", (2, 1)),),
           (Dropped("defval", 0, 0, _DEFVAL),)),
    Rename(f"{XM}.xla_device",
           (_DEVICE, Spelling(XM, "xla_device", "xm", (2, 1))),
           (Dropped("devkind", 1, None, DEVKIND),)),
    Rename(f"{XR}.xla_device",
           (_DEVICE, Spelling(XR, "xla_device", "xr", (2, 1), (2, 7))),
           (Dropped("devkind", 1, None, DEVKIND),)),
    Rename(f"{XM}.mark_step",
           (Spelling("torch_xla", "sync", None, (2, 5)), Spelling("torch_xla", "sync", None, (2, 4), takes_args=False))),
    Rename(f"{XM}.get_xla_supported_devices", (Spelling(XM, "get_xla_supported_devices", "xm", (2, 1)),),
           (Dropped("devkind", 0, None, _LISTED_DEVKIND, positional_if_str=True),),
           params=("devkind", "max_devices")),
    # Keywords renamed or dropped under the same name (read from v1.13 against 2.1 … 2.9).
    Rename(f"{XM}.send_cpu_data_to_device",
           (Spelling(XM, "send_cpu_data_to_device", "xm", (2, 1), keywords=(("data", "datas"),)),)),
    Rename(f"{PL}.ParallelLoader",
           (Spelling(PL, "ParallelLoader", "pl", (2, 5), keywords=(("loader", "cpu_loader"),)),
            Spelling(PL, "ParallelLoader", "pl", (2, 1), (2, 4)))),
    *(Rename(f"{module}.XlaFullyShardedDataParallel",
             (Spelling(module, "XlaFullyShardedDataParallel", None, (2, 8),
                       keywords=(("mark_step_on_finalization", "sync_on_finalization"),)),
              Spelling(module, "XlaFullyShardedDataParallel", None, (2, 1), (2, 7))))
      for module in (FSDP, f"{FSDP}.xla_fully_sharded_data_parallel")),
    Rename(f"{XM}.all_reduce", (Spelling(XM, "all_reduce", "xm", (2, 1)),),
           (Dropped("cctx", 4, None, "XRT's collective context is gone", harmless=True),),
           params=("reduce_type", "inputs", "scale", "groups", "cctx", "pin_layout")),
)


class RenameRule(PythonRule):
    """Calls and references of the ``table``'s old names get the new spelling."""

    table: ClassVar[tuple[Rename, ...]] = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.names = frozenset(rename.old for rename in cls.table)
        cls.by_old = {rename.old: rename for rename in cls.table}

    def reference(self, ctx, node, name):
        rename = self.by_old[name]
        spelling = rename.spelling_for(ctx.target_version, has_args=False)
        if spelling is None or spelling.dotted == name:
            return node
        ctx.change(self._message(name, spelling, rename))
        return ctx.ref(spelling.module, spelling.attr, spelling.alias)

    def call(self, ctx, node, name):
        rename = self.by_old[name]
        dropped = self._dropped(node, rename)
        spelling = rename.spelling_for(ctx.target_version, has_args=len(node.args) > len(dropped))
        if spelling is None:
            return node
        for index, param in dropped.items():
            value = node.args[index].value
            if not param.harmless and (literal(value) is NOT_LITERAL or literal(value) != param.default):
                ctx.manual(f"{param.name}={code(value)} dropped: {param.why}")
        # Positional arguments after a dropped one are passed by name to keep their meaning.
        new = keywordize(node, rename.params, start=min(dropped) + 1) if dropped else node
        new = without_args(new, set(dropped))
        renamed = [(arg.keyword.value, new_keyword) for arg in new.args if arg.keyword is not None
                   for old, new_keyword in spelling.keywords if arg.keyword.value == old]
        new = new.with_changes(args=[_renamed_keyword(arg, spelling) for arg in new.args])
        if spelling.dotted != name:
            new = new.with_changes(func=ctx.ref(spelling.module, spelling.attr, spelling.alias))
            ctx.change(self._message(name, spelling, rename))
        elif dropped or renamed:
            done = [f"{p.name} dropped ({p.why})" for p in dropped.values()] + [f"{a}= → {b}=" for a, b in renamed]
            ctx.change(f"{short(name)}(): {', '.join(done)}")
        return new

    @staticmethod
    def _dropped(node: cst.Call, rename: Rename) -> dict[int, Dropped]:
        """The arguments of ``node`` the new spelling does not take, by index."""
        found = {}
        for param in rename.dropped:
            hit = argument(node, param.name, param.position)
            if hit is None:
                continue
            index, arg = hit
            value = literal(arg.value)
            if arg.keyword is None and param.positional_if_str and not (value is None or isinstance(value, str)):
                continue
            found[index] = param
        return found

    @staticmethod
    def _message(name: str, spelling: Spelling, rename: Rename) -> str:
        note = f" ({rename.note})" if rename.note else ""
        return f"{short(name)} → {short(spelling.dotted)}{note}"


def _renamed_keyword(arg: cst.Arg, spelling: Spelling) -> cst.Arg:
    if arg.keyword is not None:
        for old, new in spelling.keywords:
            if arg.keyword.value == old:
                return arg.with_changes(keyword=cst.Name(new))
    return arg


_ALIASES = {XM: "xm", XR: "xr", "torch_xla.experimental.pjrt": "pjrt",
            "torch_xla.distributed.xla_multiprocessing": "xmp", PL: "pl"}


def short(dotted: str) -> str:
    """``torch_xla.core.xla_model.get_ordinal`` → ``xm.get_ordinal``, as people write it."""
    module, _, attr = dotted.rpartition(".")
    return f"{_ALIASES[module]}.{attr}" if module in _ALIASES else dotted


def _table(*olds: str) -> tuple[Rename, ...]:
    return tuple(rename for rename in RENAMES if rename.old in olds)


@register
class WorldSize(RenameRule):
    id = "api-world-size"
    summary = "xm.xrt_world_size() (removed in 2.7) → xr.world_size()"
    targets = ("native",)
    table = _table(f"{XM}.xrt_world_size")
    examples = (
        Example(
            "import torch_xla.core.xla_model as xm\n\nn = xm.xrt_world_size()\n",
            "import torch_xla.runtime as xr\n\nn = xr.world_size()\n",
        ),
        Example(
            "import torch_xla.core.xla_model as xm\n\nn = xm.xrt_world_size(defval=4)\nxm.master_print(n)\n",
            "import torch_xla.core.xla_model as xm\nimport torch_xla.runtime as xr\n\n"
            "# TODO(xrt2pjrt): defval=4 dropped: " + _DEFVAL + " [api-world-size]\n"
            "n = xr.world_size()\nxm.master_print(n)\n",
            manual=("defval=4 dropped",),
        ),
    )


@register
class Ordinal(RenameRule):
    id = "api-ordinal"
    summary = "xm.get_ordinal() (removed in 2.7) → xr.global_ordinal()"
    targets = ("native",)
    table = _table(f"{XM}.get_ordinal")
    examples = (
        Example(
            "from torch_xla.core import xla_model\n\nrank = xla_model.get_ordinal()\n",
            "import torch_xla.runtime as xr\n\nrank = xr.global_ordinal()\n",
        ),
        Example(
            "from torch_xla.core.xla_model import get_ordinal as go\n\nrank = go(defval=0)\n",
            "import torch_xla.runtime as xr\n\nrank = xr.global_ordinal()\n",
        ),
    )


@register
class LocalOrdinal(RenameRule):
    id = "api-local-ordinal"
    summary = "xm.get_local_ordinal(defval) → xr.local_ordinal()"
    targets = ("native",)
    table = _table(f"{XM}.get_local_ordinal")
    examples = (
        Example(
            "import torch_xla.core.xla_model as xm\n\ndef f():\n    return xm.get_local_ordinal()\n",
            "import torch_xla.runtime as xr\n\ndef f():\n    return xr.local_ordinal()\n",
        ),
    )


@register
class XlaDevice(RenameRule):
    id = "api-xla-device"
    summary = "xm.xla_device(n, devkind) / xr.xla_device() → torch_xla.device(n) (2.3+)"
    targets = ("native",)
    table = _table(f"{XM}.xla_device", f"{XR}.xla_device")
    examples = (
        Example(
            "import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()\n",
            "import torch_xla\n\ndevice = torch_xla.device()\n",
        ),
        Example(
            "import torch_xla\nimport torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device(n=1, devkind='TPU')\n",
            f"import torch_xla\n\n# TODO(xrt2pjrt): n=1: {_OWN_DEVICES} [api-xla-device]\n"
            "# TODO(xrt2pjrt): devkind='TPU' dropped: " + DEVKIND + " [api-xla-device]\n"
            "device = torch_xla.device(index=1)\n",
            manual=("n=1", "devkind='TPU' dropped"),
        ),
        Example(
            "import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()\n",
            "import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()\n",
            options={"target_version": (2, 2)},
        ),
        Example(  # XRT's device per replica (n=index): a PJRT process drives only its own
            "import torch_xla.core.xla_model as xm\n\ndef _mp_fn(index):\n    device = xm.xla_device(n=index)\n",
            "import torch_xla\n\ndef _mp_fn(index):\n"
            f"    # TODO(xrt2pjrt): n=index: {_OWN_DEVICES} [api-xla-device]\n"
            "    device = torch_xla.device(index=index)\n",
            manual=("n=index",),
        ),
    )

    def call(self, ctx, node, name):
        hit = argument(ctx.original, "n", 0)
        if hit is not None and literal(hit[1].value) not in (None, 0):
            ctx.manual(f"n={code(hit[1].value)}: {_OWN_DEVICES}")
        return super().call(ctx, node, name)


@register
class MarkStep(RenameRule):
    id = "api-mark-step"
    summary = "xm.mark_step() (deprecated in 2.8) → torch_xla.sync() (2.4+)"
    targets = ("native",)
    table = _table(f"{XM}.mark_step")
    examples = (
        Example(
            "import torch_xla.core.xla_model as xm\n\nloss.backward()\nxm.mark_step()\n",
            "import torch_xla\n\nloss.backward()\ntorch_xla.sync()\n",
        ),
        Example(
            "import torch_xla.core.xla_model as xm\n\nxm.mark_step(wait=True)\n",
            "import torch_xla.core.xla_model as xm\n\nxm.mark_step(wait=True)\n",
            options={"target_version": (2, 4)},
        ),
    )


_PROBE = ("a TPU probe answers by the runtime's device type: PJRT lists the devices of that type only, "
          "so the devices of the kind asked for are never missing from the list")


@register
class SupportedDevices(RenameRule):
    id = "api-supported-devices"
    summary = ("xm.get_xla_supported_devices(devkind, max_devices): devkind dropped (gone in 2.8); as a probe "
               "(bool(...), if ..., len(...) > 0, ... is not None) → xr.device_type() == devkind")
    targets = ("native",)
    table = _table(f"{XM}.get_xla_supported_devices")
    nodes = (cst.Comparison,)
    examples = (
        Example(
            "import torch_xla.core.xla_model as xm\n\ndevices = xm.get_xla_supported_devices('TPU', 8)\n",
            "import torch_xla.core.xla_model as xm\n\n"
            "# TODO(xrt2pjrt): devkind='TPU' dropped: " + _LISTED_DEVKIND + " [api-supported-devices]\n"
            "devices = xm.get_xla_supported_devices(max_devices=8)\n",
            manual=("devkind='TPU' dropped",),
        ),
        Example(
            "import torch_xla.core.xla_model as xm\n\nn = len(xm.get_xla_supported_devices(max_devices=8))\n",
            "import torch_xla.core.xla_model as xm\n\nn = len(xm.get_xla_supported_devices(max_devices=8))\n",
        ),
        Example(  # on a CPU host this answered False under XRT, and must still
            "import torch_xla.core.xla_model as xm\n\nhas_tpu = bool(xm.get_xla_supported_devices('TPU'))\n"
            "if not xm.get_xla_supported_devices(devkind='GPU'):\n    print('no GPU')\n",
            "import torch_xla.runtime as xr\n\nhas_tpu = bool(xr.device_type() == 'TPU')\n"
            "if not xr.device_type() == 'CUDA':\n    print('no GPU')\n",
        ),
        Example(
            "import torch_xla.core.xla_model as xm\n\ndef found(kind):\n"
            "    return len(xm.get_xla_supported_devices(devkind=kind)) > 0\n",
            "import torch_xla.runtime as xr\n\ndef found(kind):\n    return xr.device_type() == kind\n",
        ),
        Example(  # both forms in one file: one import
            "import torch_xla.core.xla_model as xm\n\ndef probe(kind):\n"
            "    return bool(xm.get_xla_supported_devices('TPU')), len(xm.get_xla_supported_devices(devkind=kind)) > 0\n",
            "import torch_xla.runtime as xr\n\ndef probe(kind):\n"
            "    return bool(xr.device_type() == 'TPU'), xr.device_type() == kind\n",
        ),
    )

    def call(self, ctx, node, name):
        kind = self._kind(ctx.original)
        if kind is not None:
            if _tested(ctx, 1):
                ctx.change(f"{code(ctx.original)} as a probe → xr.device_type() == {code(kind)}: {_PROBE}")
                return self._probe(ctx, kind, negated=False)
            if self._counted(ctx) is not None:
                # The comparison around it is the probe, which leave replaces whole; the
                # kind goes now so that api-not-in-target, which runs next, finds no
                # argument to report that the output will not have.
                dropped = next(i for i, arg in enumerate(ctx.original.args) if arg.value is kind)
                return node.with_changes(args=[a for i, a in enumerate(node.args) if i != dropped])
        return super().call(ctx, node, name)

    def leave(self, ctx, original, updated):
        """``len(C) > 0``, ``len(C) == 0``, ``C is not None`` ... for C a call with a device kind."""
        found = _counted_call(original)
        if found is None or ctx.resolve(found[0].func) not in self.names:
            return updated
        call, negated = found
        kind = self._kind(call)
        if kind is None:
            return updated
        ctx.change(f"{code(original)} as a probe → xr.device_type() {'!=' if negated else '=='} {code(kind)}: {_PROBE}")
        return self._probe(ctx, kind, negated).with_changes(lpar=updated.lpar, rpar=updated.rpar)

    def _counted(self, ctx):
        """The comparison this call's count or None-ness is tested by, if any."""
        for level in (1, 3):  # C is None / len(C) > 0 (Call len -> Arg -> C)
            comparison = ctx.parent(level)
            if isinstance(comparison, cst.Comparison):
                found = _counted_call(comparison)
                if found is not None and found[0] is ctx.original:
                    return comparison
        return None

    def _kind(self, call: cst.Call) -> cst.BaseExpression | None:
        """The device kind the call asks for (by keyword, or a literal string first)."""
        found = self._dropped(call, self.by_old[f"{XM}.get_xla_supported_devices"])
        if not found:
            return None
        value = call.args[next(iter(found))].value
        return None if literal(value) is None else value

    @staticmethod
    def _probe(ctx, kind: cst.BaseExpression, negated: bool) -> cst.Comparison:
        # XRT's 'GPU' is PJRT's 'CUDA' (2.2 … 2.8; torch_xla 2.9 has no GPU device).
        if literal(kind) == "GPU" and ctx.target_version >= (2, 2):
            kind = kind.with_changes(value=kind.value.replace("GPU", "CUDA"))
        operator = cst.NotEqual() if negated else cst.Equal()
        return cst.Comparison(cst.Call(ctx.ref(XR, "device_type", "xr")), [cst.ComparisonTarget(operator, kind)])


def _tested(ctx, level: int) -> bool:
    """Whether the node ``level`` steps below ``ctx.parent(level)`` is only tested for truth:
    an ``if``/``while``/``assert``/``x if ... else y`` test, ``not ...``, ``bool(...)``."""
    parent, child = ctx.parent(level), ctx.original if level == 1 else ctx.parent(level - 1)
    if isinstance(parent, (cst.If, cst.While, cst.IfExp, cst.Assert)):
        return parent.test is child
    if isinstance(parent, cst.UnaryOperation):
        return isinstance(parent.operator, cst.Not)
    if isinstance(parent, cst.Arg):
        call = ctx.parent(level + 1)
        return (isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "bool"
                and len(call.args) == 1 and ctx.resolve(call.func) is None)
    return False


# (operator, number): a count compared so that the comparison says "some" (False: "none")
_SOME = {(cst.GreaterThan, 0): True, (cst.NotEqual, 0): True, (cst.GreaterThanEqual, 1): True,
         (cst.Equal, 0): False, (cst.LessThan, 1): False, (cst.LessThanEqual, 0): False}


def _counted_call(comparison: cst.Comparison) -> tuple[cst.Call, bool] | None:
    """(C, negated) for ``len(C) > 0`` (or == 0, ...) and ``C is not None`` (or is None)."""
    if len(comparison.comparisons) != 1:
        return None
    left, (target,) = comparison.left, comparison.comparisons
    if isinstance(target.operator, (cst.Is, cst.IsNot)) and literal(target.comparator) is None:
        return (left, isinstance(target.operator, cst.Is)) if isinstance(left, cst.Call) else None
    count = literal(target.comparator)
    some = _SOME.get((type(target.operator), count)) if isinstance(count, int) else None
    if (some is None or not isinstance(left, cst.Call) or not isinstance(left.func, cst.Name)
            or left.func.value != "len" or len(left.args) != 1 or not isinstance(left.args[0].value, cst.Call)):
        return None
    return left.args[0].value, not some


@register
class Keywords(RenameRule):
    id = "api-keywords"
    summary = ("keywords torch_xla 2.x renamed or dropped: send_cpu_data_to_device(data=) → datas=, "
               "ParallelLoader(loader=) → cpu_loader= (2.5+), FSDP(mark_step_on_finalization=) → "
               "sync_on_finalization= (2.8+), all_reduce(cctx=) dropped")
    table = _table(f"{XM}.send_cpu_data_to_device", f"{PL}.ParallelLoader", f"{FSDP}.XlaFullyShardedDataParallel",
                   f"{FSDP}.xla_fully_sharded_data_parallel.XlaFullyShardedDataParallel", f"{XM}.all_reduce")
    examples = (
        Example(
            "import torch_xla.distributed.parallel_loader as pl\n\n"
            "loader = pl.ParallelLoader(loader=train_loader, devices=[device])\n",
            "import torch_xla.distributed.parallel_loader as pl\n\n"
            "loader = pl.ParallelLoader(cpu_loader=train_loader, devices=[device])\n",
        ),
        Example(
            "import torch_xla.distributed.parallel_loader as pl\n\n"
            "loader = pl.ParallelLoader(loader=train_loader, devices=[device])\n",
            "import torch_xla.distributed.parallel_loader as pl\n\n"
            "loader = pl.ParallelLoader(loader=train_loader, devices=[device])\n",
            options={"target_version": (2, 4)},
        ),
        Example(
            "import torch_xla.core.xla_model as xm\n\nbatch = xm.send_cpu_data_to_device(data=batch, device=device)\n",
            "import torch_xla.core.xla_model as xm\n\nbatch = xm.send_cpu_data_to_device(datas=batch, device=device)\n",
        ),
        Example(
            "import torch_xla.core.xla_model as xm\n\n"
            "cctx = make_context()\nxm.all_reduce(xm.REDUCE_SUM, grads, 1.0 / n, None, cctx, True)\n",
            "import torch_xla.core.xla_model as xm\n\n"
            "cctx = make_context()\nxm.all_reduce(xm.REDUCE_SUM, grads, 1.0 / n, None, pin_layout=True)\n",
        ),
    )


@register
class UsingPjrt(PythonRule):
    id = "api-using-pjrt"
    summary = ("xr.using_pjrt() (removed in 2.5) → True: from 2.1 on PJRT is the only runtime; "
               "`if xr.using_pjrt():` keeps its body and loses its XRT-only else")
    # (with --target shim too: the shim serves xm and xmp, and the module of pjrt.using_pjrt is gone)
    names = frozenset({f"{XR}.using_pjrt", "torch_xla.experimental.pjrt.using_pjrt"})
    nodes = (cst.If,)
    examples = (
        Example(
            "import os\nimport torch_xla.runtime as xr\n\n# the runtime decides\nif xr.using_pjrt():\n"
            "    setup()  # PJRT\n    run()\nelse:\n    os.environ['XRT_TPU_CONFIG'] = config\n",
            "import os\n\n# the runtime decides\nsetup()  # PJRT\nrun()\n",
        ),
        Example(
            "import torch_xla.runtime as xr\n\ndef main():\n    if not xr.using_pjrt():\n        legacy()\n"
            "    elif fast:\n        go()\n    else:\n        walk()\n",
            "def main():\n    if fast:\n        go()\n    else:\n        walk()\n",
        ),
        Example(
            "import torch_xla.runtime as xr\n\npjrt = xr.using_pjrt()\n",
            "pjrt = True\n",
        ),
        Example(  # pytorch/xla v1.13's own test of the runtime choice: rewritten, assertFalse(True)
            "import torch_xla.runtime as xr\n\nclass TestRuntime(TestCase):\n    def test_using_pjrt(self):\n"
            "        self.assertFalse(xr.using_pjrt())\n",
            "import torch_xla.runtime as xr\n\nclass TestRuntime(TestCase):\n    def test_using_pjrt(self):\n"
            "        # TODO(xrt2pjrt): a test asserts which runtime runs here: from torch_xla 2.1 it is always PJRT "
            "(xr.using_pjrt is gone from 2.5): the assertion tests XRT-era behaviour; delete it [api-using-pjrt]\n"
            "        self.assertFalse(xr.using_pjrt())\n",
            manual=("a test asserts which runtime runs",),
        ),
        Example(
            "from torch_xla.experimental import pjrt\nimport torch_xla.core.xla_model as xm\n\n"
            "if pjrt.using_pjrt():\n    xm.rendezvous('init')\n",
            "import torch_xla.core.xla_model as xm\n\nxm.rendezvous('init')\n",
            options={"target": "shim"},
        ),
    )

    def call(self, ctx, node, name):
        if node.args:
            return node
        if _asserted(ctx):
            ctx.manual(f"a test asserts which runtime runs here: from torch_xla 2.1 it is always PJRT ({short(name)} "
                       "is gone from 2.5): the assertion tests XRT-era behaviour; delete it")
            return node
        ctx.change(f"{short(name)}() is always true from torch_xla 2.1")
        return cst.Name("True")

    def leave(self, ctx, original, updated):
        """``if True:`` (as the call became) keeps its body; ``if not True:`` its else."""
        if not (ctx.in_block() and self._was_using_pjrt(ctx, original.test)):
            return updated
        test = updated.test
        if _is_true(test):
            kept, dropped = updated.body, updated.orelse is not None
        elif isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) and _is_true(test.expression):
            kept, dropped = updated.orelse, True
        else:
            return updated
        ctx.change("if on using_pjrt(): only the PJRT branch is left" + (", the XRT one removed" if dropped else ""))
        if kept is None:
            ctx.remove_statement()
            return updated
        if isinstance(kept, cst.If):  # an elif: it becomes the if
            return kept.with_changes(leading_lines=updated.leading_lines)
        block = kept.body if isinstance(kept, cst.Else) else kept
        statements = _statements_of(block)
        header = block.header.comment if isinstance(block, cst.IndentedBlock) else None  # `if ...:  # note`
        above = [*updated.leading_lines, *([cst.EmptyLine(comment=header)] if header else []), *statements[0].leading_lines]
        statements[0] = statements[0].with_changes(leading_lines=above)
        return cst.FlattenSentinel(statements)

    def _was_using_pjrt(self, ctx, test) -> bool:
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test = test.expression
        return isinstance(test, cst.Call) and not test.args and ctx.resolve(test.func) in self.names


def _asserted(ctx) -> bool:
    """Whether the node being visited is inside an ``assert`` or a test's ``self.assert...(...)``."""
    level = 1
    while (node := ctx.parent(level)) is not None and not isinstance(node, cst.BaseCompoundStatement):
        if isinstance(node, cst.Assert) or (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                                            and node.func.attr.value.startswith("assert")):
            return True
        level += 1
    return False


def _is_true(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def _statements_of(block: cst.BaseSuite) -> list[cst.BaseStatement]:
    """The statements of a block, each on its own line (``if x: a; b`` has them on one)."""
    if isinstance(block, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(body=list(block.body), trailing_whitespace=block.trailing_whitespace)]
    return list(block.body)


@register
class RendezvousPayload(PythonRule):
    id = "api-rendezvous-payload"
    summary = "xm.rendezvous(tag, 'text'): PJRT takes bytes only (TypeError); a str literal becomes b'...'"
    targets = ("native",)  # the shim's rendezvous still takes str
    names = frozenset({f"{XM}.rendezvous"})
    examples = (
        Example(
            "import torch_xla.core.xla_model as xm\n\nxm.rendezvous('checkpoint', 'saved')\n",
            "import torch_xla.core.xla_model as xm\n\nxm.rendezvous('checkpoint', b'saved')\n",
        ),
        Example(
            "import torch_xla.core.xla_model as xm\n\nxm.rendezvous('init', payload=str(rank))\n",
            "import torch_xla.core.xla_model as xm\n\n# TODO(xrt2pjrt): the rendezvous payload must be bytes "
            "under PJRT (TypeError otherwise): encode it if it is a str [api-rendezvous-payload]\n"
            "xm.rendezvous('init', payload=str(rank))\n",
            manual=("must be bytes",),
        ),
    )

    def call(self, ctx, node, name):
        hit = argument(node, "payload", 1)
        if hit is None:
            return node
        index, arg = hit
        value = arg.value
        if isinstance(value, cst.SimpleString):
            prefix = value.prefix.lower()
            if "b" in prefix:
                return node
            ctx.change("xm.rendezvous: str payload → bytes (PJRT rejects str)")
            if value.evaluated_value.isascii():
                raw = "r" if "r" in prefix else ""
                new = cst.SimpleString(f"b{raw}{value.value[len(value.prefix):]}")
            else:  # no bytes literal holds it: encoded as XRT's binding did (UTF-8)
                new = cst.Call(cst.Attribute(value, cst.Name("encode")))
            return node.with_changes(args=[*node.args[:index], arg.with_changes(value=new), *node.args[index + 1:]])
        if _makes_str(value) or (isinstance(value, cst.Name) and _bound_to_str(ctx, value.value)):
            ctx.manual("the rendezvous payload must be bytes under PJRT (TypeError otherwise): encode it if it is a str")
        return node


def _makes_str(value: cst.BaseExpression) -> bool:
    """A str for sure: a str literal (implicitly joined too), an f-string, ``str(...)``/
    ``repr(...)``/``json.dumps(...)``/``'...'.format(...)``, or ``'...' % x`` / ``'...' + x``."""
    if isinstance(value, cst.SimpleString):
        return "b" not in value.prefix.lower()
    if isinstance(value, (cst.FormattedString, cst.ConcatenatedString)):
        return not isinstance(value, cst.ConcatenatedString) or _makes_str(value.left)
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, (cst.Modulo, cst.Add)):
        return _makes_str(value.left) or (isinstance(value.operator, cst.Add) and _makes_str(value.right))
    if not isinstance(value, cst.Call):
        return False
    callee = value.func
    if isinstance(callee, cst.Name):
        return callee.value in ("str", "repr")
    return isinstance(callee, cst.Attribute) and callee.attr.value in ("format", "dumps")


def _bound_to_str(ctx, name: str) -> bool:
    """Whether ``name``, read on the current line, is bound only to what makes a str in the
    innermost scope that binds it (``msg = 'ready %d' % rank``); a parameter is not known."""
    bound = spawn_site.bindings_seen_at(ctx.tree, ctx.line, name)
    return bool(bound) and all(value is not None and _makes_str(cst.parse_expression(ast.unparse(value)))
                               for value in bound)


# What names the device type (torch_xla 2.x says CUDA where XRT said GPU)
_DEVICE_TYPE_CALLS = frozenset({f"{XM}.xla_device_hw", f"{XR}.device_type"})


@register
class GpuIsCuda(PythonRule):
    id = "api-device-type-gpu"
    summary = "xm.xla_device_hw(d) == 'GPU' (or xr.device_type()): torch_xla 2.x names it 'CUDA' → 'CUDA'"
    nodes = (cst.Comparison,)
    examples = (
        Example(  # always False on XLA:GPU (torch_xla 2.8, the last with CUDA) once the name changed
            "import torch_xla.core.xla_model as xm\n\nif xm.xla_device_hw(device) == 'GPU':\n    scaler = GradScaler()\n",
            "import torch_xla.core.xla_model as xm\n\nif xm.xla_device_hw(device) == 'CUDA':\n    scaler = GradScaler()\n",
        ),
    )

    def leave(self, ctx, original, updated):
        if len(original.comparisons) != 1 or not isinstance(original.comparisons[0].operator, (cst.Equal, cst.NotEqual)):
            return updated
        sides = (original.left, original.comparisons[0].comparator)
        if not any(isinstance(side, cst.Call) and ctx.resolve(side.func) in _DEVICE_TYPE_CALLS for side in sides):
            return updated
        gpu = next((side for side in sides if isinstance(side, cst.SimpleString) and side.evaluated_value == "GPU"), None)
        if gpu is None:
            return updated
        ctx.change(f"{code(original)}: torch_xla 2.x names the GPU device type 'CUDA'")
        new = ctx.string("CUDA", gpu)
        if gpu is original.left:
            return updated.with_changes(left=new)
        return updated.with_changes(comparisons=[updated.comparisons[0].with_changes(comparator=new)])
