"""torch_xla 2.x's spawn takes nprocs None (every device) or 1, and raises ValueError for any
other count. The fix is safe by XRT's own law: torch_xla 1.13's ``_pre_fork_setup`` raised
ValueError for any count but 1 or every device, so every program that ran under XRT gave one
of those two, and ``1 if EXPR == 1 else None`` spawns what it spawned, for every value of
EXPR. What the fix cannot keep is a count also read as the world size (a sampler sized by
the flag, a file per replica): under PJRT the number of processes is ``xr.world_size()``,
which need not match the flag on another TPU, so such reads stay an item, under the shim too
(its spawn takes nprocs, and runs every device). ``xmp.spawn`` handed on as a value
(``functools.partial``, an alias) and nprocs in ``**kwargs`` are reported: the count given
where it is called is not rewritten.

A count is reported as read on evidence only: the count itself handed to the spawned function
(args=), or a read that uses it as a number (not printed, made text for a command line,
compared with 1, or a queue's bound) in module-level code, in the function that spawns, in
the code the spawned function reaches in this file, or in what the launching process calls
after the spawn (a gather of a file per replica); not when it is handed as it is to a
function the file imports from code neither torch's, numpy's nor Python's, by position or by a keyword naming no count (a
project's helper scaling a learning rate by it under a flag the call leaves off). A count handed
to a spawned function of another module (or the caller's: a library's ``spawn(fn)``) is not
reported: the file shows no read, and the launchers read for this rule (DLRM's TPU runner,
transformers' and accelerate's xla_spawn.py) never read it there; nor a read in another device's
launcher.
"""

from __future__ import annotations

import ast
import sys

import libcst as cst

from xrt2pjrt.file_caches import per_file
from xrt2pjrt.python import spawn_site
from xrt2pjrt.python.rule import NOT_LITERAL, code, literal
from xrt2pjrt.python.spawn_graph import NPROCS_POSITION, SHIM_SPAWNS, SPAWN, elements, reached_from, spawned_code
from xrt2pjrt.python.spawn_graph import nprocs_argument
from xrt2pjrt.rules.spawn._nprocs import NprocsRule, QUOTED_LINES, lines_beyond
from xrt2pjrt.registry import Example, dedent


def _already_none_or_one(value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.IfExp):
        return _already_none_or_one(value.body) and _already_none_or_one(value.orelse)
    return literal(value) in (None, 1)


_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer)


class NprocsExpression(NprocsRule):
    id = "spawn-nprocs-expression"
    summary = "xmp.spawn(nprocs=EXPR) → nprocs=1 if EXPR == 1 else None; a count read as world size reported"
    names = frozenset({SPAWN, *SHIM_SPAWNS})
    targets = ("native", "shim")
    examples = (
        Example(
            dedent("""
                import torch_xla.distributed.xla_multiprocessing as xmp

                xmp.spawn(_mp_fn, args=(flags,), nprocs=flags.num_cores)
            """),
            dedent("""
                import torch_xla.distributed.xla_multiprocessing as xmp

                xmp.spawn(_mp_fn, args=(flags,), nprocs=1 if flags.num_cores == 1 else None)
            """),
        ),
        Example(  # the replicas size their sampler by the flag: on 4 processes they read half the data
            dedent("""
                import torch_xla.distributed.xla_multiprocessing as xmp

                def _mp_fn(index, flags):
                    sampler = DistributedSampler(data, num_replicas=flags['num_cores'])

                xmp.spawn(_mp_fn, args=(FLAGS,), nprocs=FLAGS['num_cores'])
            """),
            dedent("""
                import torch_xla.distributed.xla_multiprocessing as xmp

                def _mp_fn(index, flags):
                    sampler = DistributedSampler(data, num_replicas=flags['num_cores'])

                # TODO(xrt2pjrt): use xr.world_size() at its reads [spawn-nprocs-expression]
                xmp.spawn(_mp_fn, args=(FLAGS,), nprocs=1 if FLAGS['num_cores'] == 1 else None)
            """),
            manual=("read elsewhere in this file (as ['num_cores'])",),
        ),
        Example(  # fco-dv/ignite-playground: the flag goes to a parameter the function never reads
            dedent("""
                import torch_xla.core.xla_model as xm
                import torch_xla.distributed.xla_multiprocessing as xmp

                def _mp_fn(index, world_size):
                    print(xm.xrt_world_size())

                args = (flags.nprocs,)
                xmp.spawn(_mp_fn, args=args, nprocs=flags.nprocs)
            """),
            dedent("""
                import torch_xla.core.xla_model as xm
                import torch_xla.distributed.xla_multiprocessing as xmp

                def _mp_fn(index, world_size):
                    print(xm.xrt_world_size())

                args = (flags.nprocs,)
                xmp.spawn(_mp_fn, args=args, nprocs=1 if flags.nprocs == 1 else None)
            """),
        ),
        Example(
            dedent("""
                import torch_xla.distributed.xla_multiprocessing as xmp

                xmp.spawn(_mp_fn, **spawn_kwargs)
            """),
            dedent("""
                import torch_xla.distributed.xla_multiprocessing as xmp

                # TODO(xrt2pjrt): keep nprocs in **kwargs None or 1 [spawn-nprocs-expression]
                xmp.spawn(_mp_fn, **spawn_kwargs)
            """),
            manual=("**kwargs",),
        ),
    )

    def reference(self, ctx, node, name):
        # functools.partial(xmp.spawn, fn, nprocs=8), run = xmp.spawn: the call that gives
        # nprocs is not one of xmp.spawn, so nothing here rewrites it (the shim's takes any).
        if ctx.options.target == "native" and name == SPAWN and not _only_looked_at(ctx):
            ctx.decide(
                "pass nprocs=None or 1 at its calls",
                detail=f"{code(node)} is handed on as a value (to functools.partial, or a name), so the nprocs "
                "given where it is called is not rewritten: torch_xla 2.x's spawn raises ValueError for "
                "any but None or 1",
            )
        return node

    def call(self, ctx, node, name):
        # The shim's spawn takes any nprocs, so nothing is rewritten for it; but it runs every
        # device of the host too, which need not be the count either.
        shim = ctx.options.target == "shim" or name in SHIM_SPAWNS
        hit = nprocs_argument(node)
        if hit is None:
            if any(arg.star == "**" for arg in node.args) and not shim:
                ctx.decide(
                    "keep nprocs in **kwargs None or 1",
                    detail="spawn arguments come from **kwargs, where the nprocs they may hold is not rewritten: "
                    "torch_xla 2.x's spawn raises ValueError for any nprocs but None or 1",
                )
            return node
        index, arg = hit
        if literal(arg.value) is not NOT_LITERAL:
            return node
        # also in the form this rule writes, so that every run (--check too) reports it
        name, places, lines = _read_as_count(spawn_site.find(ctx.tree, ctx.line, code(ctx.original.func)))
        if places:
            world = "xm.xrt_world_size()" if shim else "xr.world_size()"
            why = (
                f"{name} is also {' and '.join(places)}, as if it were the number of processes: under PJRT that is "
                f"{world}, which need not match it"
            )
            ctx.decide(f"use {world} at its reads", cites=lines, quoted=QUOTED_LINES, detail=why)
        if shim or _already_none_or_one(arg.value):
            return node
        text = code(arg.value)
        if not isinstance(arg.value, _ATOMS):
            text = f"({text})"
        ctx.change(f"xmp.spawn: nprocs={code(arg.value)} → one device when it is 1, else every device")
        return node.with_changes(
            args=[
                *node.args[:index],
                arg.with_changes(value=cst.parse_expression(f"1 if {text} == 1 else None")),
                *node.args[index + 1 :],
            ]
        )


# Builtins that look at a function without calling it or handing it on.
_LOOKING = frozenset(
    {"help", "callable", "print", "repr", "str", "id", "type", "isinstance", "hasattr", "getattr", "dir", "vars"}
)


def _only_looked_at(ctx) -> bool:
    """``xmp.spawn.__doc__``, ``help(xmp.spawn)``: a reference no one will call."""
    parent, grandparent = ctx.parent(), ctx.parent(2)
    return isinstance(parent, cst.Attribute) or (
        isinstance(parent, cst.Arg)
        and isinstance(grandparent, cst.Call)
        and isinstance(grandparent.func, cst.Name)
        and grandparent.func.value in _LOOKING
    )


def _read_as_count(site: spawn_site.Site | None) -> tuple[str, list[str], list[int]]:
    """The count given to the spawn as its number of processes, the places that read it too,
    as if it were one (code sized by it, a file per replica), and their lines. For a name:
    the spawn's other arguments (the spawned function gets it, in args= or in the tuple a
    name given as args= is bound to); anywhere in the file for a module-level constant
    (``NUM_CORES = 8``), else only after the spawn in the code that binds it (a library
    reads its parameter or flag before it, for every launcher it supports). For a flag
    (``flags.num_cores``, ``FLAGS['num_cores']``): anywhere else in the file that reads the
    same attribute or key, whatever holds it (the spawned function names its own ``flags``).
    A read counts only on the replicas' path (:func:`_on_the_replicas_path`) and only as a
    count (:func:`_read_as_a_number`): a flag handed to a module this file does not define,
    printed, or passed on as text is no evidence."""
    nprocs = count = site and site.argument("nprocs", NPROCS_POSITION)
    if (
        isinstance(nprocs, ast.IfExp)
        and isinstance(nprocs.test, ast.Compare)
        and (ast.unparse(nprocs) == f"1 if {ast.unparse(nprocs.test.left)} == 1 else None")
    ):  # as this rule writes it
        count = nprocs.test.left
    flag = _flag(count)
    unread = _into_unread_parameters(site) if site else []
    if flag:
        reads = [node for node in _flags(site.scopes[-1]).get(flag, ()) if not any(node is u for u in unread)]
        lines = lines_beyond(site, _as_counts(site, reads))
        return ast.unparse(count), [f"read elsewhere in this file (as {flag})"] * bool(lines), lines
    if not isinstance(count, ast.Name):
        return "", [], []
    places = []
    others = [arg for arg in (*site.call.args, *(keyword.value for keyword in site.call.keywords)) if arg is not nprocs]
    handed = [
        *others,
        *(value for value in elements(site.argument("args", 1), site) if not any(value is u for u in unread)),
    ]
    if not _of_another_module(site) and spawn_site.reads(
        (node for arg in handed for node in spawn_site.walk(arg)), count.id
    ):
        places.append("passed to the spawned function (args=)")
    scope = site.binding_scope(count.id)
    if scope is None:
        return count.id, places, []
    if scope is site.scopes[-1] and any(
        isinstance(value, ast.Constant) and type(value.value) is int for value in spawn_site.bindings(scope)[count.id]
    ):
        where, reads = "used elsewhere in this file", spawn_site.reads(spawn_site.walk(scope), count.id)
    elif scope is site.scopes[0]:
        where, reads = "used after this call", spawn_site.reads(spawn_site.nodes_of(site.after), count.id)
    else:
        return count.id, places, []
    lines = lines_beyond(site, _as_counts(site, reads))
    return count.id, places + [where] * bool(lines), lines


@per_file()  # (asked at each spawn of the file)
def _flags(tree: ast.Module) -> dict[str, list[ast.expr]]:
    """The file's reads of flags (:func:`_flag`), by flag."""
    reads: dict[str, list[ast.expr]] = {}
    for node in spawn_site.of_type(tree, (ast.Attribute, ast.Subscript)):
        if (flag := _flag(node)) and isinstance(node.ctx, ast.Load):
            reads.setdefault(flag, []).append(node)
    return reads


def _as_counts(site: spawn_site.Site, reads: list[ast.expr]) -> list[ast.expr]:
    """The ``reads`` of the count that are evidence of its use as the number of processes."""
    tree = site.scopes[-1]
    parents = spawn_site.parents(tree)
    bound = spawn_site.imported(tree)
    return [
        read
        for read in reads
        if _on_the_replicas_path(site, tree, read)
        and _read_as_a_number(read, tree)
        and not _handed_to_unshown_code(read, parents, bound)
    ]


def _on_the_replicas_path(site: spawn_site.Site, tree: ast.Module, read: ast.expr) -> bool:
    """Whether ``read`` runs where the spawn's processes are counted: module-level code (the
    replicas share it), the function that spawns, the code the spawned function reaches in
    this file, or the code the launching process calls after the spawn (it gathers what
    each replica wrote). A launcher's other branches for other devices (accelerate's
    multi-GPU launcher reads its own process count) are not."""
    function = spawn_site.function_at(tree, read.lineno)
    if function is None or any(function is scope for scope in site.scopes[:-1]):
        return True
    spawned = site.argument("fn", 0)
    called_after = (
        spawn_site.called_name(node.func) for node in spawn_site.nodes_of(site.after) if isinstance(node, ast.Call)
    )
    return function.name in (reached_from(tree, ast.unparse(spawned)) if spawned is not None else set()).union(
        spawned_code(tree), *(reached_from(tree, name) for name in called_after)
    )


# Keywords that bound a buffer (queue.Queue, multiprocessing's Queue, collections.deque), and a
# DataLoader's count of loading processes: any number works there.
_ANY_NUMBER = frozenset({"maxsize", "maxlen", "num_workers"})


def _read_as_a_number(read: ast.expr, tree: ast.Module) -> bool:
    """Whether ``read`` uses the count as a number: not when it is printed, made text (a
    flag of the command line handed on, ``str(args.num_cores)``, an f-string), only
    compared with 1 (one process or several: the rewritten spawn keeps that meaning), only
    bounds a buffer (``mp.Queue(maxsize=nprocs * batch)``: any bound works, a wrong one only
    makes producers wait sooner or later), or only counts a DataLoader's loading processes
    (``num_workers=flags['num_cores']``)."""
    if spawn_site.made_text(read, tree):
        return False
    parents = spawn_site.parents(tree)
    node = read
    while (parent := parents.get(id(node))) is not None and not isinstance(parent, ast.stmt):
        if isinstance(parent, ast.keyword) and parent.arg in _ANY_NUMBER:
            return False
        if (
            isinstance(parent, ast.Compare)
            and len(parent.comparators) == 1
            and any(isinstance(side, ast.Constant) and side.value == 1 for side in (parent.left, *parent.comparators))
        ):
            return False
        node = parent
    return True


# Keywords that name a count of processes: a count handed to one is used as one, whoever takes it.
_COUNT_KEYWORDS = frozenset({"num_replicas", "world_size", "nprocs", "num_processes", "num_cores", "num_devices"})


def _handed_to_unshown_code(read: ast.expr, parents: dict[int, ast.AST], bound: dict[str, str]) -> bool:
    """Whether ``read`` is handed, as it is, to a function this file imports from code that is
    neither torch's, numpy's nor Python's (the project's other modules, a library): by position, or by a
    keyword that names no count. This file shows no read of it there (a helper that scales the
    learning rate by it only under a flag the call leaves off); ``DistributedSampler(data, n)``
    and ``range(n)`` are reads."""
    parent = parents.get(id(read))
    if isinstance(parent, ast.keyword):
        if parent.arg in _COUNT_KEYWORDS:
            return False
        parent = parents.get(id(parent))
    elif not (isinstance(parent, ast.Call) and any(read is arg for arg in parent.args)):
        return False
    called = spawn_site.resolved(parent.func, bound) if isinstance(parent, ast.Call) else None
    root = called.lstrip(".").split(".")[0] if called else None
    if root is None or root.startswith("torch") or root == "numpy":
        return False
    return called.startswith(".") or root not in sys.stdlib_module_names


def _into_unread_parameters(site: spawn_site.Site) -> list[ast.expr]:
    """The values the spawn's args= hands to parameters that the spawned function, defined
    in this file, never reads (``def _mp_fn(index, world_size, backend)`` printing
    xm.xrt_world_size() instead): reading the count only to hand it there is no use of it."""
    fn = site.argument("fn", 0)
    defined = spawn_site.defs_named(site.scopes[-1], fn.id) if isinstance(fn, ast.Name) else []
    if len(defined) != 1 or defined[0].args.vararg:
        return []
    parameters = [p.arg for p in (*defined[0].args.posonlyargs, *defined[0].args.args)][1:]  # after the index
    body = list(spawn_site.own_nodes(defined[0]))
    return [
        value
        for value, name in zip(elements(site.argument("args", 1), site), parameters)
        if not spawn_site.reads(body, name)
    ]


def _of_another_module(site: spawn_site.Site) -> bool:
    """Whether the spawned function is imported, or the caller's (a parameter of the function
    that spawns: a library's ``spawn(fn)``, handing fn the count it spawned): this file shows
    none of its reads, as for a flag handed to another module."""
    fn = site.argument("fn", 0)
    if not isinstance(fn, ast.Name):
        return False
    if fn.id in spawn_site.imported(site.scopes[-1]):
        return True
    scope = site.binding_scope(fn.id)
    return isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.id in {
        arg.arg for arg in (*scope.args.posonlyargs, *scope.args.args, *scope.args.kwonlyargs)
    }


def _flag(node: ast.AST | None) -> str | None:
    """``.num_cores`` for ``flags.num_cores``, ``['num_cores']`` for ``FLAGS['num_cores']``:
    how a flag holding the process count is read; None for anything else."""
    if isinstance(node, ast.Attribute):
        return f".{node.attr}"
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return f"[{node.slice.value!r}]"
    return None
