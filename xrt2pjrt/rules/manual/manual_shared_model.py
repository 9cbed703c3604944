"""A model built once in the launching process and used by the replicas: on TPU v2/v3 the two
replicas of a PJRT process get one module; report, with the model built in each replica

XRT ran one process per TPU core: a model built at module level, or in the ``__main__`` block
before ``xmp.spawn``, reached each forked replica as its own copy-on-write copy, and each moved
its copy to its device. PJRT opens a TPU v2/v3 chip from one process only, which drives the
chip's two cores from two threads (pytorch/xla v2.9.0 torch_xla/_internal/pjrt.py:44,
``_run_thread_per_device``): both threads read the same module object, and ``model.to(device)``
in each moves that one module to whichever device asked last, so one replica trains on the
other's device; a model handed in the spawn's ``args`` is unpickled once per process and shared
alike. It is manual-mp-model-wrapper's hazard without the wrapper. On TPU v4 and later a process
drives one chip with one thread, as under XRT.

Reported at the spawn, citing the model, on evidence from the file: a module-level name bound
only to a model being built (a class of the file based on a ``...Module``,
``X.from_pretrained`` of a class named for a model, ``timm.create_model``,
``torchvision.models``), which the spawned code moves (``.to``, ``.cuda``), calls, or hands
to a call (a Trainer, a training loop), or which the spawn's ``args`` hand to the replicas.
A function that spawns a function nested in it shares what it holds alike: a model it builds
before the spawn, or one its caller hands it, which the nested function moves in place
(``model.to(device)`` as a statement of its own: a tensor's ``.to`` returns a copy), trains
(``.train()``) or hands to an optimizer (``.parameters()``); a fork made each replica a copy.
A copy the replica makes (``copy.deepcopy(model)``) is its own. Build the model in the
spawned function instead, then ``xm.broadcast_master_param(model)`` (2.1+) so that every
replica starts from replica 0's parameters, as the upstream PJRT guide advises for v2/v3
(docs/source/learn/_pjrt.md:246).
"""

from __future__ import annotations

import ast
import re

from xrt2pjrt.file_caches import per_file
from xrt2pjrt.python import spawn_site
from xrt2pjrt.python.rule import PythonRule
from xrt2pjrt.python.spawn_graph import LAUNCH, SPAWN, in_one_process, reached_from, spawn_calls
from xrt2pjrt.registry import Example, dedent

_ONE_MODULE = (
    "on TPU v2/v3 a PJRT process runs two replicas as threads, and both use the one module the "
    "launching process built: build the model in each replica, then xm.broadcast_master_param(model)"
)
# A class whose from_pretrained gives a model (AutoModel, BertForMaskedLM, GPT2LMHeadModel), not
# a tokenizer, a processor or a config.
_MODEL_CLASS = re.compile(r"Model|For[A-Z]")
_NAMED_FOR_A_MODEL = re.compile(r"model|net", re.IGNORECASE)
_MODEL_FACTORIES = ("timm.create_model", "timm.models.create_model", "torchvision.models.")
# What a replica does to the module that shares it between threads: moves it, runs it.
_USES = frozenset({"to", "cuda", "train", "parameters", "forward"})


class SharedModel(PythonRule):
    id = "manual-shared-model"
    fix = "none"
    summary = "A model built before xmp.spawn and used by the replicas (one module for two on TPU v2/v3): reported"
    names = frozenset({SPAWN, LAUNCH})
    examples = (
        Example(
            dedent("""
                import torch.nn as nn
                import torch_xla.core.xla_model as xm
                import torch_xla.distributed.xla_multiprocessing as xmp

                class Net(nn.Module):
                    pass

                model = Net()

                def _mp_fn(index):
                    net = model.to(xm.xla_device())

                xmp.spawn(_mp_fn, nprocs=8)
            """),
            dedent("""
                import torch.nn as nn
                import torch_xla.core.xla_model as xm
                import torch_xla.distributed.xla_multiprocessing as xmp

                class Net(nn.Module):
                    pass

                model = Net()

                def _mp_fn(index):
                    net = model.to(xm.xla_device())

                # TODO(xrt2pjrt): build the model in each replica [manual-shared-model]
                xmp.spawn(_mp_fn, nprocs=8)
            """),
            manual=("one module the launching process built",),
        ),
        Example.unchanged(  # a tokenizer is no module, and a replica's deep copy is its own
            dedent("""
                import copy
                import torch_xla.distributed.xla_multiprocessing as xmp
                from transformers import AutoModel, AutoTokenizer

                tokenizer = AutoTokenizer.from_pretrained('bert-base-uncased')
                base = AutoModel.from_pretrained('bert-base-uncased')

                def _mp_fn(index):
                    train(copy.deepcopy(base), tokenizer)

                xmp.spawn(_mp_fn, nprocs=8)
            """),
        ),
    )

    def call(self, ctx, node, name):
        if in_one_process(ctx.original, name) or ctx.tree is None:
            return node
        call = next((c for c in spawn_calls(ctx.tree) if c.lineno == ctx.line), None)
        lines, handed_in = _shared_models(ctx.tree, call) if call is not None else ([], False)
        if lines:
            message = "build the model in each replica"  # (the TODO line: without the cited lines, which move)
            cited = "handed in at " if handed_in else "built at "
            ctx.decide(message, comment=message, cites=lines, quoted=1, cited_as=cited, detail=_ONE_MODULE)
        return node


def _shared_models(tree: ast.Module, spawn: ast.Call) -> tuple[list[int], bool]:
    """The lines of the models that ``spawn``'s replicas use and the launching process built:
    module-level ones, and those the function that spawns holds for a function nested in it;
    and whether all of them are that function's parameters (its caller built them)."""
    site = spawn_site.Site(spawn, [tree], [])
    fn, args = site.argument("fn", 0), site.argument("args", 1)
    reached = reached_from(tree, ast.unparse(fn)) if fn is not None else set()
    handed = {
        arg.id for arg in (args.elts if isinstance(args, (ast.Tuple, ast.List)) else []) if isinstance(arg, ast.Name)
    }
    models = _models(tree)
    outer = spawn_site.function_at(tree, spawn.lineno)
    held = _held_models(tree, outer, spawn.lineno) if outer is not None else {}
    lines = {models[name] for name in handed if name in models}
    for name in reached:
        lines |= _models_read(tree, name)
    nested = [] if outer is None else spawn_site.walk(outer)[1:]
    for function in (f for f in nested if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name in reached):
        for read in _moved_in_place(function, held):
            lines.add(held[read.id])
    return sorted(lines), outer is not None and lines == {outer.lineno}


@per_file(size=None)  # (each spawn asks of the names it reaches: a file of kernels names _mp_fn in each)
def _models_read(tree: ast.Module, name: str) -> set[int]:
    """The lines of the module-level models that the functions named ``name`` use."""
    models = _models(tree)
    return {models[read.id] for function in spawn_site.defs_named(tree, name) for read in _uses(tree, function)}


def _held_models(tree: ast.Module, function: ast.FunctionDef | ast.AsyncFunctionDef, before: int) -> dict[str, int]:
    """What ``function`` binds before line ``before`` that may be a model, with its line: its
    parameters named for one (a caller's ``model``, ``net``), and the names it binds only to a
    model being built."""
    parameters = (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)
    out = {arg.arg: function.lineno for arg in parameters if _NAMED_FOR_A_MODEL.search(arg.arg)}
    bound, modules = spawn_site.imported(tree), _module_classes(tree)
    for name, values in spawn_site.bindings(function).items():
        if values and all(isinstance(v, ast.expr) and _builds_model(v, bound, modules) for v in values):
            first = min(v.lineno for v in values)
            if first < before:
                out[name] = first
    return out


def _moved_in_place(function: ast.FunctionDef | ast.AsyncFunctionDef, held: dict[str, int]) -> list[ast.Name]:
    """The reads in ``function``'s own code, of names it does not bind, that use a module in
    place: ``model.to(device)`` as a statement of its own (a tensor's ``.to`` returns a copy,
    so discarding it is a module's move), ``model.train()``, ``model.parameters()``."""
    local = set(spawn_site.bindings(function))
    out = []
    for node in spawn_site.own_nodes(function):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value
        if not (isinstance(owner, ast.Name) and owner.id in held and owner.id not in local):
            continue
        if node.func.attr in ("train", "parameters", "named_parameters") or (
            node.func.attr in ("to", "cuda")
            and any(isinstance(s, ast.Expr) and s.value is node for s in spawn_site.own_nodes(function))
        ):
            out.append(owner)
    return out


@per_file(size=None)  # (each spawn of a file asks of every function it reaches)
def _uses(tree: ast.Module, function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Name]:
    """The reads of a module-level model in ``function``'s own code that use the module itself."""
    models = _models(tree)
    own = spawn_site.own_nodes(function)
    local = set(spawn_site.bindings(function)) - _declared_global(function)  # (its own model of that name)
    for outer in spawn_site.around(tree, function.lineno):  # (a closure reads its function's own)
        if outer is not function:
            local |= set(spawn_site.bindings(outer)) - _declared_global(outer)
    parents = spawn_site.parents(tree)
    out = []
    for read in own:
        if not (
            isinstance(read, ast.Name) and read.id in models and read.id not in local and isinstance(read.ctx, ast.Load)
        ):
            continue
        parent = parents.get(id(read))
        moved = isinstance(parent, ast.Attribute) and parent.attr in _USES
        called = isinstance(parent, ast.Call) and (
            parent.func is read or (read in parent.args and not _copies(parent.func))
        )
        handed = isinstance(parent, ast.keyword)
        if moved or called or handed:
            out.append(read)
    return out


def _declared_global(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    return {name for node in spawn_site.own_nodes(function) if isinstance(node, ast.Global) for name in node.names}


def _copies(func: ast.expr) -> bool:
    return ast.unparse(func).rpartition(".")[2] in ("deepcopy", "copy")


@per_file()
def _models(tree: ast.Module) -> dict[str, int]:
    """Module-level names bound only to a model being built, with the line of (the first) binding."""
    bound, modules = spawn_site.imported(tree), _module_classes(tree)
    out = {}
    for name, values in spawn_site.bindings(tree).items():
        if values and all(isinstance(v, ast.expr) and _builds_model(v, bound, modules) for v in values):
            out[name] = min(v.lineno for v in values)
    return out


@per_file()
def _module_classes(tree: ast.Module) -> set[str]:
    """The module-level classes of the file based on a ``...Module``."""
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.ClassDef) and any(ast.unparse(base).endswith("Module") for base in node.bases)
    }


def _builds_model(value: ast.expr, bound: dict[str, str], modules: set[str]) -> bool:
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    if isinstance(func, ast.Attribute) and func.attr in ("to", "cuda", "eval", "train"):
        return _builds_model(func.value, bound, modules)
    if isinstance(func, ast.Name) and func.id in modules:
        return True
    if isinstance(func, ast.Attribute) and func.attr == "from_pretrained":
        return bool(_MODEL_CLASS.search(ast.unparse(func.value).rpartition(".")[2]))
    called = spawn_site.resolved(func, bound) or ""
    return called.startswith(_MODEL_FACTORIES)
