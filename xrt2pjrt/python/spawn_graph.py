"""The spawn call graph: which functions of a file some ``xmp.spawn`` (or ``torch_xla.launch``)
of more than one process runs in its replicas, and what they call (the spawn rules ask it
whether a spot runs in the replicas, or before them)."""

from __future__ import annotations

import ast

import libcst as cst

from xrt2pjrt.file_caches import per_file
from xrt2pjrt.python import spawn_site
from xrt2pjrt.python.rule import argument, literal
from xrt2pjrt.shim_packages import CARRIED, INSTALLED

SPAWN = "torch_xla.distributed.xla_multiprocessing.spawn"
# the shim's spawn: the carried copy's, or the installed package's (code migrated before the copy)
SHIM_SPAWNS = frozenset(f"{shim}.xla_multiprocessing.spawn" for shim in (CARRIED, INSTALLED))
NPROCS_POSITION, START_METHOD_POSITION = 2, 5
# torch_xla.launch(fn, args=(), start_method='spawn', debug_single_process=False), 2.5+:
# it calls xmp.spawn (nprocs=1 when debug_single_process), under either target.
LAUNCH = "torch_xla.launch"
SINGLE_PROCESS_POSITION = 3


def nprocs_argument(node: cst.Call):
    return argument(node, "nprocs", NPROCS_POSITION)


def _one_process(name: str) -> tuple[str, int, object]:
    """The parameter (keyword, position) of the spawn ``name`` that, given this value, calls fn
    in this process, unpickled: xmp.spawn(nprocs=1), torch_xla.launch(debug_single_process=True)."""
    return ("debug_single_process", SINGLE_PROCESS_POSITION, True) if name == LAUNCH else ("nprocs", NPROCS_POSITION, 1)


def in_one_process(node: cst.Call, name: str) -> bool:
    """True when the spawn ``node`` (of ``name``) calls fn in this process (:func:`_one_process`)."""
    keyword, position, one = _one_process(name)
    hit = argument(node, keyword, position)
    return hit is not None and literal(hit[1].value) == one


def elements(args: ast.expr | None, site: spawn_site.Site) -> list[ast.expr]:
    """The values ``args`` hands to the spawned function, as far as this file tells: those
    of a tuple or list, or of the one tuple or list a name is bound to (``a = (cfg,)``)."""
    if isinstance(args, ast.Name) and (scope := site.binding_scope(args.id)) is not None:
        values = spawn_site.bindings(scope)[args.id]
        args = values[0] if len(values) == 1 else None
    return args.elts if isinstance(args, (ast.Tuple, ast.List)) else []


# APIs that start the XLA runtime in the calling process.
RUNTIME_STARTERS = frozenset(
    {
        "torch_xla.core.xla_model.xla_device",
        "torch_xla.device",
        "torch_xla.devices",
        "torch_xla.core.xla_model.get_xla_supported_devices",
        "torch_xla.core.xla_model.xrt_world_size",
        "torch_xla.core.xla_model.get_ordinal",
        "torch_xla.core.xla_model.get_local_ordinal",
        "torch_xla.runtime.world_size",
        "torch_xla.runtime.global_ordinal",
        "torch_xla.runtime.local_ordinal",
        "torch_xla.runtime.addressable_device_count",
        "torch_xla.runtime.global_device_count",
        "torch_xla.runtime.process_index",
        "torch_xla.runtime.process_count",
        # a logger asking for the rank, a seeding helper, a memory probe (under XRT they read
        # variables or an idle server; checked on CPU: each starts the runtime)
        "torch_xla.core.xla_model.is_master_ordinal",
        "torch_xla.core.xla_model.master_print",
        "torch_xla.core.xla_model.set_rng_state",
        "torch_xla.core.xla_model.get_rng_state",
        "torch_xla.core.xla_model.wait_device_ops",
        "torch_xla.core.xla_model.xla_device_hw",
        "torch_xla.core.xla_model.get_memory_info",
        "torch_xla.core.xla_model.mark_step",
        "torch_xla.sync",
        "torch_xla.debug.metrics.metrics_report",  # (checked on CPU: the spawn then raised)
    }
)
# What a replica asks for (a main() run in one process asks for its device, not these).
REPLICA_IDENTITY = frozenset(starter for starter in RUNTIME_STARTERS if starter.endswith(("ordinal", "world_size")))


def reached_from(tree: ast.Module, spawned: str | None) -> set[str]:
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


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


@per_file()
def _call_graph(tree: ast.Module) -> dict[str, set[str]]:
    """Function name -> the names it calls, or hands to a call; class name -> its methods;
    a name a function is assigned to -> that function (once per file: each spawn asks)."""
    calls: dict[str, set[str]] = {node.name: set() for node in spawn_site.functions(tree)}
    own: dict[ast.AST, set[str]] = {}  # a def -> what its calls name, those of the defs in it aside
    for node in spawn_site.of_type(tree, (ast.Call, ast.ClassDef, ast.Assign)):
        if isinstance(node, ast.Call):
            function = spawn_site.enclosing(tree, node, _DEFS)[0]
            if function is not None:
                own.setdefault(function, set()).update(
                    _name(part)
                    for part in (node.func, *node.args, *(keyword.value for keyword in node.keywords))
                    if isinstance(part, (ast.Name, ast.Attribute))
                )
        elif isinstance(node, ast.ClassDef):
            # a class made or handed on by name (a framework's callback): its methods run
            # where its instance lives
            calls.setdefault(node.name, set()).update(
                method.name for method in node.body if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef))
            )
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
            # ``Learner.to_tpu = _to_tpu``: a call of the new name runs the function
            for target in node.targets:
                if isinstance(target, (ast.Name, ast.Attribute)):
                    calls.setdefault(_name(target), set()).add(node.value.id)
    for function, names in own.items():  # a def's calls are those of each def around it too
        while function is not None:
            calls[function.name] |= names
            function = spawn_site.enclosing(tree, function, _DEFS)[0]
    return calls


def _name(node: ast.Name | ast.Attribute) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr


@per_file()
def spawn_calls(tree: ast.Module) -> list[ast.Call]:
    """The file's calls of xmp.spawn (torch_xla's or the shim's) and torch_xla.launch."""
    bound = spawn_site.imported(tree)
    return [
        node
        for node in spawn_site.of_type(tree, (ast.Call,))
        if spawn_site.resolved(node.func, bound) in {SPAWN, LAUNCH, *SHIM_SPAWNS}
    ]


def every_spawn_one_process(tree: ast.Module) -> bool:
    """Whether the file spawns, and each of its spawns calls fn in this process (``nprocs=1``,
    ``debug_single_process=True``): one replica, no thread beside it."""
    bound = spawn_site.imported(tree)

    def one(call: ast.Call) -> bool:
        keyword, position, value = _one_process(spawn_site.resolved(call.func, bound) or "")
        given = spawn_site.argument_of(call, keyword, position)
        return isinstance(given, ast.Constant) and given.value == value and type(given.value) is type(value)

    calls = spawn_calls(tree)
    return bool(calls) and all(one(call) for call in calls)


def in_replicas_code(ctx) -> bool:
    """Whether the spot is in a function some spawn of the file runs in its replicas."""
    return ctx.tree is not None and bool(_in_function(ctx.tree, ctx.line) & spawned_code(ctx.tree))


def _in_function(tree: ast.Module, line: int) -> set[str]:
    """The names of the functions whose body holds ``line``."""
    return {node.name for node in spawn_site.around(tree, line) if node.body[0].lineno <= line}


@per_file()
def spawned_code(tree: ast.Module) -> frozenset[str]:
    """The functions of the file that some spawn of more than one process in it runs in its
    replicas (:func:`reached_from`)."""
    reached: set[str] = set()
    for call in spawn_calls(tree):
        site = spawn_site.Site(call, [tree], [])
        fn, nprocs = site.argument("fn", 0), site.argument("nprocs", NPROCS_POSITION)
        if fn is not None and not (isinstance(nprocs, ast.Constant) and nprocs.value == 1):
            reached |= reached_from(tree, ast.unparse(fn))
    return frozenset(reached)


@per_file()
def spawned_by_name(tree: ast.Module) -> frozenset[str]:
    """The names of the functions the file's spawns are given (``_mp_fn``, ``Trainer._worker``'s ``_worker``)."""
    return frozenset(
        ast.unparse(fn).rpartition(".")[2]
        for call in spawn_calls(tree)
        if (fn := spawn_site.Site(call, [tree], []).argument("fn", 0)) is not None
    )


# Names of a replica's own number: what is made of one differs between replicas.
_REPLICA_NUMBERS = ("rank", "ordinal", "index")


def reads_replica_number(
    tree: ast.Module, function: ast.FunctionDef | ast.AsyncFunctionDef | None, expression: ast.expr
) -> bool:
    """Whether ``expression``, in ``function`` (None: module level), is made of the replica's
    own number: the first parameter of a function a spawn of ``tree`` runs (the index
    xmp.spawn hands it), a name or attribute that says rank, ordinal or index
    (``xm.get_ordinal()``, ``args.local_rank``), followed through the names ``function``
    binds to other values."""
    first = (
        function.args.args[0].arg
        if function is not None and function.args.args and (function.name in spawned_by_name(tree))
        else None
    )
    bound = spawn_site.bindings(function) if function is not None else {}
    names, pending = set(), [expression]
    while pending:
        for part in ast.walk(pending.pop()):
            if isinstance(part, ast.Name) and part.id not in names:
                names.add(part.id)
                pending += [value for value in bound.get(part.id, ()) if isinstance(value, ast.expr)]
            elif isinstance(part, ast.Attribute):
                names.add(part.attr)
    return any(name == first or any(word in name.lower() for word in _REPLICA_NUMBERS) for name in names)


# The function a launcher in another module spawns (transformers' xla_spawn.py: ``mod._mp_fn``).
SPAWNED_ELSEWHERE = "_mp_fn"


def spawned_elsewhere(tree: ast.Module | None, line: int) -> bool:
    """Whether ``line`` is in a module-level ``_mp_fn`` (or what it calls) of a file that spawns
    nothing itself: another module's spawn runs it in the replicas. A file that calls its
    ``_mp_fn`` itself (``_mp_fn(0, FLAGS)``, its spawn commented out) runs it in one process."""
    if (
        tree is None
        or spawn_calls(tree)
        or not any(
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == SPAWNED_ELSEWHERE
            for node in tree.body
        )
        or any(
            isinstance(node.func, ast.Name) and node.func.id == SPAWNED_ELSEWHERE
            for node in spawn_site.of_type(tree, (ast.Call,))
        )
    ):
        return False
    reached = reached_from(tree, SPAWNED_ELSEWHERE)
    return any(
        node.name in reached and node.body[0].lineno <= line <= node.end_lineno for node in spawn_site.functions(tree)
    )


def notebook_one_process(ctx) -> bool:
    """Whether the spot runs in a notebook that spawns nothing and makes it itself: in a cell, or
    in a function its cells call. Its one process has no replica beside it. A module of
    functions alone (a project's utils.py) may serve replicas another file spawns, and so may the
    ``_mp_fn`` of a file that leaves its spawn to a launcher; a document's snippet is a part of a
    program it does not show."""
    tree, line = ctx.tree, ctx.line
    function = spawn_site.function_at(tree, line)
    if not ctx.options.notebook or spawn_calls(tree) or spawned_elsewhere(tree, line):
        return False
    if function is None:
        return True
    top = {
        spawn_site.called_name(call.func)
        for statement in tree.body
        if not isinstance(statement, spawn_site.DEFINITIONS)
        for call in ast.walk(statement)
        if isinstance(call, ast.Call)
    }
    return any(function.name in reached_from(tree, name) for name in top if name)
