"""Removed and deprecated ``xm`` APIs → the runtime APIs of torch_xla 2.x.

The renames are data (``Rename``), each new spelling with the releases it exists in;
the one written is the first that exists in ``--target-version``.
tests/python/test_rename_table.py resolves every spelling valid in 2.9 against the installed
torch_xla."""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import libcst as cst

from xrt2pjrt.file_caches import per_file
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
    # What to do where a call passed it (the item's message, its TODO line); ``why`` is its long text.
    todo: str = ""
    # Match a positional argument only when it is a string or None literal: the new
    # function may take something else at that position.
    positional_if_str: bool = False
    # Dropping it never changes what the call does (an XRT-only hint): no item to decide.
    harmless: bool = False
    # Values whose drop leaves the call as it was where the code ran: no item to decide for them.
    as_dropped: tuple[object, ...] = ()
    # It changes only the call's value: no item where that value is only printed or logged.
    in_value_only: bool = False


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


DEFVAL = "under PJRT the fallback is never used; check nothing relied on it"
DEFVAL_TODO = "check nothing relied on defval="
DEVKIND = "PJRT_DEVICE chooses the device type"
DEVKIND_TODO = "set PJRT_DEVICE for the devkind dropped"
# XRT-era code asked for the TPUs it ran on: PJRT_DEVICE=TPU gives them (torch_xla sets it
# itself where libtpu finds a TPU), so only another kind is left to decide.
_ON_TPU = ("TPU",)
# A list that used to be empty on a host without that kind (timm's is_xla_available('TPU')
# read len(devices) >= 1 on the next line, and said True on every CPU host).
LISTED_DEVKIND = (
    "the list holds the devices of the type PJRT_DEVICE chose, whatever kind it asked for (CPU "
    "devices on a CPU host, where XRT listed none): where it tells whether there are devices of "
    "that kind, compare xr.device_type() with the kind instead"
)
LISTED_DEVKIND_TODO = "test xr.device_type() for the kind"

_DEVICE = Spelling("torch_xla", "device", None, (2, 3), keywords=(("n", "index"),))

RENAMES: tuple[Rename, ...] = (
    Rename(
        f"{XM}.xrt_world_size",
        (Spelling(XR, "world_size", "xr", (2, 1)),),
        (Dropped("defval", 0, 1, DEFVAL, DEFVAL_TODO, in_value_only=True),),
        note="counts devices, not processes",
    ),
    Rename(
        f"{XM}.get_ordinal",
        (Spelling(XR, "global_ordinal", "xr", (2, 1)),),
        (Dropped("defval", 0, 0, DEFVAL, DEFVAL_TODO, in_value_only=True),),
    ),
    Rename(
        f"{XM}.get_local_ordinal",
        (Spelling(XR, "local_ordinal", "xr", (2, 1)),),
        (Dropped("defval", 0, 0, DEFVAL, DEFVAL_TODO, in_value_only=True),),
    ),
    Rename(
        f"{XM}.xla_device",
        (_DEVICE, Spelling(XM, "xla_device", "xm", (2, 1))),
        (Dropped("devkind", 1, None, DEVKIND, DEVKIND_TODO, as_dropped=_ON_TPU),),
    ),
    Rename(
        f"{XR}.xla_device",
        (_DEVICE, Spelling(XR, "xla_device", "xr", (2, 1), (2, 7))),
        (Dropped("devkind", 1, None, DEVKIND, DEVKIND_TODO, as_dropped=_ON_TPU),),
    ),
    Rename(
        f"{XM}.mark_step",
        (Spelling("torch_xla", "sync", None, (2, 5)), Spelling("torch_xla", "sync", None, (2, 4), takes_args=False)),
    ),
    Rename(
        f"{XM}.get_xla_supported_devices",
        (Spelling(XM, "get_xla_supported_devices", "xm", (2, 1)),),
        (Dropped("devkind", 0, None, LISTED_DEVKIND, LISTED_DEVKIND_TODO, positional_if_str=True),),
        params=("devkind", "max_devices"),
    ),
    # Keywords renamed or dropped under the same name (read from v1.13 against 2.1 … 2.9).
    Rename(
        f"{XM}.send_cpu_data_to_device",
        (Spelling(XM, "send_cpu_data_to_device", "xm", (2, 1), keywords=(("data", "datas"),)),),
    ),
    Rename(
        f"{PL}.ParallelLoader",
        (
            Spelling(PL, "ParallelLoader", "pl", (2, 5), keywords=(("loader", "cpu_loader"),)),
            Spelling(PL, "ParallelLoader", "pl", (2, 1), (2, 4)),
        ),
    ),
    *(
        Rename(
            f"{module}.XlaFullyShardedDataParallel",
            (
                Spelling(
                    module,
                    "XlaFullyShardedDataParallel",
                    None,
                    (2, 8),
                    keywords=(("mark_step_on_finalization", "sync_on_finalization"),),
                ),
                Spelling(module, "XlaFullyShardedDataParallel", None, (2, 1), (2, 7)),
            ),
        )
        for module in (FSDP, f"{FSDP}.xla_fully_sharded_data_parallel")
    ),
    Rename(
        f"{XM}.all_reduce",
        (Spelling(XM, "all_reduce", "xm", (2, 1)),),
        (Dropped("cctx", 4, None, "XRT's collective context is gone", harmless=True),),
        params=("reduce_type", "inputs", "scale", "groups", "cctx", "pin_layout"),
    ),
)


class RenameRule(PythonRule):
    """Calls and references of the ``table``'s old names get the new spelling."""

    table: ClassVar[tuple[Rename, ...]] = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.names = frozenset(rename.old for rename in cls.table)
        cls.by_old = {rename.old: rename for rename in cls.table}

    @classmethod
    def needs(cls, text, target):
        """The newest ``since`` of the spellings written for ``target`` where ``text`` names
        their old name as a word (and, where only keywords change, an old keyword as ``kw=``):
        a reading of the text that errs towards the newer need, so a pin that may lack a
        spelling the migration writes is reported (a call's arguments are assumed)."""
        words = _words_of(text)
        return max(
            (
                since
                for word, keyword, since in _written(cls, target)
                if word in words and (not keyword or keyword(text))
            ),
            default=(2, 1),
        )

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
            if (
                not param.harmless
                and (literal(value) is NOT_LITERAL or literal(value) not in (param.default, *param.as_dropped))
                and not (param.in_value_only and _only_shown(ctx, node))
            ):
                ctx.decide(param.todo, detail=f"{param.name}={code(value)} dropped: {param.why}")
        # Positional arguments after a dropped one are passed by name to keep their meaning.
        new = keywordize(node, rename.params, start=min(dropped) + 1) if dropped else node
        new = without_args(new, set(dropped))
        renamed = [
            (arg.keyword.value, new_keyword)
            for arg in new.args
            if arg.keyword is not None
            for old, new_keyword in spelling.keywords
            if arg.keyword.value == old
        ]
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


def _only_shown(ctx, node: cst.Call) -> bool:
    """Whether the value of the call ``node`` is only printed or logged: made text where it
    is called, or bound to a name that its scope reads only that way (a log line's label)."""
    tree = ctx.tree
    if tree is None:
        return False
    func = cst.Module([]).code_for_node(node.func)
    calls = spawn_site.calls_at(tree, ctx.line, func)
    return bool(calls) and all(_shown(call, tree) for call in calls)


def _shown(call: ast.Call, tree: ast.Module) -> bool:
    parent = spawn_site.parents(tree).get(id(call))
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
        scope = spawn_site.function_at(tree, call.lineno) or tree
        return all(
            spawn_site.made_text(read, tree) for read in spawn_site.reads(spawn_site.walk(scope), parent.targets[0].id)
        )
    return spawn_site.made_text(call, tree)


@functools.lru_cache(maxsize=64)
def _written(
    rule: type[RenameRule], target: tuple[int, int]
) -> tuple[tuple[str, Callable | None, tuple[int, int]], ...]:
    """(the word a text names what is respelt by, None or the search for the old keyword as
    ``kw=`` it needs as well, the release of the new spelling), for each rename of ``rule``'s
    table that writes something other than the old call for ``target``. (Keyed by the rule:
    hashing its table at each ask cost more than the answer.)"""
    out = []
    for rename in rule.table:
        spelling = rename.spelling_for(target, has_args=True)
        if spelling is None:
            continue
        word = rename.old.rpartition(".")[2]
        if spelling.dotted != rename.old:
            out.append((word, None, spelling.since))
        elif spelling.keywords:
            keyword = re.compile(rf"\b(?:{'|'.join(re.escape(old) for old, _ in spelling.keywords)})\s*=").search
            out.append((word, keyword, spelling.since))
    return tuple(out)


@per_file()
def _words_of(text: str) -> frozenset[str]:
    """The words of ``text``: a name is in it as ``\\bname\\b`` finds it, the text read once
    for every rule's table instead of once for each of its names."""
    return frozenset(re.findall(r"\w+", text))


def _renamed_keyword(arg: cst.Arg, spelling: Spelling) -> cst.Arg:
    if arg.keyword is not None:
        for old, new in spelling.keywords:
            if arg.keyword.value == old:
                return arg.with_changes(keyword=cst.Name(new))
    return arg


_ALIASES = {
    XM: "xm",
    XR: "xr",
    "torch_xla.experimental.pjrt": "pjrt",
    "torch_xla.distributed.xla_multiprocessing": "xmp",
    PL: "pl",
}


def short(dotted: str) -> str:
    """``torch_xla.core.xla_model.get_ordinal`` → ``xm.get_ordinal``, as people write it."""
    module, _, attr = dotted.rpartition(".")
    return f"{_ALIASES[module]}.{attr}" if module in _ALIASES else dotted


def renames_of(*olds: str) -> tuple[Rename, ...]:
    return tuple(rename for rename in RENAMES if rename.old in olds)
