"""``xmp.spawn(fn, args, nprocs, join, daemon, start_method)`` under PJRT.

PJRT starts one process per chip and uses every device; from torch_xla 2.6 ``nprocs``
other than None or 1 raises ``ValueError``. ``nprocs=1`` still means one device only, so
it is kept, as is ``start_method``.
"""

from __future__ import annotations

import ast
import builtins
import functools
import re

import libcst as cst

from xrt2pjrt.registry import Example, register
from xrt2pjrt.python import imports, spawn_site
from xrt2pjrt.python.rule import NOT_LITERAL, PythonRule, argument, code, literal, without_args

SPAWN = "torch_xla.distributed.xla_multiprocessing.spawn"
SHIM_SPAWN = "xrt2pjrt.shim.xla_multiprocessing.spawn"
NPROCS_POSITION, START_METHOD_POSITION = 2, 5
# torch_xla.launch(fn, args=(), start_method='spawn', debug_single_process=False), 2.5+:
# it calls xmp.spawn (nprocs=1 when debug_single_process), under either target.
LAUNCH = "torch_xla.launch"
SINGLE_PROCESS_POSITION = 3


def _nprocs(node: cst.Call):
    return argument(node, "nprocs", NPROCS_POSITION)


def _positional_after(node: cst.Call, index: int) -> bool:
    return any(arg.keyword is None for arg in node.args[index + 1:])


class _NprocsRule(PythonRule):
    names = frozenset({SPAWN})
    targets = ("native",)


@register
class NprocsLiteral(_NprocsRule):
    id = "spawn-nprocs-literal"
    summary = "xmp.spawn(nprocs=8): a literal > 1 is removed (PJRT uses every device); nprocs=1 is kept"
    examples = (
        Example(
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "xmp.spawn(_mp_fn, args=(flags,), nprocs=8, start_method='fork')\n",
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "xmp.spawn(_mp_fn, args=(flags,), start_method='fork')\n",
        ),
        Example(
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\nxmp.spawn(_mp_fn, (), 8, True)\n",
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\nxmp.spawn(_mp_fn, (), None, True)\n",
        ),
        Example(  # each replica's sampler takes an eighth of the data: half of it unread on 4 processes
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "def _mp_fn(index):\n    sampler = DistributedSampler(data, num_replicas=8, rank=index)\n\n"
            "xmp.spawn(_mp_fn, nprocs=8)\n",
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "def _mp_fn(index):\n    sampler = DistributedSampler(data, num_replicas=8, rank=index)\n\n"
            "# TODO(xrt2pjrt): nprocs=8 is removed, and 8 is also given in this file as a number of replicas, as if "
            "it were the number of processes: under PJRT that is xr.world_size(), which need not be 8; use "
            "xr.world_size() there [spawn-nprocs-literal]\nxmp.spawn(_mp_fn)\n",
            manual=("(line 4: `sampler = DistributedSampler(data, num_replicas=8, rank=index)`)",),
        ),
        Example(
            "from torch_xla.distributed import xla_multiprocessing as xmp\n\nxmp.spawn(_mp_fn, nprocs=1)\n",
            "from torch_xla.distributed import xla_multiprocessing as xmp\n\nxmp.spawn(_mp_fn, nprocs=1)\n",
        ),
        Example(
            "import torch.multiprocessing as mp\n\nmp.spawn(fn=_mp_fn, nprocs=8)  # torch_xla elsewhere\n",
            "import torch.multiprocessing as mp\n\nmp.spawn(fn=_mp_fn, nprocs=8)  # torch_xla elsewhere\n",
        ),
    )

    def call(self, ctx, node, name):
        hit = _nprocs(node)
        if hit is None:
            return node
        index, arg = hit
        value = literal(arg.value)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 1:
            return node
        ctx.change(f"xmp.spawn: nprocs={value} removed; PJRT runs on every device (nprocs may only be 1 or None)")
        site = spawn_site.find(ctx.tree, ctx.line, code(ctx.original.func))
        if site and (lines := _lines_beyond(site, _replica_counts(site.scopes[-1], value))):
            why = (f"nprocs={value} is removed, and {value} is also given in this file as a number of replicas, as if it "
                   f"were the number of processes: under PJRT that is xr.world_size(), which need not be {value}; "
                   "use xr.world_size() there")
            ctx.manual(why, cites=lines, quoted=_QUOTED_LINES)
        if arg.keyword is None and _positional_after(node, index):
            return node.with_changes(args=[*node.args[:index], arg.with_changes(value=cst.Name("None")), *node.args[index + 1:]])
        return without_args(node, {index})


# Keywords that give a number of replicas (DistributedSampler's, torch.distributed's)
_REPLICA_KEYWORDS = frozenset({"num_replicas", "world_size"})


def _replica_counts(tree: ast.Module, count: int) -> list[ast.keyword]:
    """The ``num_replicas=8`` / ``world_size=8`` keywords of ``tree`` that give ``count``."""
    return [node for node in ast.walk(tree) if isinstance(node, ast.keyword) and node.arg in _REPLICA_KEYWORDS
            and isinstance(node.value, ast.Constant) and type(node.value.value) is int and node.value.value == count]


def _already_none_or_one(value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.IfExp):
        return _already_none_or_one(value.body) and _already_none_or_one(value.orelse)
    return literal(value) in (None, 1)


_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer)


@register
class NprocsExpression(_NprocsRule):
    id = "spawn-nprocs-expression"
    summary = ("xmp.spawn(nprocs=expr) → nprocs=1 if expr == 1 else None (one device, or all of them); a count also "
               "read as the world size is reported, under the shim too (its spawn takes nprocs, and runs every device); "
               "xmp.spawn handed on as a value (functools.partial, an alias) is reported")
    safe = False
    names = frozenset({SPAWN, SHIM_SPAWN})
    targets = ("native", "shim")
    examples = (
        Example(
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "xmp.spawn(_mp_fn, args=(flags,), nprocs=flags.num_cores)\n",
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "xmp.spawn(_mp_fn, args=(flags,), nprocs=1 if flags.num_cores == 1 else None)\n",
        ),
        Example(  # the replicas size their sampler by the flag: on 4 processes they read half the data
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "def _mp_fn(index, flags):\n    sampler = DistributedSampler(data, num_replicas=flags['num_cores'])\n\n"
            "xmp.spawn(_mp_fn, args=(FLAGS,), nprocs=FLAGS['num_cores'])\n",
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "def _mp_fn(index, flags):\n    sampler = DistributedSampler(data, num_replicas=flags['num_cores'])\n\n"
            "# TODO(xrt2pjrt): FLAGS['num_cores'] is also read elsewhere in this file (as ['num_cores']), as if it "
            "were the number of processes: under PJRT that is xr.world_size(), which need not match it; where "
            "FLAGS['num_cores'] means that number, use xr.world_size() instead [spawn-nprocs-expression]\n"
            "xmp.spawn(_mp_fn, args=(FLAGS,), nprocs=1 if FLAGS['num_cores'] == 1 else None)\n",
            manual=("read elsewhere in this file (as ['num_cores'])",),
        ),
        Example(
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\nxmp.spawn(_mp_fn, **spawn_kwargs)\n",
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "# TODO(xrt2pjrt): spawn arguments come from **kwargs: make sure nprocs is None or 1 "
            "[spawn-nprocs-expression]\nxmp.spawn(_mp_fn, **spawn_kwargs)\n",
            manual=("**kwargs",),
        ),
    )

    def reference(self, ctx, node, name):
        # functools.partial(xmp.spawn, fn, nprocs=8), run = xmp.spawn: the call that gives
        # nprocs is not one of xmp.spawn, so nothing here rewrites it (the shim's takes any).
        if ctx.options.target == "native" and name == SPAWN and not _only_looked_at(ctx):
            ctx.manual(f"{code(node)} is handed on as a value (to functools.partial, or a name), so the nprocs "
                       "given where it is called is not rewritten: torch_xla 2.x's spawn raises ValueError for "
                       "any but None or 1")
        return node

    def call(self, ctx, node, name):
        # The shim's spawn takes any nprocs, so nothing is rewritten for it; but it runs every
        # device of the host too, which need not be the count either.
        shim = ctx.options.target == "shim" or name == SHIM_SPAWN
        hit = _nprocs(node)
        if hit is None:
            if any(arg.star == "**" for arg in node.args) and not shim:
                ctx.manual("spawn arguments come from **kwargs: make sure nprocs is None or 1")
            return node
        index, arg = hit
        if literal(arg.value) is not NOT_LITERAL:
            return node
        # also in the form this rule writes, so that every run (--check too) reports it
        name, places, lines = _read_as_count(spawn_site.find(ctx.tree, ctx.line, code(ctx.original.func)))
        if places:
            world = "xm.xrt_world_size()" if shim else "xr.world_size()"
            why = (f"{name} is also {' and '.join(places)}, as if it were the number of processes: under PJRT that is "
                   f"{world}, which need not match it; where {name} means that number, use {world} instead")
            ctx.manual(why, cites=lines, quoted=_QUOTED_LINES)
        if shim or _already_none_or_one(arg.value):
            return node
        text = code(arg.value)
        if not isinstance(arg.value, _ATOMS):
            text = f"({text})"
        ctx.change(f"xmp.spawn: nprocs={code(arg.value)} → one device when it is 1, else every device")
        return node.with_changes(
            args=[*node.args[:index], arg.with_changes(value=cst.parse_expression(f"1 if {text} == 1 else None")),
                  *node.args[index + 1:]]
        )


# Builtins that look at a function without calling it or handing it on.
_LOOKING = frozenset({"help", "callable", "print", "repr", "str", "id", "type", "isinstance", "hasattr", "getattr",
                      "dir", "vars"})


def _only_looked_at(ctx) -> bool:
    """``xmp.spawn.__doc__``, ``help(xmp.spawn)``: a reference no one will call."""
    parent, grandparent = ctx.parent(), ctx.parent(2)
    return isinstance(parent, cst.Attribute) or (
        isinstance(parent, cst.Arg) and isinstance(grandparent, cst.Call)
        and isinstance(grandparent.func, cst.Name) and grandparent.func.value in _LOOKING)


def _read_as_count(site: spawn_site.Site | None) -> tuple[str, list[str], list[int]]:
    """The count given to the spawn as its number of processes, the places that read it too,
    as if it were one (code sized by it, a file per replica), and their lines. For a name:
    the spawn's other arguments (the spawned function gets it, in args= or in the tuple a
    name given as args= is bound to); anywhere in the file for a module-level constant
    (``NUM_CORES = 8``), else only after the spawn in the code that binds it (a library
    reads its parameter or flag before it, for every launcher it supports). For a flag
    (``flags.num_cores``, ``FLAGS['num_cores']``): anywhere else in the file that reads the
    same attribute or key, whatever holds it (the spawned function names its own ``flags``)."""
    nprocs = count = site and site.argument("nprocs", NPROCS_POSITION)
    if isinstance(nprocs, ast.IfExp) and isinstance(nprocs.test, ast.Compare) and (
            ast.unparse(nprocs) == f"1 if {ast.unparse(nprocs.test.left)} == 1 else None"):  # as this rule writes it
        count = nprocs.test.left
    flag = _flag(count)
    if flag:
        reads = [node for node in ast.walk(site.scopes[-1]) if _flag(node) == flag and isinstance(node.ctx, ast.Load)]
        lines = _lines_beyond(site, reads)
        if lines:
            return ast.unparse(count), [f"read elsewhere in this file (as {flag})"], lines
        return ast.unparse(count), _handed_elsewhere(site, count), []
    if not isinstance(count, ast.Name):
        return "", [], []
    places = []
    others = [arg for arg in (*site.call.args, *(keyword.value for keyword in site.call.keywords)) if arg is not nprocs]
    handed = [*others, *_elements(site.argument("args", 1), site)]
    if spawn_site.reads((node for arg in handed for node in ast.walk(arg)), count.id):
        places.append("passed to the spawned function (args=)")
    scope = site.binding_scope(count.id)
    if scope is None:
        return count.id, places, []
    if scope is site.scopes[-1] and any(isinstance(value, ast.Constant) and type(value.value) is int
                                        for value in spawn_site.bindings(scope)[count.id]):
        where, reads = "used elsewhere in this file", spawn_site.reads(ast.walk(scope), count.id)
    elif scope is site.scopes[0]:
        where, reads = "used after this call", spawn_site.reads(spawn_site.nodes_of(site.after), count.id)
    else:
        return count.id, places, []
    lines = _lines_beyond(site, reads)
    return count.id, places + [where] * bool(lines), lines


def _handed_elsewhere(site: spawn_site.Site, count: ast.expr) -> list[str]:
    """Where the flag may be read when the spawned function is one that this file does not
    define: the other module may read the flag as the world size, and this file cannot tell.
    Handed to it (in ``flags`` of ``flags.num_cores``), or not: then that module has a copy
    of its own (it parses the command line again, or imports the flags)."""
    holder = count.value
    fn = site.argument("fn", 0)
    if not isinstance(holder, ast.Name) or fn is None or not isinstance(fn, (ast.Name, ast.Attribute)):
        return []
    root = fn
    while isinstance(root, ast.Attribute):
        root = root.value
    if not isinstance(root, ast.Name) or root.id not in spawn_site.imported(site.scopes[-1]):
        return []  # not imported from another module (defined here: its reads were looked for)
    handed = [*_elements(site.argument("args", 1), site)]
    if spawn_site.reads((node for arg in handed for node in ast.walk(arg)), holder.id):
        return [f"handed (in {holder.id}) to {ast.unparse(fn)}, which another module defines and may read "
                f"{_flag(count)}"]
    return [f"given to {ast.unparse(fn)}'s processes, which another module defines and may read its own copy of "
            f"{_flag(count)} (parsing the command line again, or importing {holder.id})"]


def _flag(node: ast.AST | None) -> str | None:
    """``.num_cores`` for ``flags.num_cores``, ``['num_cores']`` for ``FLAGS['num_cores']``:
    how a flag holding the process count is read; None for anything else."""
    if isinstance(node, ast.Attribute):
        return f".{node.attr}"
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return f"[{node.slice.value!r}]"
    return None


def _lines_beyond(site: spawn_site.Site, reads: list[ast.AST]) -> list[int]:
    """The lines of ``reads`` outside the spawn call."""
    return sorted({read.lineno for read in reads} - set(range(site.call.lineno, site.call.end_lineno + 1)))


# The uses of a count a message cites with their text, to say which it means (the others by number).
_QUOTED_LINES = 3


@register
class JoinDaemon(PythonRule):
    id = "spawn-join-daemon"
    summary = "xmp.spawn(join=False / daemon=True): ignored under PJRT (spawn blocks); report"
    names = frozenset({SPAWN})
    examples = (
        Example(
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "context = xmp.spawn(_mp_fn, join=False)\ncontext.join()\n",
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "# TODO(xrt2pjrt): join=False is ignored under PJRT: xmp.spawn returns when every process "
            "has ended, and returns None [spawn-join-daemon]\ncontext = xmp.spawn(_mp_fn, join=False)\ncontext.join()\n",
            manual=("join=False is ignored",),
        ),
    )

    def call(self, ctx, node, name):
        for param, position, default in (("join", 3, True), ("daemon", 4, False)):
            hit = argument(node, param, position)
            if hit is not None and literal(hit[1].value) != default:
                ctx.manual(f"{param}={code(hit[1].value)} is ignored under PJRT: xmp.spawn returns when "
                           "every process has ended, and returns None")
        return node


_LOCKED = "which holds a lock"  # pickle refuses a lock: 'Lock objects should only be shared ... through inheritance'
# What multiprocessing makes that holds a lock ('... objects should only be shared between
# processes through inheritance'), as module functions and as methods of a context.
_MP_LOCKED = ("Lock", "RLock", "Semaphore", "BoundedSemaphore", "Condition", "Event", "Barrier", "Queue", "SimpleQueue",
              "JoinableQueue", "Value", "Array")
_MP_MODULES = ("multiprocessing", "torch.multiprocessing")
_CONTEXTS = frozenset(f"{module}.get_context" for module in _MP_MODULES)
_LOCK_HOLDERS = {
    "torch_xla.distributed.xla_multiprocessing.MpModelWrapper": f"an xmp.MpModelWrapper, {_LOCKED}",
    "torch_xla.distributed.xla_multiprocessing.MpSerialExecutor": f"an xmp.MpSerialExecutor, {_LOCKED}",
    **{f"{module}.{name}": f"a {module}.{name}, {_LOCKED}" for module in _MP_MODULES for name in _MP_LOCKED},
    **{f"threading.{name}": f"a threading.{name}, {_LOCKED}" for name in ("Lock", "RLock", "Condition", "Event")},
}


def _pickled(refused: str, shim: bool = False, launch: bool = False) -> str:
    advice = "define it at module level"
    if _LOCKED in refused:  # a forked replica inherits the module's globals, locks included
        advice = "define functions at module level, and let the spawned function read a lock from a module global"
    if shim:  # xrt2pjrt/shim/spawn_targets.py: under fork the shim hands them over unpickled
        return (f"the shim's xmp.spawn pickles fn and args for each process unless start_method='fork', as XRT's did, "
                f"and pickle refuses {refused}: {advice}, or spawn with start_method='fork'")
    if launch:
        return (f"torch_xla.launch pickles fn and args for each process (it calls xmp.spawn), even with "
                f"start_method='fork', and pickle refuses {refused}: {advice}")
    return (f"torch_xla 2.x's xmp.spawn pickles fn and args for each process, even with start_method='fork' (XRT's "
            f"forked them unpickled), and pickle refuses {refused}: {advice}")


@register
class Unpicklable(PythonRule):
    id = "spawn-unpicklable"
    summary = ("xmp.spawn or torch_xla.launch given a nested function, a lambda, an instance of a nested class, a lock "
               "or an xmp.MpModelWrapper (or a partial of one), as fn or in args (a tuple, or a name bound to one): "
               "torch_xla 2.x pickles them even under fork ('Can't pickle local object'), the shim unless under "
               "fork; report")
    names = frozenset({SPAWN, SHIM_SPAWN, LAUNCH})
    examples = (
        Example(
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "def train_all(flags):\n    def _mp_fn(index):\n        print(index, flags)\n\n"
            "    xmp.spawn(_mp_fn, start_method='fork')\n",
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "def train_all(flags):\n    def _mp_fn(index):\n        print(index, flags)\n\n"
            "    # TODO(xrt2pjrt): "
            f"{_pickled('fn (`_mp_fn`, a function defined in train_all)')} [spawn-unpicklable]\n"
            "    xmp.spawn(_mp_fn, start_method='fork')\n",
            manual=("refuses fn (`_mp_fn`, a function defined in train_all)",),
        ),
        Example(
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "xmp.spawn(_mp_fn, args=(lambda r: r * 10,), start_method='fork')\n",
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            f"# TODO(xrt2pjrt): {_pickled('args[0] (a lambda)')} [spawn-unpicklable]\n"
            "xmp.spawn(_mp_fn, args=(lambda r: r * 10,), start_method='fork')\n",
            manual=("refuses args[0] (a lambda)",),
        ),
        Example(  # torch_xla.launch calls xmp.spawn; an instance pickles by its class's name
            "import torch_xla\n\ndef main():\n    class Cfg:\n        lr = 0.1\n\n"
            "    args = (Cfg(),)\n    torch_xla.launch(_mp_fn, args=args)\n",
            "import torch_xla\n\ndef main():\n    class Cfg:\n        lr = 0.1\n\n    args = (Cfg(),)\n"
            f"    # TODO(xrt2pjrt): {_pickled('args[0] (an instance of `Cfg`, a class defined in main)', launch=True)} "
            "[spawn-unpicklable]\n    torch_xla.launch(_mp_fn, args=args)\n",
            manual=("refuses args[0] (an instance of `Cfg`, a class defined in main)",),
        ),
        Example(  # the shim's spawn forks them over unpickled, as XRT's did
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "xmp.spawn(_mp_fn, args=(lambda r: r * 10,), start_method='fork')\n",
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "xmp.spawn(_mp_fn, args=(lambda r: r * 10,), start_method='fork')\n",
            options={"target": "shim"},
        ),
        Example(  # one process: torch_xla calls fn in this one, unpickled
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "xmp.spawn(_mp_fn, args=(lambda r: r * 10,), nprocs=1)\n",
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "xmp.spawn(_mp_fn, args=(lambda r: r * 10,), nprocs=1)\n",
        ),
    )

    def call(self, ctx, node, name):
        if _in_one_process(ctx.original, name):
            return node
        # torch_xla.launch is torch_xla's own spawn under either target: the shim does not replace it
        shim = name != LAUNCH and (ctx.options.target == "shim" or name == SHIM_SPAWN)
        if shim and (start := argument(ctx.original, "start_method", START_METHOD_POSITION)) and (
                literal(start[1].value) == "fork"):
            return node
        site = spawn_site.find(ctx.tree, ctx.line, code(ctx.original.func))
        if site is None:
            return node
        bound = spawn_site.imported(ctx.tree)
        refused = []
        fn = site.argument("fn", 0)
        if fn is not None and (what := _refused(fn, site, bound, set())):
            refused.append(f"fn ({what})")
        for index, value in enumerate(_elements(site.argument("args", 1), site)):
            if what := _refused(value, site, bound, set()):
                refused.append(f"args[{index}] ({what})")
        if refused:
            ctx.manual(_pickled(" and ".join(refused), shim, name == LAUNCH))
        return node


def _in_one_process(node: cst.Call, name: str) -> bool:
    """True when the spawn calls fn in this process, unpickled: xmp.spawn(nprocs=1),
    torch_xla.launch(debug_single_process=True)."""
    if name == LAUNCH:
        hit, one = argument(node, "debug_single_process", SINGLE_PROCESS_POSITION), True
    else:
        hit, one = _nprocs(node), 1
    return hit is not None and literal(hit[1].value) == one


def _elements(args: ast.expr | None, site: spawn_site.Site) -> list[ast.expr]:
    """The values ``args`` hands to the spawned function, as far as this file tells: those
    of a tuple or list, or of the one tuple or list a name is bound to (``a = (cfg,)``)."""
    if isinstance(args, ast.Name) and (scope := site.binding_scope(args.id)) is not None:
        values = spawn_site.bindings(scope)[args.id]
        args = values[0] if len(values) == 1 else None
    return args.elts if isinstance(args, (ast.Tuple, ast.List)) else []


def _local_class(func: ast.expr, site: spawn_site.Site) -> str | None:
    """``Cfg``'s description when ``func`` names a class defined in a function: pickle finds
    an instance's class by its name, which is not there ('Can't pickle local object'),
    unless the class says how it pickles (``__reduce__``)."""
    scope = isinstance(func, ast.Name) and site.binding_scope(func.id)
    if not scope or isinstance(scope, ast.Module):
        return None
    classes = spawn_site.bindings(scope)[func.id]
    if not all(isinstance(cls, ast.ClassDef) and not any(
            isinstance(item, ast.FunctionDef) and item.name in ("__reduce__", "__reduce_ex__") for item in cls.body)
               for cls in classes):
        return None
    return f"`{func.id}`, a class defined in {scope.name}"


def _refused(value: ast.expr, site: spawn_site.Site, bound: dict[str, str], seen: set[str]) -> str | None:
    """What ``value``, given to the spawn, is when pickle refuses it (a function defined in
    another one, a lambda, an instance of a class defined in one, what holds a lock); None
    when it pickles or this file cannot tell (a parameter, an import, another call's result)."""
    if isinstance(value, ast.Lambda):
        return "a lambda"
    if isinstance(value, ast.Call) and (cls := _local_class(value.func, site)):
        return f"an instance of {cls}"
    if isinstance(value, ast.Call) and (what := _lock_holder(value, site, bound)):
        return what
    if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == "self":
        return _method_of_a_lock_holder(value.attr, site, bound)
    if isinstance(value, ast.Call) and spawn_site.resolved(value.func, bound) == "functools.partial":
        parts = (*value.args, *(keyword.value for keyword in value.keywords))
        inner = next((what for part in parts if (what := _refused(part, site, bound, seen))), None)
        return inner and f"a functools.partial of {inner}"
    if not isinstance(value, ast.Name) or value.id in seen:
        return None
    scope = site.binding_scope(value.id)
    if scope is None:
        return None
    found = []
    for binding in spawn_site.bindings(scope)[value.id]:
        if isinstance(binding, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if isinstance(scope, ast.Module):
                return None  # pickled by its name
            found.append(f"a {'class' if isinstance(binding, ast.ClassDef) else 'function'} defined in {scope.name}")
        else:
            found.append(binding and _refused(binding, site, bound, seen | {value.id}))
    return f"`{value.id}`, {found[0]}" if all(found) else None


def _lock_holder(call: ast.Call, site: spawn_site.Site, bound: dict[str, str]) -> str | None:
    """What ``call`` makes, when it holds a lock: ``multiprocessing.Lock()``, and a
    context's ``ctx.SimpleQueue()`` (Lightning's launchers: ``get_context(method).SimpleQueue()``)."""
    if (name := spawn_site.resolved(call.func, bound)) in _LOCK_HOLDERS:
        return _LOCK_HOLDERS[name]
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in _MP_LOCKED and _is_context(func.value, site, bound):
        return f"a multiprocessing context's {func.attr}, {_LOCKED}"
    return None


def _is_context(node: ast.expr, site: spawn_site.Site, bound: dict[str, str]) -> bool:
    """``multiprocessing.get_context(...)``, or a name bound only to such calls."""
    if isinstance(node, ast.Call):
        return spawn_site.resolved(node.func, bound) in _CONTEXTS
    if not isinstance(node, ast.Name) or (scope := site.binding_scope(node.id)) is None:
        return False
    values = spawn_site.bindings(scope)[node.id]
    return bool(values) and all(isinstance(v, ast.Call) and spawn_site.resolved(v.func, bound) in _CONTEXTS for v in values)


# A class that says what of its instance pickle takes (it may leave its locks out).
_PICKLED_BY_ITSELF = frozenset({"__reduce__", "__reduce_ex__", "__getstate__"})


def _method_of_a_lock_holder(method: str, site: spawn_site.Site, bound: dict[str, str]) -> str | None:
    """``self.runner`` given to the spawn from a method of a class whose instances hold a
    lock (``self.lock = mp.Lock()`` in a method): pickling a bound method pickles its
    instance (hivemind's TPUManager). None when the class says how it pickles."""
    function = site.scopes[0]
    cls = next((node for node in ast.walk(site.scopes[-1]) if isinstance(node, ast.ClassDef) and function in node.body),
               None)
    if cls is None or any(isinstance(item, ast.FunctionDef) and item.name in _PICKLED_BY_ITSELF for item in cls.body):
        return None
    if not any(isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == method for item in cls.body):
        return None  # an attribute (self.config): what it holds, this file does not tell
    for node in ast.walk(cls):
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and (what := _lock_holder(node.value, site, bound))):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                    return (f"`self.{method}`, a method: pickle takes its instance along, whose `self.{target.attr}` "
                            f"is {what}")
    return None


def _started(spawn: str = "xmp.spawn") -> str:
    return (f"this file starts the XLA runtime at module level, in the launching process, before {spawn}, which "
            "then raises 'Runtime is already initialized' (torch_xla 2.4+): move that call into the spawned function")

# APIs that start the XLA runtime in the calling process.
_RUNTIME_STARTERS = frozenset({
    "torch_xla.core.xla_model.xla_device", "torch_xla.device", "torch_xla.devices",
    "torch_xla.core.xla_model.get_xla_supported_devices", "torch_xla.core.xla_model.xrt_world_size",
    "torch_xla.core.xla_model.get_ordinal", "torch_xla.core.xla_model.get_local_ordinal",
    "torch_xla.runtime.world_size", "torch_xla.runtime.global_ordinal", "torch_xla.runtime.local_ordinal",
    "torch_xla.runtime.addressable_device_count", "torch_xla.runtime.global_device_count",
    "torch_xla.runtime.process_index", "torch_xla.runtime.process_count",
    # a logger asking for the rank, a seeding helper, a memory probe (under XRT they read
    # variables or an idle server; checked on CPU: each starts the runtime)
    "torch_xla.core.xla_model.is_master_ordinal", "torch_xla.core.xla_model.master_print",
    "torch_xla.core.xla_model.set_rng_state", "torch_xla.core.xla_model.get_rng_state",
    "torch_xla.core.xla_model.wait_device_ops", "torch_xla.core.xla_model.xla_device_hw",
    "torch_xla.core.xla_model.get_memory_info", "torch_xla.core.xla_model.mark_step", "torch_xla.sync",
    "torch_xla.debug.metrics.metrics_report",  # (checked on CPU: the spawn then raised)
})


def _beyond(spawn: str = "xmp.spawn") -> str:
    return (f"this file starts the XLA runtime in code {spawn}'s function does not reach; if the launching process "
            f"runs any of it before this call (a library's set-up, a logger asking for the rank), {spawn} raises "
            "'Runtime is already initialized' (torch_xla 2.4+): keep those calls out of the launching process")


def _launched(launcher: str) -> str:
    return (f"this call starts the XLA runtime in the launching process, before {launcher} starts the replicas: "
            "torch_xla 2.4+ then raises 'Runtime is already initialized' (XRT's did not start there); move it into "
            "the function the replicas run")


_EXAMPLE_TRAINER = "Lightning's `pl.Trainer(tpu_cores=8)`"


@register
class RuntimeBeforeSpawn(PythonRule):
    id = "spawn-runtime-before"
    summary = ("XLA runtime touched in a file that calls xmp.spawn or torch_xla.launch (of more than one process), on "
               "import or in code the spawned function does not reach (RuntimeError from 2.4 if the launching process "
               "runs it first), report once; or on import "
               "before a launch that spawns for the file (Lightning's TPU Trainer, notebook_launcher, launch(fn))")
    names = _RUNTIME_STARTERS | {SPAWN, LAUNCH}
    examples = (
        Example(
            "import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "DEVICE = xm.xla_device()\n\nif __name__ == '__main__':\n    xmp.spawn(_mp_fn)\n",
            "import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "DEVICE = xm.xla_device()\n\nif __name__ == '__main__':\n"
            f"    # TODO(xrt2pjrt): {_started()} [spawn-runtime-before]\n    xmp.spawn(_mp_fn)\n",
            manual=("before xmp.spawn, which then raises",),
        ),
        Example(  # a class body and a function's default values run on import too
            "import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "class Cfg:\n    world = xm.xrt_world_size()\n\ndef log(msg, rank=xm.get_ordinal()):\n    print(rank, msg)\n\n"
            "if __name__ == '__main__':\n    xmp.spawn(_mp_fn)\n",
            "import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "class Cfg:\n    world = xm.xrt_world_size()\n\ndef log(msg, rank=xm.get_ordinal()):\n    print(rank, msg)\n\n"
            f"if __name__ == '__main__':\n    # TODO(xrt2pjrt): {_started()} [spawn-runtime-before]\n    xmp.spawn(_mp_fn)\n",
            manual=("(line 5, 7)",),
        ),
        Example(  # dinhanhx/VisualRoBERTa: no spawn in the file, Lightning's Trainer spawns after the sampler
            "import pytorch_lightning as pl\nimport torch_xla.core.xla_model as xm\n\nif __name__ == '__main__':\n"
            "    sampler = DistributedSampler(data, num_replicas=xm.xrt_world_size())\n"
            "    pl.Trainer(tpu_cores=8).fit(model, DataLoader(data, sampler=sampler))\n",
            "import pytorch_lightning as pl\nimport torch_xla.core.xla_model as xm\n\nif __name__ == '__main__':\n"
            f"    # TODO(xrt2pjrt): {_launched(_EXAMPLE_TRAINER)} [spawn-runtime-before]\n"
            "    sampler = DistributedSampler(data, num_replicas=xm.xrt_world_size())\n"
            "    pl.Trainer(tpu_cores=8).fit(model, DataLoader(data, sampler=sampler))\n",
            manual=(f"before {_EXAMPLE_TRAINER} starts the replicas",),
        ),
        Example(  # the spawned function and what it calls: the workers' code
            "import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "def _device():\n    return xm.xla_device()\n\ndef _mp_fn(index):\n    device = _device()\n\n"
            "xmp.spawn(_mp_fn)\n",
            "import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "def _device():\n    return xm.xla_device()\n\ndef _mp_fn(index):\n    device = _device()\n\n"
            "xmp.spawn(_mp_fn)\n",
        ),
        Example(  # pytorch-ignite 0.4.8: the launcher's own class asks for the rank in the launching process
            "import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "class XlaModel:\n    def get_rank(self):\n        return xm.get_ordinal()\n\n"
            "    @staticmethod\n    def _worker(index, fn):\n        fn(index)\n\n"
            "    @staticmethod\n    def spawn(fn):\n        xmp.spawn(XlaModel._worker, args=(fn,))\n",
            "import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "class XlaModel:\n    def get_rank(self):\n        return xm.get_ordinal()\n\n"
            "    @staticmethod\n    def _worker(index, fn):\n        fn(index)\n\n"
            "    @staticmethod\n    def spawn(fn):\n"
            f"        # TODO(xrt2pjrt): {_beyond()} [spawn-runtime-before]\n"
            "        xmp.spawn(XlaModel._worker, args=(fn,))\n",
            manual=("(in get_rank)",),
        ),
    )

    def __init__(self):
        self.started_at: list[int] = []  # lines run on import that start the runtime
        self.reported = False  # the first spawn after them raises: the later ones never run
        self.launcher: tuple[str, int] | None | bool = False  # _launcher's answer, once asked

    nodes = (cst.Call,)  # x.to('xla'), torch.zeros(2, device='xla'): the device by its name

    def leave(self, ctx, original, updated):
        if _names_the_xla_device(original):
            self._runtime_started(ctx)
        return updated

    def _runtime_started(self, ctx) -> None:
        if ctx.runs_on_import:
            self.started_at.append(ctx.line)
            if self.launcher is False:
                self.launcher = _launcher(ctx.tree)
            if self.launcher and ctx.line < self.launcher[1]:
                ctx.manual(_launched(self.launcher[0]))

    def call(self, ctx, node, name):
        if name not in (SPAWN, LAUNCH):
            self._runtime_started(ctx)
            return node
        if self.reported or _in_one_process(ctx.original, name):  # (one process: torch_xla checks nothing)
            return node
        spawn = "torch_xla.launch" if name == LAUNCH else "xmp.spawn"
        if self.started_at:
            ctx.manual(_started(spawn), cites=self.started_at)
            self.reported = True
            return node
        beyond = _started_beyond(ctx.tree, argument(ctx.original, "fn", 0))
        if beyond:
            ctx.manual(f"{_beyond(spawn)} (in {', '.join(beyond)})", comment=_beyond(spawn))
            self.reported = True
        return node


_LIGHTNING = ("pytorch_lightning", "lightning")
_LIGHTNING_RUNS = frozenset({"fit", "validate", "test", "predict"})
_NOTEBOOK_LAUNCHERS = frozenset({"accelerate.notebook_launcher", "accelerate.launchers.notebook_launcher"})
# What a replica asks for (a main() run in one process asks for its device, not these).
_REPLICA_IDENTITY = frozenset(starter for starter in _RUNTIME_STARTERS if starter.endswith(("ordinal", "world_size")))
# Calls that run the function they are given in this process (absl's app.run(main)).
_IN_PROCESS = frozenset({"absl.app.run", "fire.Fire", "typer.run", "atexit.register"})


# 'xla' or 'xla:0' (what torch takes for the XLA device; checked on CPU: a tensor moved there
# on import made the spawn raise 'Runtime is already initialized')
_XLA_DEVICE = re.compile(r"xla(:\d+)?")


def _names_the_xla_device(call: cst.Call) -> bool:
    """``x.to('xla')``, ``torch.zeros(2, device='xla')``: a call that puts data on the XLA
    device by its name, which starts the runtime."""
    def named(arg: cst.Arg) -> bool:
        value = literal(arg.value)
        return isinstance(value, str) and bool(_XLA_DEVICE.fullmatch(value))

    to = isinstance(call.func, cst.Attribute) and call.func.attr.value == "to"
    return any(named(arg) for arg in call.args
               if (arg.keyword is not None and arg.keyword.value == "device") or (to and arg.keyword is None))


def _launcher(tree: ast.Module | None) -> tuple[str, int] | None:
    """In a file that calls no xmp.spawn, the first call run on import that has the replicas
    spawned for it (what it is, its line): Lightning's Trainer(accelerator='tpu') (from the
    trainer's run), accelerate's notebook_launcher, or a call given one of the file's
    functions that uses the XLA runtime (a launcher of the project's own, r3's launch(fn)).
    A runtime call before it runs in the launching process; a spawn in the file is judged at
    the spawn."""
    if tree is None:
        return None
    if _spawn_calls(tree):
        return None
    bound = spawn_site.imported(tree)
    replicas = {name for name, values in spawn_site.bindings(tree).items()
                if any(isinstance(value, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                    isinstance(call, ast.Call) and spawn_site.resolved(call.func, bound) in _REPLICA_IDENTITY
                    for call in ast.walk(value)) for value in values)}
    lightning = any(full.startswith(_LIGHTNING) for full in bound.values())
    calls = sorted((node for node in spawn_site.nodes_of(tree.body) if isinstance(node, ast.Call)),
                   key=lambda call: (call.lineno, call.col_offset))
    for index, call in enumerate(calls):
        if spawn_site.resolved(call.func, bound) in _NOTEBOOK_LAUNCHERS:
            return "accelerate's notebook_launcher", call.lineno
        given = [arg.id for arg in (*call.args, *(keyword.value for keyword in call.keywords))
                 if isinstance(arg, ast.Name) and arg.id in replicas]
        callee = spawn_site.resolved(call.func, bound) or ""
        if given and not callee.startswith("torch_xla") and callee not in _IN_PROCESS and not (
                isinstance(call.func, ast.Name) and call.func.id not in bound and hasattr(builtins, call.func.id)):
            return f"`{ast.unparse(call.func)}(...)`, given {given[0]}, a function of this file that uses it,", call.lineno
        if lightning and (keyword := _on_tpu(call)):
            run = next((later for later in calls[index:] if isinstance(later.func, ast.Attribute)
                        and later.func.attr in _LIGHTNING_RUNS), call)
            return f"Lightning's `{ast.unparse(call.func)}({keyword})`", run.lineno
    return None


def _on_tpu(call: ast.Call) -> str | None:
    """The keyword by which a Lightning Trainer (or Fabric) spawns a replica per TPU device:
    tpu_cores=8 (Lightning < 2), a TPU strategy ('tpu_spawn', 'xla'), accelerator='tpu'
    unless on one device."""
    given = {keyword.arg: keyword.value.value for keyword in call.keywords if isinstance(keyword.value, ast.Constant)}
    cores, strategy = given.get("tpu_cores"), given.get("strategy")
    if isinstance(cores, int) and cores > 1:
        return f"tpu_cores={cores}"
    if isinstance(strategy, str) and ("tpu" in strategy or "xla" in strategy):
        return f"strategy={strategy!r}"
    if given.get("accelerator") == "tpu" and given.get("devices") != 1:
        return "accelerator='tpu'"
    return None


def _reached(tree: ast.Module, spawned: str | None) -> set[str]:
    """The names of the file's functions that the spawned one (``spawned``, the dotted name
    given to the spawn) reaches by name, as far as this file tells, itself included. A
    function it hands to a call by name (``DataLoader(worker_init_fn=init)``,
    ``threading.Thread(target=poll)``) runs on the replica's side too, not in the launching
    process."""
    if not spawned:
        return set()
    calls = _call_graph(tree)
    reached, pending = set(), [spawned.rpartition(".")[2]]
    while pending:
        name = pending.pop()
        if name not in reached:
            reached.add(name)
            pending += calls.get(name, ())
    return reached


@functools.lru_cache(maxsize=1)
def _call_graph(tree: ast.Module) -> dict[str, set[str]]:
    """Function name -> the names it calls, or hands to a call (once per file: each spawn
    of the file asks)."""
    calls: dict[str, set[str]] = {}
    for node in spawn_site.functions(tree):
        calls.setdefault(node.name, set()).update(
            part.id if isinstance(part, ast.Name) else part.attr
            for call in ast.walk(node) if isinstance(call, ast.Call)
            for part in (call.func, *call.args, *(keyword.value for keyword in call.keywords))
            if isinstance(part, (ast.Name, ast.Attribute)))
    return calls


@functools.lru_cache(maxsize=1)
def _spawn_calls(tree: ast.Module) -> list[ast.Call]:
    """The file's calls of xmp.spawn (torch_xla's or the shim's) and torch_xla.launch."""
    bound = spawn_site.imported(tree)
    return [node for node in ast.walk(tree)
            if isinstance(node, ast.Call) and spawn_site.resolved(node.func, bound) in (SPAWN, SHIM_SPAWN, LAUNCH)]


def _started_beyond(tree: ast.Module | None, fn: tuple[int, cst.Arg] | None) -> list[str]:
    """The functions that start the runtime and that the spawned one does not reach
    (:func:`_reached`; names: a second pass, where lines have moved, says the same)."""
    spawned = fn and imports.dotted(fn[1].value)
    if tree is None or not spawned:
        return []
    reached = _reached(tree, spawned) | _spawned_code(tree)  # another spawn's replicas run it: not the launcher
    bound = spawn_site.imported(tree)
    found: list[str] = []

    def visit(node: ast.AST, function: str | None) -> None:
        if isinstance(node, ast.Call) and function is not None and function not in reached:
            if spawn_site.resolved(node.func, bound) in _RUNTIME_STARTERS and function not in found:
                found.append(function)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            # its decorators and default values run where it is defined, its body when it is called
            for part in (*node.decorator_list, *node.args.defaults, *filter(None, node.args.kw_defaults)):
                visit(part, function)
            for statement in node.body:
                visit(statement, node.name)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(tree, None)
    return found


_IN_WORKER = ("this code runs in each DataLoader worker (it is a worker_init_fn), a process of its own: torch_xla's spawn starts "
              "its replicas with the spawn method, so their workers start so too, and torch_xla there is not the "
              "replica's (on a TPU it starts a runtime of its own; on CPU it answers as a world of one); XRT's "
              "answer came from the environment the worker inherited. Ask for the ordinal or world size in the replica and hand the answer over: "
              "worker_init_fn=functools.partial(fn, rank=xr.global_ordinal())")


@register
class DataLoaderWorker(PythonRule):
    id = "spawn-dataloader-worker"
    summary = ("an ordinal or world size asked for in a DataLoader's worker_init_fn (a function, a lambda, a partial): "
               "the worker is a process of its own where torch_xla is not the replica's; report")
    names = _REPLICA_IDENTITY
    examples = (
        Example(  # the per-replica seed: every replica's workers seeded alike, each reading the same samples
            "import torch_xla.core.xla_model as xm\n\n"
            "def seed_worker(worker_id):\n    np.random.seed(1000 * xm.get_ordinal() + worker_id)\n\n"
            "def _mp_fn(index):\n    loader = DataLoader(data, num_workers=4, worker_init_fn=seed_worker)\n",
            "import torch_xla.core.xla_model as xm\n\n"
            "def seed_worker(worker_id):\n"
            f"    # TODO(xrt2pjrt): {_IN_WORKER} [spawn-dataloader-worker]\n"
            "    np.random.seed(1000 * xm.get_ordinal() + worker_id)\n\n"
            "def _mp_fn(index):\n    loader = DataLoader(data, num_workers=4, worker_init_fn=seed_worker)\n",
            manual=("runs in each DataLoader worker",),
        ),
        Example(  # asked in the replica, handed over: nothing to report
            "import functools\nimport torch_xla.runtime as xr\n\n"
            "def seed_worker(worker_id, rank):\n    np.random.seed(1000 * rank + worker_id)\n\n"
            "def _mp_fn(index):\n    init = functools.partial(seed_worker, rank=xr.global_ordinal())\n"
            "    loader = DataLoader(data, num_workers=4, worker_init_fn=init)\n",
            "import functools\nimport torch_xla.runtime as xr\n\n"
            "def seed_worker(worker_id, rank):\n    np.random.seed(1000 * rank + worker_id)\n\n"
            "def _mp_fn(index):\n    init = functools.partial(seed_worker, rank=xr.global_ordinal())\n"
            "    loader = DataLoader(data, num_workers=4, worker_init_fn=init)\n",
        ),
    )

    def call(self, ctx, node, name):
        if any(first <= ctx.line <= last for first, last in _worker_init_code(ctx.tree)):
            ctx.manual(_IN_WORKER)
        return node


@functools.lru_cache(maxsize=1)
def _worker_init_code(tree: ast.Module | None) -> tuple[tuple[int, int], ...]:
    """The lines (first, last) of the code that runs as some DataLoader's worker_init_fn: a
    lambda given as one, the body of a function of this file given as one, by name or in a
    functools.partial (its other arguments are computed where the partial is made)."""
    if tree is None:
        return ()
    given, spans = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "worker_init_fn":
            value = node.value
            if isinstance(value, ast.Call) and value.args and ast.unparse(value.func).endswith("partial"):
                value = value.args[0]
            if isinstance(value, ast.Lambda):
                spans.append((value.body.lineno, value.body.end_lineno))
            elif isinstance(value, (ast.Name, ast.Attribute)):
                given.add(value.id if isinstance(value, ast.Name) else value.attr)
    spans += [(node.body[0].lineno, node.end_lineno) for node in spawn_site.functions(tree) if node.name in given]
    return tuple(spans)


_IN_A_THREAD = ("torch_xla's spawn runs the spawned function in a thread of each replica process (a thread per "
                "device, even for one device), where signal.signal raises ValueError ('signal only works in main "
                "thread'); XRT ran it in the process's main thread. Install the handler at module level, outside "
                "`if __name__ == '__main__':`: each replica process runs that in its main thread when it loads the "
                "module")


@register
class SignalInReplica(PythonRule):
    id = "spawn-signal-handler"
    summary = ("signal.signal in a function xmp.spawn or torch_xla.launch runs, or in what it calls: torch_xla's spawn "
               "runs it in a thread, where signal.signal raises ValueError; report")
    names = frozenset({"signal.signal"})
    examples = (
        Example(  # a preemption handler set where XRT ran the replica's main thread
            "import signal\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "def _mp_fn(index):\n    signal.signal(signal.SIGTERM, save_and_exit)\n    train()\n\n"
            "xmp.spawn(_mp_fn)\n",
            "import signal\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "def _mp_fn(index):\n    # TODO(xrt2pjrt): " + _IN_A_THREAD + " [spawn-signal-handler]\n"
            "    signal.signal(signal.SIGTERM, save_and_exit)\n    train()\n\nxmp.spawn(_mp_fn)\n",
            manual=("signal only works in main thread",),
        ),
        Example(  # the launching process's own handler: its main thread
            "import signal\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "if __name__ == '__main__':\n    signal.signal(signal.SIGINT, stop)\n    xmp.spawn(_mp_fn)\n",
            "import signal\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "if __name__ == '__main__':\n    signal.signal(signal.SIGINT, stop)\n    xmp.spawn(_mp_fn)\n",
        ),
    )

    def call(self, ctx, node, name):
        if _in_replicas_code(ctx):
            ctx.manual(_IN_A_THREAD)
        return node


_EXIT_RAISED = ("torch_xla's spawn runs the spawned function in a thread of a pool worker process, and the pool hands "
                "SystemExit back to the launching process like any exception: xmp.spawn raises it there, so the code "
                "after the spawn does not run, and sys.exit(0) ends the launcher with status 0, silently; XRT ended "
                "only that replica's process. Return from the function instead")
_EXIT_BREAKS = ("torch_xla's spawn runs the spawned function in a pool worker process, and os._exit ends that worker "
                "under the pool: xmp.spawn raises BrokenProcessPool in the launching process, whatever the status; "
                "XRT ended only that replica's process. Return from the function instead")


@register
class ExitInReplica(PythonRule):
    id = "spawn-exit"
    summary = ("sys.exit / os._exit in a function xmp.spawn or torch_xla.launch runs, or in what it calls: torch_xla's "
               "spawn re-raises SystemExit in the launching process (which skips what follows the spawn; sys.exit(0) "
               "exits 0 silently), and os._exit breaks its pool; the shim's spawn ends only that replica on "
               "sys.exit, as XRT did; report")
    names = frozenset({"sys.exit", "os._exit"})
    nodes = (cst.Raise, cst.Call)  # raise SystemExit(0), and the builtins exit() / quit()
    examples = (
        Example(  # a replica that stops early: under XRT its own process ended, and the launcher went on
            "import sys\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "def _mp_fn(index):\n    if not train():\n        sys.exit(0)\n\n"
            "xmp.spawn(_mp_fn)\nupload_results()\n",
            "import sys\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "def _mp_fn(index):\n    if not train():\n        # TODO(xrt2pjrt): " + _EXIT_RAISED + " [spawn-exit]\n"
            "        sys.exit(0)\n\nxmp.spawn(_mp_fn)\nupload_results()\n",
            manual=("sys.exit(0) ends the launcher with status 0",),
        ),
        Example(  # the launcher's own exit
            "import sys\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "if __name__ == '__main__':\n    xmp.spawn(_mp_fn)\n    sys.exit(0)\n",
            "import sys\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "if __name__ == '__main__':\n    xmp.spawn(_mp_fn)\n    sys.exit(0)\n",
        ),
    )

    def call(self, ctx, node, name):
        self._report(ctx, raises=name == "sys.exit")
        return node

    def leave(self, ctx, original, updated):
        if isinstance(original, cst.Raise):
            exc = original.exc.func if isinstance(original.exc, cst.Call) else original.exc
            if isinstance(exc, cst.Name) and exc.value == "SystemExit":
                self._report(ctx, raises=True)
        elif (isinstance(original.func, cst.Name) and original.func.value in ("exit", "quit")
              and ctx.resolve(original.func) is None):
            self._report(ctx, raises=True)
        return updated

    @staticmethod
    def _report(ctx, raises: bool) -> None:
        if raises and ctx.options.target == "shim":
            return  # the shim's spawn: a finished replica, or its status as the spawn's error
        if _in_replicas_code(ctx):
            ctx.manual(_EXIT_RAISED if raises else _EXIT_BREAKS)


def _in_replicas_code(ctx) -> bool:
    """Whether the spot is in a function some spawn of the file runs in its replicas."""
    return ctx.tree is not None and bool(_in_function(ctx.tree, ctx.line) & _spawned_code(ctx.tree))


def _in_function(tree: ast.Module, line: int) -> set[str]:
    """The names of the functions whose body holds ``line``."""
    return {node.name for node in spawn_site.functions(tree) if node.body[0].lineno <= line <= node.end_lineno}


@functools.lru_cache(maxsize=1)
def _spawned_code(tree: ast.Module) -> frozenset[str]:
    """The functions of the file that some spawn of more than one process in it runs in its
    replicas (:func:`_reached`)."""
    reached: set[str] = set()
    for call in _spawn_calls(tree):
        site = spawn_site.Site(call, [tree], [])
        fn, nprocs = site.argument("fn", 0), site.argument("nprocs", NPROCS_POSITION)
        if fn is not None and not (isinstance(nprocs, ast.Constant) and nprocs.value == 1):
            reached |= _reached(tree, ast.unparse(fn))
    return frozenset(reached)
