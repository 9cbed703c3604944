"""torch.manual_seed (or transformers' set_seed) in a function xmp.spawn or torch_xla.launch runs,
followed there by a module moved with .to(...), in a file that never calls
xm.broadcast_master_param: on TPU v2/v3 two replicas share a process and torch's global RNG, so
models built after the same seed differ; report

XRT ran one process per TPU core: every replica that seeded torch's global generator alike drew the
same numbers, and code built identical models that way. PJRT runs a TPU v2/v3 chip's two replicas as
two threads of one process (pytorch/xla v2.9.0 torch_xla/_internal/pjrt.py:44,
``_run_thread_per_device``), and the two threads draw from the one global generator: what one draws
the other does not, seed or no seed (a run on 2.9's CPU with two devices in one process shows it:
tests/rules/manual/test_manual_seeded_replicas.py). The upstream PJRT guide says so and advises
broadcasting replica 0's parameters (docs/source/learn/_pjrt.md:246):
``xm.broadcast_master_param(model)`` after building the model (2.1+; v2.9.0
torch_xla/core/xla_model.py:1539). A file that already calls it is not reported, nor a seed that no
``.to(...)`` follows in its function: what a replica builds on the host and moves to its device is
what the shared generator makes differ (random tensors made on the XLA device draw from the device's
generator, xm.set_rng_state); nor the ``.to`` of data (an item of a batch, what torch's functions
make), of a parameter (a model handed in), of an ``MpModelWrapper``, whose module was built before
the replicas ran (manual-mp-model-wrapper reports that one), or of a model the module level or the
launching function built (one object, manual-shared-model's), or of a torchmetrics metric (counters,
alike in every replica); nor a seed that differs between replicas (the rank or the spawned
function's index in it: XRT's replicas built different models then too), nor one whose models a
broadcast of the project's own makes equal after (a function named for it, called below the seed).
On TPU v4 and later each process runs one replica, as under XRT.

The spawn may be in another module: transformers' xla_spawn.py imports the training script
and spawns its ``_mp_fn``, and a project's launcher may do the same. A file that spawns
nothing itself and defines ``_mp_fn`` at module level, the name such launchers call, has its
``_mp_fn`` (and what it calls) taken for the replicas' code, unless it calls ``_mp_fn`` itself.
"""

from __future__ import annotations

import ast

import libcst as cst

from xrt2pjrt.file_caches import per_file
from xrt2pjrt.python import spawn_site
from xrt2pjrt.python.rule import PythonRule
from xrt2pjrt.python.spawn_graph import in_replicas_code, reads_replica_number, spawned_elsewhere
from xrt2pjrt.registry import Example, dedent

_SHARED_RNG = (
    "on TPU v2/v3 a PJRT process runs two replicas as threads sharing torch's RNG, so models built "
    "after this seed differ: call xm.broadcast_master_param(model) once the model is built"
)


class SeededReplicas(PythonRule):
    id = "manual-seeded-replicas"
    fix = "none"
    statement_words = ("manual_seed", "set_seed")
    summary = "torch.manual_seed, then a model built in the replicas (v2/v3 threads share one RNG): reported"
    # (transformers' set_seed seeds torch's global generator too, for a script its Trainer trains)
    names = frozenset(
        {
            "torch.manual_seed",
            "torch.random.manual_seed",
            "transformers.set_seed",
            "transformers.trainer_utils.set_seed",
        }
    )
    examples = (
        Example(
            dedent("""
                import torch
                import torch_xla.distributed.xla_multiprocessing as xmp

                def _mp_fn(index):
                    torch.manual_seed(1)
                    model = Net().to(device)

                xmp.spawn(_mp_fn)
            """),
            dedent("""
                import torch
                import torch_xla.distributed.xla_multiprocessing as xmp

                def _mp_fn(index):
                    # TODO(xrt2pjrt): call xm.broadcast_master_param(model) [manual-seeded-replicas]
                    torch.manual_seed(1)
                    model = Net().to(device)

                xmp.spawn(_mp_fn)
            """),
            manual=("sharing torch's RNG",),
        ),
        Example.unchanged(  # pytorch/xla v1.13's test_mp_distributed_mm.py: its tensors come from the device's generator
            dedent("""
                import torch
                import torch_xla.core.xla_model as xm
                import torch_xla.distributed.xla_multiprocessing as xmp

                def _mp_fn(index):
                    torch.manual_seed(11)
                    xm.set_rng_state(11)
                    w = torch.randn(3, 4, device=device)

                xmp.spawn(_mp_fn)
            """),
        ),
        Example.unchanged(  # the parameters are made equal after the seed: nothing to say
            dedent("""
                import torch
                import torch_xla.core.xla_model as xm
                import torch_xla.distributed.xla_multiprocessing as xmp

                def _mp_fn(index):
                    torch.manual_seed(1)
                    model = Net().to(xm.xla_device())
                    xm.broadcast_master_param(model)

                xmp.spawn(_mp_fn)
            """),
        ),
        Example.unchanged(  # the model came from MpModelWrapper, built before: manual-mp-model-wrapper's item
            dedent("""
                import torch
                import torch_xla.distributed.xla_multiprocessing as xmp

                WRAPPED = xmp.MpModelWrapper(Net())

                def _mp_fn(index):
                    torch.manual_seed(1)
                    model = WRAPPED.to(device)

                xmp.spawn(_mp_fn)
            """),
        ),
        Example(  # spawned by a launcher in another module (transformers' xla_spawn.py calls mod._mp_fn)
            dedent("""
                import torch
                import torch_xla.core.xla_model as xm

                def _mp_fn(index):
                    torch.manual_seed(42)
                    model = Net().to(xm.xla_device())
            """),
            dedent("""
                import torch
                import torch_xla.core.xla_model as xm

                def _mp_fn(index):
                    # TODO(xrt2pjrt): call xm.broadcast_master_param(model) [manual-seeded-replicas]
                    torch.manual_seed(42)
                    model = Net().to(xm.xla_device())
            """),
            manual=("sharing torch's RNG",),
        ),
        Example.unchanged(  # the launching process's seed: one process, one thread
            dedent("""
                import torch
                import torch_xla.distributed.xla_multiprocessing as xmp

                if __name__ == '__main__':
                    torch.manual_seed(1)
                    xmp.spawn(_mp_fn)
            """),
        ),
    )

    def call(self, ctx, node, name):
        function = ctx.tree and spawn_site.function_at(ctx.tree, ctx.line)
        built = function is not None and _moved_after(ctx.tree, function, ctx.line)
        if (
            built
            and (in_replicas_code(ctx) or spawned_elsewhere(ctx.tree, ctx.line))
            and not broadcasts(ctx.tree)
            and not broadcast_after(function, ctx.line)
            and not _per_replica(ctx.tree, function, node)
        ):
            # (the report quotes the line the call goes after: where the model is built)
            ctx.decide(
                "call xm.broadcast_master_param(model)", cites=[built], quoted=1, cited_as="after ", detail=_SHARED_RNG
            )
        return node


@per_file()  # (asked at each seeding call of the file)
def broadcasts(tree: ast.Module) -> bool:
    """Whether the file calls broadcast_master_param (its TODO line, which names it, is no call)."""
    return any(
        (node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None))
        == "broadcast_master_param"
        for node in spawn_site.of_type(tree, (ast.Call,))
    )


def _spelt(func: ast.expr) -> str:
    """``ast.unparse(func)``, without unparsing a name or the attribute ending a dotted one:
    how it ends is all that is asked."""
    return (
        func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ast.unparse(func)
    )


def _built_before(tree: ast.Module, function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The names of the module, or of the functions around ``function`` (the launcher whose
    closure it is), that ``function`` reads without binding them itself: a model built there,
    before any replica ran, is the same object in every thread (manual-shared-model's spot), not
    one the seed makes differ."""
    own = {arg.arg for arg in ast.walk(function.args) if isinstance(arg, ast.arg)} | {
        node.id for node in spawn_site.walk(function) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    }
    enclosing = {
        name
        for outer in spawn_site.around(tree, function.lineno)
        if outer is not function
        for name in spawn_site.bindings(outer)
    }
    return (_module_names(tree) | enclosing) - own


@per_file()  # (asked at each seeding call of the file)
def _module_names(tree: ast.Module) -> frozenset[str]:
    """The names the module's own assignments bind."""
    return frozenset(
        target.id
        for statement in tree.body
        if isinstance(statement, (ast.Assign, ast.AnnAssign))
        for target in (statement.targets if isinstance(statement, ast.Assign) else [statement.target])
        if isinstance(target, ast.Name)
    )


def _moved_after(tree: ast.Module, function: ast.FunctionDef | ast.AsyncFunctionDef, line: int) -> int | None:
    """The last line of the first statement below ``line`` in ``function`` that calls
    ``.to(...)`` on anything but a parameter of ``function`` (a model handed in, built before the
    replica ran), an MpModelWrapper (whose module was built before any replica
    ran: manual-mp-model-wrapper's) or a torchmetrics metric (state, no random weights);
    None when none does."""
    handed = {arg.arg for arg in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)}
    kept = _not_random(tree) | _built_before(tree, function) | handed  # (a parameter's model came built)
    bound = spawn_site.imported(tree)
    moves = [
        node
        for node in spawn_site.walk(function)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "to"
        and node.lineno > line
        and ast.unparse(node.func.value) not in kept
        and not _metric(node.func.value, bound)
        and not _a_tensor(node.func.value, function, bound)
    ]
    if not moves:
        return None
    first = min(moves, key=lambda node: (node.lineno, node.col_offset))
    statement = max(
        (
            node
            for node in spawn_site.walk(function)
            if isinstance(node, ast.stmt)
            and not hasattr(node, "body")
            and node.lineno <= first.lineno <= node.end_lineno
        ),
        key=lambda node: node.lineno,
        default=first,
    )
    return statement.end_lineno


def broadcast_after(function: ast.FunctionDef | ast.AsyncFunctionDef, line: int) -> bool:
    """Whether ``function`` calls a broadcast of its own below ``line`` (``utils.broadcast_master_model(model)``,
    an all-reduce of replica 0's parameters): the models are made equal, as broadcast_master_param does."""
    return any(
        isinstance(node, ast.Call)
        and node.lineno > line
        and "broadcast"
        in (
            node.func.id
            if isinstance(node.func, ast.Name)
            else node.func.attr
            if isinstance(node.func, ast.Attribute)
            else ""
        )
        for node in spawn_site.walk(function)
    )


def _per_replica(tree: ast.Module, function: ast.FunctionDef | ast.AsyncFunctionDef, call: cst.Call) -> bool:
    """Whether the seed differs between replicas (``torch.manual_seed(rank)``, ``seed + xm.get_ordinal()``,
    the spawned function's index): XRT's replicas drew different numbers then too, and PJRT's threads
    change nothing the code relied on."""
    return bool(call.args) and reads_replica_number(
        tree, function, ast.parse(f"({cst.Module([]).code_for_node(call.args[0].value)})", mode="eval").body
    )


@per_file()  # (asked at each seeding call of the file)
def _not_random(tree: ast.Module) -> frozenset[str]:
    """What the file assigns an ``MpModelWrapper(...)`` or a metric to: ``WRAPPED``, ``self.model``."""
    bound = spawn_site.imported(tree)
    return frozenset(
        ast.unparse(target)
        for node in spawn_site.of_type(tree, (ast.Assign,))
        if isinstance(node.value, ast.Call)
        and (_spelt(node.value.func).endswith("MpModelWrapper") or _metric(node.value, bound))
        for target in node.targets
    )


def _a_tensor(
    value: ast.expr,
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    bound: dict[str, str],
    seen: frozenset = frozenset(),
) -> bool:
    """Whether what ``.to`` moves is data, no module: an item of a batch (``cond['img'].to``),
    what torch makes (``torch.zeros_like(x).to``, ``Variable(y).to``), or a name the function
    binds only to such, or to a loop's batch (``for x, y in loader: x = x.to(device)``)."""
    if isinstance(value, ast.Subscript):
        return True
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "to":
        return _a_tensor(value.func.value, function, bound, seen)
    if isinstance(value, ast.Call):  # (torch.nn's are modules, their weights random)
        made_by = spawn_site.resolved(value.func, bound) or ""
        return made_by.startswith("torch.") and not made_by.startswith("torch.nn.")
    if isinstance(value, ast.Name) and value.id not in seen:
        values = spawn_site.bindings(function).get(value.id, [])
        made = [v for v in values if v is not None]  # (a loop's target, a parameter: None)
        unpacked = len(made) < len(values) and value.id not in _loop_or_parameter_names(function)
        return bool(values) and not unpacked and all(_a_tensor(v, function, bound, seen | {value.id}) for v in made)
    return isinstance(value, ast.Name)  # (its own move: x = x.to(device))


@per_file(size=None)
def _loop_or_parameter_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
    """The names ``function`` binds as a loop's target or a parameter: where a binding without a
    value is a batch, not what a call unpacks (``model, preprocess = clip.load(name)``)."""
    loops = (
        node.id
        for statement in spawn_site.own_nodes(function)
        if isinstance(statement, (ast.For, ast.AsyncFor, ast.comprehension))
        for node in ast.walk(statement.target)
        if isinstance(node, ast.Name)
    )
    return frozenset(loops) | {arg.arg for arg in ast.walk(function.args) if isinstance(arg, ast.arg)}


def _metric(value: ast.expr, bound: dict[str, str]) -> bool:
    """A torchmetrics metric built here (``MetricCollection({...}).to(device)``): a module of
    counters, the same in every replica whatever the generator holds."""
    return isinstance(value, ast.Call) and (spawn_site.resolved(value.func, bound) or "").startswith("torchmetrics")
