"""A model each replica builds and trains, never broadcast, where XRT's replicas drew its weights
alike: on TPU v2/v3 the two replicas of a PJRT process draw them from one generator, so they
start from different models; report

Under XRT every replica was a process of its own, and drew the same random weights when its
generator started the same: forked from the launching process (``start_method='fork'``, the
notebooks' choice), or seeded alike (a seed at module level, which each spawned process runs,
or a seed helper of the project's in the replica). PJRT runs a TPU v2/v3 chip's two replicas
as two threads of one process (pytorch/xla v2.9.0 torch_xla/_internal/pjrt.py:44,
``_run_thread_per_device``) that draw from the one generator: each gets other numbers, the
replicas train different models under one averaged gradient, and nothing raises. The upstream
PJRT guide advises broadcasting replica 0's parameters (docs/source/learn/_pjrt.md:246):
``xm.broadcast_master_param(model)`` (2.1+) once the model is built. On TPU v4 and later each
process runs one replica, as under XRT.

Reported at the optimizer (``torch.optim``'s, transformers' AdamW) that a function of the
replicas' code hands ``model.parameters()`` to, on evidence from the file: ``model`` is built
there by a call (not a copy, not an ``MpModelWrapper``'s ``.to``: manual-mp-model-wrapper's),
or taken from a list of such calls (``model = nets[k]``), from no pretrained weights nor a
checkpoint loaded on every path (the same in every replica; one loaded under an ``if``, to resume
when there is one, leaves a fresh run with what each replica drew), not wrapped in DDP
(which broadcasts rank 0's parameters) or FSDP (whose shards are each one replica's), nothing
in the file broadcasts, and the replicas drew alike under XRT as above. Spawned the default
way (a fresh interpreter per replica, seeded at random) and never seeded, XRT's replicas built
different models too: nothing the code relied on changes. A replica that calls
torch.manual_seed is manual-seeded-replicas' spot, and a seed of the replica's number made
XRT's replicas differ on purpose.
"""

from __future__ import annotations

import ast
import re

from xrt2pjrt.file_caches import per_file
from xrt2pjrt.python import spawn_site
from xrt2pjrt.python.rule import PythonRule, code
from xrt2pjrt.python.spawn_graph import (
    in_replicas_code,
    reached_from,
    reads_replica_number,
    spawn_calls,
    spawned_elsewhere,
)
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.rules.manual.manual_seeded_replicas import broadcast_after, broadcasts

_TWO_GENERATORS = (
    "on TPU v2/v3 a PJRT process runs two replicas as threads drawing from one RNG, so the model "
    "each builds gets other weights, where XRT's processes drew alike ({alike}): call "
    "xm.broadcast_master_param(model) once it is built"
)
# torch.optim's classes that take an optimizer, not parameters (they would repeat its item).
_NOT_OPTIMIZERS = ("torch.optim.lr_scheduler.", "torch.optim.swa_utils.")
# What a built module goes through on its way to the optimizer: ``Net().to(device).train()``.
_MOVES = frozenset({"to", "cuda", "train", "eval", "float", "half", "bfloat16", "double"})
# Words in a build that say its weights come from somewhere: the same in every replica.
_LOADED = re.compile(
    r"pretrained|load_state_dict|torch\.load|load_checkpoint|deepcopy|MpModelWrapper|hub\.load|\bweights=(?!None\b)"
)
# Calls named for a seed that do not seed torch alike: numpy's and random's, torch.seed() (a
# random one), torch.initial_seed() (a question).
_NOT_TORCH_SEEDS = frozenset({"seed", "initial_seed"})
# Wrappers that make the replicas' parameters agree (DDP broadcasts rank 0's) or need not (FSDP
# keeps one shard per replica).
_WRAPPERS = re.compile(r"\b(\w*FullyShardedDataParallel|FSDP|DistributedDataParallel|DDP)\b")


class ReplicaModel(PythonRule):
    id = "manual-replica-model"
    fix = "none"
    statement_words = ("optim.",)  # torch.optim.SGD(...), optim.Adam(...); not every optimizer.step()
    summary = "A model each replica builds and trains, never broadcast (v2/v3 threads share one RNG): reported"
    prefixes = ("torch.optim.",)
    names = frozenset({"transformers.AdamW", "transformers.optimization.AdamW"})
    examples = (
        Example(
            dedent("""
                import torch
                import torch_xla.core.xla_model as xm
                import torch_xla.distributed.xla_multiprocessing as xmp

                def _mp_fn(index):
                    model = Net().to(xm.xla_device())
                    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

                xmp.spawn(_mp_fn, start_method='fork')
            """),
            dedent("""
                import torch
                import torch_xla.core.xla_model as xm
                import torch_xla.distributed.xla_multiprocessing as xmp

                def _mp_fn(index):
                    model = Net().to(xm.xla_device())
                    # TODO(xrt2pjrt): call xm.broadcast_master_param(model) [manual-replica-model]
                    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

                xmp.spawn(_mp_fn, start_method='fork')
            """),
            manual=("drawing from one RNG",),
        ),
        Example.unchanged(  # spawned the default way and never seeded: XRT's replicas differed too
            dedent("""
                import torch
                import torch_xla.core.xla_model as xm
                import torch_xla.distributed.xla_multiprocessing as xmp

                def _mp_fn(index):
                    model = Net().to(xm.xla_device())
                    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

                xmp.spawn(_mp_fn)
            """),
        ),
        Example.unchanged(  # pretrained weights are the same in every replica
            dedent("""
                import torch
                import torch_xla.distributed.xla_multiprocessing as xmp
                from transformers import BertModel

                def _mp_fn(index):
                    model = BertModel.from_pretrained('bert-base-uncased').to(device)
                    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)

                xmp.spawn(_mp_fn)
            """),
        ),
        Example.unchanged(  # made equal after it is built
            dedent("""
                import torch
                import torch_xla.core.xla_model as xm
                import torch_xla.distributed.xla_multiprocessing as xmp

                def _mp_fn(index):
                    model = Net().to(xm.xla_device())
                    xm.broadcast_master_param(model)
                    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

                xmp.spawn(_mp_fn, start_method='fork')
            """),
        ),
    )

    def call(self, ctx, node, name):
        if name.startswith(_NOT_OPTIMIZERS):
            return node
        tree = ctx.tree
        function = tree and spawn_site.function_at(tree, ctx.line)
        if function is None or not (in_replicas_code(ctx) or spawned_elsewhere(tree, ctx.line)):
            return node
        func = code(node.func)
        optimizer = next(iter(spawn_site.calls_at(tree, ctx.line, func)), None)
        model = optimizer and _trained(function, optimizer)
        built = model and _built(tree, function, model, optimizer.lineno)
        alike = (
            built
            and not broadcasts(tree)
            and not broadcast_after(function, built.lineno)
            and not _loaded_after(function, model)
            and not _wrapped(tree, function, built)
            and _drew_alike(tree, function, built.lineno)
        )
        if alike:
            ctx.decide(
                "call xm.broadcast_master_param(model)",
                cites=[built.lineno],
                quoted=1,
                cited_as="built at ",
                detail=_TWO_GENERATORS.format(alike=alike),
            )
        return node


def _trained(function: ast.FunctionDef | ast.AsyncFunctionDef, optimizer: ast.Call) -> str | None:
    """The name whose ``.parameters()`` (or ``.named_parameters()``) ``optimizer`` is given, as
    its first argument or ``params=``, or through a name ``function`` binds to them."""
    given = [*optimizer.args[:1], *(k.value for k in optimizer.keywords if k.arg == "params")]
    values = list(given)
    for value in given:
        if isinstance(value, ast.Name):
            values += [v for v in spawn_site.bindings(function).get(value.id, ()) if isinstance(v, ast.expr)]
    for value in values:
        for node in spawn_site.walk(value):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("parameters", "named_parameters")
                and isinstance(node.func.value, ast.Name)
            ):
                return node.func.value.id
    return None


def _built(
    tree: ast.Module, function: ast.FunctionDef | ast.AsyncFunctionDef, model: str, before: int
) -> ast.expr | None:
    """The call that builds ``model`` in ``function`` before line ``before`` from random weights:
    its only bindings there, besides moves of it (``model = model.to(device)``), are calls
    (``Net()``, ``Net().to(device)``) of no pretrained or loaded weights, and the first comes
    before the optimizer; None otherwise."""
    bound = spawn_site.bindings(function)
    values = [_element(bound, value, before) for value in bound.get(model, []) if not _moved(value, model)]
    if not values or not all(isinstance(value, ast.Call) and _fresh(tree, value) for value in values):
        return None
    first = min(values, key=lambda value: value.lineno)
    return first if first.lineno < before else None


def _element(bound: dict[str, list[ast.AST | None]], value: ast.AST | None, before: int) -> ast.AST | None:
    """``value``, or where it takes one of a list the function builds of calls before line
    ``before`` (``model = teachers[i]`` after ``teachers = [Net().to(device) for _ in range(n)]``),
    that call."""
    if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name):
        built = [v for v in bound.get(value.value.id, []) if v is None or v.lineno < before]
        if len(built) == 1 and isinstance(built[0], ast.ListComp) and isinstance(built[0].elt, ast.Call):
            return built[0].elt
    return value


def _moved(value: ast.AST | None, model: str) -> bool:
    """Whether ``value`` is ``model`` itself moved or set to train (``model = model.to(device)``)."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _MOVES:
        value = value.func.value
    return isinstance(value, ast.Name) and value.id == model


def _fresh(tree: ast.Module, value: ast.Call) -> bool:
    """Whether ``value`` builds a module of its own, with no weights loaded: not a copy, not a
    wrapper's ``.to``, not a pretrained model, nor a function or class of the file that loads one."""
    root = value
    while isinstance(root.func, ast.Attribute) and root.func.attr in _MOVES:
        if not isinstance(root.func.value, ast.Call):
            return False  # WRAPPED.to(device), model.to(device): built elsewhere
        root = root.func.value
    if isinstance(root.func, ast.Name) and _loads_weights(tree, root.func.id):
        return False
    return not _LOADED.search(ast.unparse(root))


@per_file(size=None)  # (asked at each model a replica builds: a file of kernels builds Net() in each)
def _loads_weights(tree: ast.Module, name: str) -> bool:
    """Whether a function or a class of the file named ``name`` (what a model is built from)
    loads weights."""
    made = [*spawn_site.defs_named(tree, name), *_classes_by_name(tree).get(name, ())]
    return any(_LOADED.search(ast.unparse(definition)) for definition in made)


@per_file()
def _classes_by_name(tree: ast.Module) -> dict[str, list[ast.ClassDef]]:
    """The classes of the module's own body, by name."""
    found: dict[str, list[ast.ClassDef]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            found.setdefault(node.name, []).append(node)
    return found


def _drew_alike(tree: ast.Module, function: ast.FunctionDef | ast.AsyncFunctionDef, line: int) -> str | None:
    """How XRT's replicas came to draw alike before ``line`` of ``function``, in a few words;
    None when they did not (spawned the default way, never seeded, or seeded per replica), or
    when ``function`` calls torch.manual_seed there (manual-seeded-replicas' spot)."""
    seeds = [node for node in spawn_site.walk(function) if _seeds(node) and node.lineno < line]
    if any(spawn_site.called_name(seed.func) == "manual_seed" for seed in seeds) or any(
        reads_replica_number(tree, function, arg)
        for seed in seeds
        for arg in (*seed.args, *(keyword.value for keyword in seed.keywords))
    ):
        return None
    if seeds:
        return "seeded alike in each"
    if any(_seeds(node) for node in spawn_site.nodes_of(spawn_site.outside_main_block(tree))):
        return "each ran the module's seed"
    for call in spawn_calls(tree):
        site = spawn_site.Site(call, [tree], [])
        fn, method = site.argument("fn", 0), site.argument("start_method", 5)
        if (
            fn is not None
            and isinstance(method, ast.Constant)
            and method.value == "fork"
            and function.name in reached_from(tree, ast.unparse(fn))
        ):
            return "forked from one generator"
    return None


def _seeds(node: ast.AST) -> bool:
    """Whether ``node`` is a call that seeds torch (``torch.manual_seed``, ``seed_everything``,
    transformers' ``set_seed``, a project's ``seed_all``)."""
    name = isinstance(node, ast.Call) and spawn_site.called_name(node.func) or ""
    return "seed" in name and name not in _NOT_TORCH_SEEDS


def _wrapped(tree: ast.Module, function: ast.FunctionDef | ast.AsyncFunctionDef, built: ast.Call) -> bool:
    """Whether the replica wraps its model in DDP or FSDP, in ``function`` or the helper that builds it."""
    texts = [ast.unparse(node) for node in spawn_site.own_nodes(function) if isinstance(node, ast.Call)]
    root = built
    while isinstance(root.func, ast.Attribute) and isinstance(root.func.value, ast.Call):
        root = root.func.value
    if isinstance(root.func, ast.Name):
        texts += [ast.unparse(helper) for helper in spawn_site.defs_named(tree, root.func.id)]
    return any(_WRAPPERS.search(text) for text in texts)


def _loaded_after(function: ast.FunctionDef | ast.AsyncFunctionDef, model: str) -> bool:
    """Whether ``function`` loads weights into ``model`` (``model.load_state_dict(...)``) on
    every path: a load under an ``if`` (a checkpoint to resume from, when there is one) leaves
    the run that starts afresh with the weights each replica drew."""
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "load_state_dict"
        and ast.unparse(node.func.value).split(".")[0] == model  # model.module.load_state_dict(...) too
        for statement in _unconditional(function.body)
        for node in ast.walk(statement)
    )


def _unconditional(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of ``body`` that run whenever it runs: its own, and those of the ``with``
    and ``try`` blocks in it (not of an ``if`` or a loop, nor of a function it defines)."""
    statements = []
    for statement in body:
        if isinstance(statement, (ast.With, ast.AsyncWith, ast.Try)):
            statements += _unconditional(statement.body)
        elif not isinstance(statement, (ast.If, ast.For, ast.AsyncFor, ast.While, *spawn_site.DEFINITIONS)):
            statements.append(statement)
    return statements
