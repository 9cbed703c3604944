"""A worker_init_fn or a WebDataset nodesplitter that asks torch_xla for the replica's ordinal or
world size: reported.

A worker_init_fn (a function, a lambda, a ``functools.partial`` of one) runs in each DataLoader
worker, a process of its own; a WebDataset's ``nodesplitter`` runs where the dataset is iterated:
in those workers, or in the thread of a ParallelLoader or MpDeviceLoader, where on TPU v2/v3
``xr.global_ordinal()`` answers the process's first device for both replicas (2.9 keeps no
ordinal for a process of two threads, and reads the calling thread's device: torch_xla/runtime.py,
``_init_world_size_ordinal``), so both read the same shards; the world size is every thread's
there. Under XRT the worker inherited the replica's environment, and ``xm.get_ordinal()`` there
answered the replica's number. torch_xla's spawn starts its replicas
with the spawn method, so their workers start so too, and torch_xla in a worker is not the
replica's: on a TPU it starts a runtime of its own, on CPU it answers as a world of one. Such a
call is reported, not rewritten: ask in the replica and hand the answer over
(``worker_init_fn=functools.partial(fn, rank=xr.global_ordinal())``).
"""

from __future__ import annotations

import ast

from xrt2pjrt.file_caches import per_file
from xrt2pjrt.python import spawn_site
from xrt2pjrt.python.rule import PythonRule
from xrt2pjrt.python.spawn_graph import REPLICA_IDENTITY
from xrt2pjrt.registry import Example, dedent

_IN_WORKER = "ask in the replica and pass it in"
_WHY = (
    "this code runs in each DataLoader worker, a process of its own (a worker_init_fn; a WebDataset nodesplitter "
    "there, or in a ParallelLoader's thread, where on TPU v2/v3 the ordinal is the process's first device's): "
    "torch_xla's spawn starts its replicas with the spawn method, so their workers start so too, and torch_xla "
    "there is not the replica's (on a TPU it starts a runtime of its own; on CPU it answers as a world of one); "
    "XRT's answer came from the environment the worker inherited. Ask for the ordinal or world size in the "
    "replica and hand the answer over: worker_init_fn=functools.partial(fn, rank=xr.global_ordinal())"
)


class DataLoaderWorker(PythonRule):
    id = "spawn-dataloader-worker"
    fix = "none"
    summary = "An ordinal or world size asked for in a DataLoader's worker_init_fn or a nodesplitter: reported"
    names = REPLICA_IDENTITY
    examples = (
        Example(  # the per-replica seed: every replica's workers seeded alike, each reading the same samples
            dedent("""
                import torch_xla.core.xla_model as xm

                def seed_worker(worker_id):
                    np.random.seed(1000 * xm.get_ordinal() + worker_id)

                def _mp_fn(index):
                    loader = DataLoader(data, num_workers=4, worker_init_fn=seed_worker)
            """),
            dedent("""
                import torch_xla.core.xla_model as xm

                def seed_worker(worker_id):
                    # TODO(xrt2pjrt): ask in the replica and pass it in [spawn-dataloader-worker]
                    np.random.seed(1000 * xm.get_ordinal() + worker_id)

                def _mp_fn(index):
                    loader = DataLoader(data, num_workers=4, worker_init_fn=seed_worker)
            """),
            manual=("runs in each DataLoader worker",),
        ),
        Example.unchanged(  # asked in the replica, handed over: nothing to report
            dedent("""
                import functools
                import torch_xla.runtime as xr

                def seed_worker(worker_id, rank):
                    np.random.seed(1000 * rank + worker_id)

                def _mp_fn(index):
                    init = functools.partial(seed_worker, rank=xr.global_ordinal())
                    loader = DataLoader(data, num_workers=4, worker_init_fn=init)
            """),
        ),
    )

    def call(self, ctx, node, name):
        if any(
            first <= ctx.line <= last and (keyword in _WORLD_SIZE_TOO or name.endswith("ordinal"))
            for first, last, keyword in _worker_init_code(ctx.tree)
        ):
            ctx.decide(_IN_WORKER, detail=_WHY)
        return node


_CALLBACKS = ("worker_init_fn", "nodesplitter")
# The callbacks whose world size is reported too: a nodesplitter run in the loader's thread has
# the right one (only the ordinal is that thread's device's).
_WORLD_SIZE_TOO = ("worker_init_fn",)


@per_file()
def _worker_init_code(tree: ast.Module | None) -> tuple[tuple[int, int, str], ...]:
    """The lines (first, last) of the code that runs as some DataLoader's worker_init_fn or some
    WebDataset's nodesplitter (``_CALLBACKS``), and that keyword: a lambda given as one, the body
    of a function of this file given as one, by name or in a functools.partial (its other
    arguments are computed where the partial is made)."""
    if tree is None:
        return ()
    given, spans = {}, []
    for node in spawn_site.of_type(tree, (ast.keyword,)):
        if node.arg in _CALLBACKS:
            value = node.value
            if isinstance(value, ast.Call) and value.args and ast.unparse(value.func).endswith("partial"):
                value = value.args[0]
            if isinstance(value, ast.Lambda):
                spans.append((value.body.lineno, value.body.end_lineno, node.arg))
            elif isinstance(value, (ast.Name, ast.Attribute)):
                given[value.id if isinstance(value, ast.Name) else value.attr] = node.arg
    parents = spawn_site.parents(tree)
    last = {  # (a def made again in the same body replaces it)
        (node.name, id(parents.get(id(node)))): node for node in spawn_site.functions(tree) if node.name in given
    }
    spans += [(node.body[0].lineno, node.end_lineno, given[node.name]) for node in last.values()]
    return tuple(spans)
