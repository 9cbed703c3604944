"""One world on CPU: torch_xla's own API inside the CPU replicas (xrt2pjrt.shim.cpu.world).

The table is checked against the installed torch_xla (every target exists, every
replacement takes the target's arguments). Then one real run of a program written against
torch_xla's own API only -- ``torch_xla.runtime``, ``torch_xla.core.xla_model``,
``torch_xla.core.functions``, ``torch.distributed``'s ``xla`` backend, ``torch_xla.launch``
-- under ``xrt2pjrt run --nprocs 4``: 4 real processes, each a real PJRT CPU replica. Every
replica writes what it saw to a JSON file; the tests below each judge one part of it
against what an N-replica pod gives (the seeds' table, XLA's semantics, plain-torch
BatchNorm over the whole batch, and the same program trained as one replica on the whole
batch, run beside it as a plain torch_xla process without xrt2pjrt).
"""

from __future__ import annotations

import array
import functools
import inspect
import json
import math
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
WORLD = 4

PROGRAM = '''
import functools, json, os, sys, time
import torch
import torch.distributed as dist
import torch.nn as nn
import torch_xla
import torch_xla.core.functions as xf
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_backend  # noqa: F401 -- registers the 'xla' backend
import torch_xla.runtime as xr
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler
# Bound at import, in the parent, before any replica exists:
from torch_xla.core.xla_model import all_reduce as early_all_reduce
from torch_xla.runtime import world_size as early_world_size

OUT = sys.argv[1]
RUNTIME = ("world_size", "global_ordinal", "local_ordinal", "process_index", "process_count",
           "local_process_count", "host_index", "global_device_count", "local_device_count",
           "addressable_device_count", "global_runtime_device_count", "addressable_runtime_device_count")
STEPS, BATCH, EPOCHS, REPLICAS = 3, 8, 2, 4


def dump(name, value):
    with open(os.path.join(OUT, f"{name}.json"), "w") as handle:
        json.dump(value, handle)


def values(tensor):
    return tensor.detach().cpu().tolist()


def seed_table(seen, rank, world, d):
    for pin in (False, True):
        seen[f"all_gather pin={pin}"] = values(xm.all_gather((torch.ones(1) * rank).to(d), dim=0, pin_layout=pin))
        seen[f"reduce_scatter pin={pin}"] = values(xm.reduce_scatter(
            xm.REDUCE_SUM, -torch.arange(world, dtype=torch.float32).to(d), scale=1.0 / world, scatter_dim=0,
            shard_count=world, pin_layout=pin))
        mixed = torch.cat([-torch.arange(world, dtype=torch.float32).view(-1, 1, 1),
                           torch.ones(world, 1, 1) * rank], dim=1)
        seen[f"all_to_all pin={pin}"] = values(xm.all_to_all(mixed.to(d), 0, 2, world, pin_layout=pin))
        seen[f"all_reduce pin={pin}"] = values(xm.all_reduce(xm.REDUCE_SUM, torch.ones(1, device=d) * (rank + 1),
                                                             pin_layout=pin))
    seen["early all_reduce"] = values(early_all_reduce(xm.REDUCE_SUM, torch.ones(1, device=d) * (rank + 1)))


def functions(seen, rank, world, d):
    x = torch.tensor([rank + 1.0, 2.0], device=d, requires_grad=True)
    y = xf.all_reduce(xm.REDUCE_SUM, x * 1.0)
    (y * (rank + 1)).sum().backward()
    seen["xf.all_reduce"] = {"out": values(y), "grad": values(x.grad)}
    x = torch.tensor([[rank + 1.0, 2.0]], device=d, requires_grad=True)
    gathered = xf.all_gather(x, dim=0)
    (gathered * torch.arange(2.0 * world, device=d).view(world, 2)).sum().backward()
    seen["xf.all_gather"] = {"out": values(gathered), "grad": values(x.grad)}
    generator = torch.Generator().manual_seed(3)
    w, x = torch.randn(3, 2 * world, generator=generator), torch.randn(2 * world, 5, generator=generator)
    seen["distributed_mm"] = values(xf.distributed_mm(w[:, 2 * rank:2 * rank + 2].to(d), x.to(d)))
    generator = torch.Generator().manual_seed(5)
    batch, weight = torch.randn(4 * world, 3, 2, 2, generator=generator), torch.randn(4 * world, 3, 2, 2, generator=generator)
    mine = slice(4 * rank, 4 * rank + 4)
    norm = xf.SyncBatchNorm(3).to(d)
    local = batch[mine].to(d).requires_grad_()
    out = norm(local)
    (out * weight[mine].to(d)).sum().backward()
    seen["SyncBatchNorm"] = {"out": values(out), "grad": values(local.grad), "weight": values(norm.weight.grad),
                             "bias": values(norm.bias.grad)}


def bucketized(seen, rank, world, d):
    a, b = torch.ones(2, device=d) * rank, torch.ones(3, device=d) * (rank + 10)
    seen["all_gather_bucketized"] = [values(v) for v in xm.all_gather_bucketized([a, b], pin_layout=False,
                                                                                  bucket_cap_mb=1)]
    ramp = torch.arange(2.0 * world, device=d) * (rank + 1)
    seen["reduce_scatter_bucketized"] = [values(v) for v in xm.reduce_scatter_bucketized(
        xm.REDUCE_SUM, [ramp, ramp * 2], 1.0, 0, world, pin_layout=False, bucket_cap_mb=1)]
    grads = [torch.ones(2, device=d) * rank, torch.ones(3, device=d) * 2 * rank]
    xm.all_reduce_bucketized_gradients(grads, scale=0.5, groups=None, pin_layout=False, bucket_cap_mb=1)
    seen["all_reduce_bucketized_gradients"] = [values(v) for v in grads]


def meeting_points(seen, rank, world, d):
    if rank == world - 1:
        time.sleep(1)
    entered = time.monotonic()
    seen["rendezvous"] = [p.decode() for p in xm.rendezvous("late", f"p{rank}".encode())]
    seen["rendezvous waited"] = time.monotonic() - entered
    seen["xla_rendezvous"] = [p.decode() for p in xm.xla_rendezvous(f"q{rank}".encode())]
    seen["mesh_reduce"] = xm.mesh_reduce("loss", rank * 1.5, sum)
    try:
        xm.rendezvous("subset", b"", [0, 1])
    except ValueError as error:
        seen["rendezvous subset"] = str(error)


def distributed(seen, rank, world, d):
    dist.init_process_group("xla", init_method="xla://")
    seen["dist rank, size"] = [dist.get_rank(), dist.get_world_size()]
    summed = torch.tensor([rank + 1.0], device=d)
    dist.all_reduce(summed)
    gathered = [torch.zeros(1, device=d) for _ in range(world)]
    dist.all_gather(gathered, torch.tensor([rank * 1.0], device=d))
    broadcast = torch.tensor([rank * 10.0], device=d)
    dist.broadcast(broadcast, src=2)
    seen["dist.all_reduce"], seen["dist.broadcast"] = values(summed), values(broadcast)
    seen["dist.all_gather"] = [values(t) for t in gathered]
    if rank == 0:
        time.sleep(1)
    entered = time.monotonic()
    dist.barrier()
    seen["barrier waited"] = time.monotonic() - entered
    import torch.distributed._functional_collectives as funcol  # DTensor's and traced code's collectives

    ramp = torch.arange(4.0, device=d)
    seen["functional"] = [values(funcol.all_reduce(ramp * (rank + 1), "sum", dist.group.WORLD)),
                          values(funcol.all_gather_tensor(ramp[:1] + rank, 0, dist.group.WORLD)),
                          values(funcol.reduce_scatter_tensor(ramp * (rank + 1), "sum", 0, dist.group.WORLD)),
                          values(funcol.all_to_all_single(ramp + 10 * rank, None, None, dist.group.WORLD)),
                          values(funcol.broadcast(ramp + rank, 1, dist.group.WORLD))]
    seen["sampler from xr"] = list(DistributedSampler(range(16), num_replicas=xr.world_size(),
                                                      rank=xr.global_ordinal(), shuffle=False))
    seen["sampler from dist"] = list(DistributedSampler(range(16), shuffle=False))


def compiled(seen, rank, world, d):
    """torch.compile calls the replica mode's collectives (a graph break), and refuses to
    compile one in (it would be replayed as a constant)."""
    double_and_sum = torch.compile(lambda t: xm.all_reduce(xm.REDUCE_SUM, t * 2) + 1, backend="openxla")
    seen["compiled all_reduce"] = [values(double_and_sum(torch.ones(2, device=d) * (rank + 10 * k))) for k in range(2)]
    functional = torch.compile(lambda t: torch.ops._c10d_functional.all_reduce(t, "sum", "") + 1, backend="openxla")
    try:
        seen["compiled functional all_reduce"] = values(functional(torch.ones(2, device=d)))
    except Exception as error:
        seen["compiled functional all_reduce"] = str(error)


def probe_worker(worker_id, rank):
    """A DataLoader worker's init, in a process of its own: the rank it was handed, and what
    torch_xla's world size and device names say there."""
    seen = {"rank": rank}
    for name, ask in (("world_size", xr.world_size), ("real devices", xm.xla_real_devices)):
        try:
            seen[name] = ask()
        except Exception as error:
            seen[name] = type(error).__name__
    with open(os.path.join(OUT, f"worker-{rank}.json"), "w") as out:
        json.dump(seen, out)


def workers(seen, rank, world, d):
    init = functools.partial(probe_worker, rank=rank)
    for _ in DataLoader(list(range(2)), batch_size=1, num_workers=1, worker_init_fn=init,
                        multiprocessing_context="spawn"):  # as under torch_xla's spawn on a TPU
        pass


def dataset():
    generator = torch.Generator().manual_seed(7)
    x = torch.randn(REPLICAS * STEPS * BATCH, 8, generator=generator)
    y = torch.tanh(x @ torch.randn(8, 1, generator=generator)) + 0.1 * torch.randn(len(x), 1, generator=generator)
    return TensorDataset(x, y)


def network(seed, d):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)).to(d)


def weights(model):
    return {name: value.detach().cpu().numpy().tobytes().hex() for name, value in model.state_dict().items()}


def train(rank, d):
    """Data-parallel, as torch_xla's examples do it."""
    model = network(rank, d)  # different initial weights on every replica ...
    xm.broadcast_master_param(model)  # ... until ordinal 0's are broadcast
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    data = dataset()
    sampler = DistributedSampler(data, num_replicas=xr.world_size(), rank=xr.global_ordinal(), seed=3)
    loader = pl.MpDeviceLoader(DataLoader(data, batch_size=BATCH, sampler=sampler), d)
    for epoch in range(EPOCHS):
        sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            xm.optimizer_step(optimizer)
    torch_xla.sync()
    return weights(model)


def train_as_one_replica():
    """The same job on one replica: each step takes every replica's batch, one after the other
    in ordinal order, and sums their gradients in that order."""
    d = torch_xla.device()
    model = network(0, d)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    data = dataset()
    samplers = [DistributedSampler(data, num_replicas=REPLICAS, rank=r, seed=3) for r in range(REPLICAS)]
    for epoch in range(EPOCHS):
        for sampler in samplers:
            sampler.set_epoch(epoch)
        batches = [iter(DataLoader(data, batch_size=BATCH, sampler=sampler)) for sampler in samplers]
        for _ in range(STEPS):
            total = None
            for replica_batches in batches:
                x, y = next(replica_batches)
                optimizer.zero_grad()
                nn.functional.mse_loss(model(x.to(d)), y.to(d)).backward()
                torch_xla.sync()
                grads = [p.grad.clone() for p in model.parameters()]
                total = grads if total is None else [t + g for t, g in zip(total, grads)]
            for parameter, summed in zip(model.parameters(), total):
                parameter.grad = summed * (1.0 / REPLICAS)
            optimizer.step()
            torch_xla.sync()
    dump("one replica", weights(model))


def _mp_fn(index):
    rank, world, d = xr.global_ordinal(), xr.world_size(), torch_xla.device()
    seen = {"index": index, "runtime": {name: getattr(xr, name)() for name in RUNTIME},
            "early world_size": early_world_size(), "master": xm.is_master_ordinal(),
            "torch threads": torch.get_num_threads(),
            "master (global)": xm.is_master_ordinal(local=False)}
    for part in (seed_table, functions, bucketized, meeting_points, distributed, compiled, workers):
        part(seen, rank, world, d)
    seen["trained"] = train(rank, d)
    dump(rank, seen)


if __name__ == "__main__":
    if sys.argv[2:] == ["--one-replica"]:
        train_as_one_replica()
    else:
        torch_xla.launch(_mp_fn, start_method="fork")
'''


# --- the table against the installed torch_xla (no processes) --------------------------------
def _tables():
    from xrt2pjrt.shim.cpu import launch, world

    return [
        (name, r)
        for name, table in (("WORLD", world.WORLD), ("WORKER", world.WORKER), ("LAUNCH", launch.LAUNCH))
        for r in table
    ]


@pytest.mark.xla
@pytest.mark.parametrize("table,replacement", _tables(), ids=lambda value: getattr(value, "target", value))
def test_every_target_exists_and_its_replacement_takes_its_arguments(table, replacement):
    slot = replacement.slot()
    if replacement.target.startswith("kernel:"):  # called by the dispatcher with the schema's arguments
        arguments = [argument.name for argument in slot.schema().arguments]
        assert list(inspect.signature(replacement.replica).parameters) == arguments
        return
    original = slot.get()
    assert callable(original)
    expected = _parameters(original)
    if expected is not None:
        assert _parameters(replacement.replica) in (expected, None), replacement.target


def _parameters(function):
    """(name, kind, default) of every parameter; None for a replacement that takes anything."""
    unwrapped = inspect.unwrap(function)
    if isinstance(unwrapped, types.BuiltinFunctionType) and unwrapped.__text_signature__ is None:
        return _pybind_parameters(unwrapped)
    parameters = list(inspect.signature(unwrapped).parameters.values())
    if [p.kind for p in parameters] == [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD]:
        return None
    return [(p.name, p.kind, p.default) for p in parameters]


def _pybind_parameters(function):
    """A pybind11 function's parameters, from its signature line (``name(a: T, b: U = 1) -> R``):
    positional-or-keyword, defaults as Python values. Its annotations name types only."""
    line = function.__doc__.splitlines()[0]
    assert line.startswith(f"{function.__name__}("), line
    inner, depth, parts, part = line[len(function.__name__) + 1 : line.rindex(") -> ")], 0, [], ""
    for char in inner:  # split at the commas outside brackets (Sequence[str], dict[str, int])
        depth += 1 if char in "[(" else -1 if char in "])" else 0
        if char == "," and depth == 0:
            parts, part = parts + [part], ""
        else:
            part += char
    parts = [p.strip() for p in parts + [part] if p.strip()]
    result = []
    for text in parts:
        name, _, rest = text.partition(":")
        default = eval(rest.partition(" = ")[2]) if " = " in rest else inspect.Parameter.empty
        result.append((name.strip(), inspect.Parameter.POSITIONAL_OR_KEYWORD, default))
    return result


def test_pybind_parameters_are_read_from_the_signature_line():
    def fake(): ...

    fake.__name__ = "f"
    fake.__doc__ = "f(arg0: dict[str, int], devices: collections.abc.Sequence[str] | None = None) -> list[str]\n"
    assert _pybind_parameters(fake) == [
        ("arg0", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
        ("devices", inspect.Parameter.POSITIONAL_OR_KEYWORD, None),
    ]


@pytest.mark.xla
def test_a_target_torch_xla_does_not_have_fails_loudly():
    from xrt2pjrt.shim.cpu import replacements

    for target in (
        "torch_xla.runtime:world_sizes",
        "torch_xla.runtimes:world_size",
        "torch.distributed.rendezvous:_rendezvous_handlers['xrt']",
        "kernel:_c10d_functional::wait_tensor",
    ):
        with pytest.raises(replacements.MissingTarget, match=target.replace("[", r"\[")):
            replacements.Replacement(target, len, "").slot()


# --- one run at 4 replicas, judged part by part ----------------------------------------------
def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XRT_", "XRT2PJRT_", "CPU_NUM_DEVICES", "PJRT_"))}
    env.update(PYTHONPATH=str(ROOT), XRT2PJRT_RENDEZVOUS_TIMEOUT="120")
    return env


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> dict:
    """Every replica's JSON by ordinal, plus the one-replica reference under 'one replica'."""
    folder = tmp_path_factory.mktemp("one_world")
    script = folder / "program.py"
    script.write_text(textwrap.dedent(PROGRAM))
    replicas = subprocess.Popen(
        [sys.executable, "-m", "xrt2pjrt", "run", "--nprocs", str(WORLD), str(script), str(folder)],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    one = subprocess.run(
        [sys.executable, str(script), str(folder), "--one-replica"],
        capture_output=True,
        text=True,
        env={**_env(), "PJRT_DEVICE": "CPU"},
        timeout=300,
    )
    try:
        output, _ = replicas.communicate(timeout=300)
    finally:
        replicas.kill()
    assert replicas.returncode == 0, output[-4000:]
    assert one.returncode == 0, one.stderr[-4000:]
    results = {path.stem: json.loads(path.read_text()) for path in folder.glob("*.json")}
    return {(int(name) if name.isdigit() else name): value for name, value in results.items()}


def _replicas(run: dict) -> dict[int, dict]:
    replicas = {o: seen for o, seen in run.items() if isinstance(o, int)}
    assert sorted(replicas) == list(range(WORLD))
    return replicas


@pytest.mark.slow
@pytest.mark.xla
def test_a_replicas_dataloader_worker_is_handed_its_rank_and_is_told_it_is_no_replica(run):
    """A worker started by spawn answered xr.world_size() 1 (and ordinal 0) on every replica:
    now it raises, as asking there on a TPU starts a runtime of its own, while the rank the
    replica hands over arrives."""
    for i in range(WORLD):
        assert run[f"worker-{i}"] == {"rank": i, "world_size": "NotAReplica", "real devices": "NotAReplica"}


@pytest.mark.xla
def test_torch_xla_runtime_answers_as_on_a_4_replica_pod(run):
    for i, seen in _replicas(run).items():
        assert seen["index"] == i  # torch_xla.launch passes the global ordinal
        assert seen["runtime"] == {
            "world_size": 4,
            "global_ordinal": i,
            "local_ordinal": i,
            "process_index": i,
            "process_count": 4,
            "local_process_count": 4,
            "host_index": 0,
            "global_device_count": 4,
            "local_device_count": 4,
            "addressable_device_count": 1,
            "global_runtime_device_count": 4,
            "addressable_runtime_device_count": 1,
        }
        assert (seen["master"], seen["master (global)"]) == (i == 0, i == 0)
        assert seen["early world_size"] == 4  # a name bound before the replicas started
        if not os.environ.get("OMP_NUM_THREADS"):  # the 4 replicas share the cores, as under torchrun
            assert seen["torch threads"] == max(1, os.cpu_count() // 4)


@pytest.mark.xla
def test_the_seeds_table_from_torch_xlas_own_collectives(run):
    for i, seen in _replicas(run).items():
        for pin in (False, True):
            assert seen[f"all_gather pin={pin}"] == [0.0, 1.0, 2.0, 3.0]
            assert seen[f"reduce_scatter pin={pin}"] == [-i]
            assert seen[f"all_to_all pin={pin}"] == [[[-i] * 4, [0.0, 1.0, 2.0, 3.0]]]
            assert seen[f"all_reduce pin={pin}"] == [10.0]
        assert seen["early all_reduce"] == [10.0]


@pytest.mark.xla
def test_torch_xla_core_functions_reduce_forward_and_backward(run):
    import torch

    generator = torch.Generator().manual_seed(3)
    w, x = torch.randn(3, 8, generator=generator), torch.randn(8, 5, generator=generator)
    for i, seen in _replicas(run).items():
        # all_reduce's backward is the local gradient, all_gather's the replica's slice (torch_xla's rules)
        assert seen["xf.all_reduce"] == {"out": [10.0, 8.0], "grad": [i + 1.0, i + 1.0]}
        assert seen["xf.all_gather"] == {
            "out": [[1.0, 2.0], [2.0, 2.0], [3.0, 2.0], [4.0, 2.0]],
            "grad": [[2.0 * i, 2.0 * i + 1]],
        }
        # each replica holds 2 columns of the weight; together they multiply by all of it
        assert torch.allclose(torch.tensor(seen["distributed_mm"]), w @ x, atol=1e-5)


@pytest.mark.xla
def test_sync_batch_norm_on_4_replicas_is_batch_norm_over_the_whole_batch(run):
    import torch

    generator = torch.Generator().manual_seed(5)
    batch, weight = torch.randn(16, 3, 2, 2, generator=generator), torch.randn(16, 3, 2, 2, generator=generator)
    norm = torch.nn.BatchNorm2d(3)
    batch.requires_grad_()
    out = norm(batch)
    (out * weight).sum().backward()
    replicas = _replicas(run)
    got = {
        key: torch.cat([torch.tensor(replicas[i]["SyncBatchNorm"][key]) for i in range(4)]) for key in ("out", "grad")
    }
    assert torch.allclose(got["out"], out.detach(), atol=1e-5)
    assert torch.allclose(got["grad"], batch.grad, atol=1e-5)
    for key, expected in (("weight", norm.weight.grad), ("bias", norm.bias.grad)):
        # each replica's parameter gradient covers its own quarter of the batch
        summed = sum(torch.tensor(replicas[i]["SyncBatchNorm"][key]) for i in range(4))
        assert torch.allclose(summed, expected, atol=1e-5), key


@pytest.mark.xla
def test_bucketized_collectives_span_the_replicas(run):
    for i, seen in _replicas(run).items():
        assert seen["all_gather_bucketized"] == [
            [0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0],
            [10.0] * 3 + [11.0] * 3 + [12.0] * 3 + [13.0] * 3,
        ]
        ramp_sum = [10.0 * k for k in range(8)]  # ramp * (1 + 2 + 3 + 4)
        assert seen["reduce_scatter_bucketized"] == [
            ramp_sum[2 * i : 2 * i + 2],
            [2 * v for v in ramp_sum[2 * i : 2 * i + 2]],
        ]
        assert seen["all_reduce_bucketized_gradients"] == [[3.0, 3.0], [6.0, 6.0, 6.0]]  # (0+1+2+3) * 0.5


@pytest.mark.xla
def test_rendezvous_is_a_barrier_and_exchanges_payloads(run):
    for i, seen in _replicas(run).items():
        assert seen["rendezvous"] == ["p0", "p1", "p2", "p3"]
        assert seen["xla_rendezvous"] == ["q0", "q1", "q2", "q3"]
        assert seen["mesh_reduce"] == 9.0
        if i != 3:  # ordinal 3 arrived a second late
            assert seen["rendezvous waited"] > 0.5
        assert seen["rendezvous subset"] == "Only global rendezvous is supported"  # as torch_xla on a pod


@pytest.mark.xla
def test_torch_distributed_xla_backend_spans_the_replicas(run):
    for i, seen in _replicas(run).items():
        assert seen["dist rank, size"] == [i, 4]
        assert seen["dist.all_reduce"] == [10.0]
        assert seen["dist.all_gather"] == [[0.0], [1.0], [2.0], [3.0]]
        assert seen["dist.broadcast"] == [20.0]
        if i != 0:  # ordinal 0 arrived a second late
            assert seen["barrier waited"] > 0.5
        assert seen["sampler from xr"] == seen["sampler from dist"] == [i, i + 4, i + 8, i + 12]
        assert seen["functional"] == [
            [0.0, 10.0, 20.0, 30.0],
            [0.0, 1.0, 2.0, 3.0],
            [10.0 * i],
            [0.0 + i, 10.0 + i, 20.0 + i, 30.0 + i],
            [1.0, 2.0, 3.0, 4.0],
        ]


@pytest.mark.xla
def test_torch_compile_calls_the_collectives_and_refuses_to_compile_them_in(run):
    for i, seen in _replicas(run).items():
        # (0+1+2+3 + 4 * 10k) * 2 + 1, for two different inputs: nothing replayed
        assert seen["compiled all_reduce"] == [[13.0, 13.0], [93.0, 93.0]]
        assert "inside torch.compile is not supported" in seen["compiled functional all_reduce"]


@pytest.mark.xla
def test_data_parallel_training_ends_bit_identical_and_equal_to_one_replica_on_the_whole_batch(run):
    """The replicas end equal bit for bit. The one-replica reference sums its micro-batches'
    gradients in ordinal order, as the replica mode does; it ended bit-identical on Intel
    CPUs, but on an AMD EPYC (AVX2) its weights differ in their last bits (cause not pinned
    down: XLA's CPU kernels), so it is held to float32 rounding over 3 epochs."""
    replicas = _replicas(run)
    assert all(replicas[i]["trained"] == replicas[0]["trained"] for i in range(4))
    trained, reference = replicas[0]["trained"], run["one replica"]
    assert trained.keys() == reference.keys()
    for name in trained:
        ours, theirs = (array.array("f", bytes.fromhex(h)) for h in (trained[name], reference[name]))
        assert len(ours) == len(theirs) and all(
            map(functools.partial(math.isclose, rel_tol=1e-5, abs_tol=1e-7), ours, theirs)
        ), name


# --- device names at 3 replicas, as a pod's runtime gives them -----------------------------------
DEVICE_NAMES = '''
import json, os, sys
import torch, torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr
from xrt2pjrt.shim.cpu import replacements


def error_of(call):
    try:
        call()
    except Exception as error:
        return f"{type(error).__name__}: {error}"


def fn(index):
    d = torch_xla.device()
    seen = {"real": xm.xla_real_devices([d]), "real (all)": xm.xla_real_devices(),
            "torch_xla.real_devices": torch_xla.real_devices(), "device_count": torch_xla.device_count(),
            "hw": xm.xla_device_hw(d), "xla_device": str(xm.xla_device()),
            "supported": xm.get_xla_supported_devices(), "all": torch_xla._XLAC._xla_get_all_devices(),
            "all runtime": torch_xla._XLAC._xla_get_all_runtime_devices(),
            "replication": xm.xla_replication_devices([d]),
            "attributes": xr.global_runtime_device_attributes(), "global_device_count": xr.global_device_count(),
            "addressable_device_count": xr.addressable_device_count()}
    # torch_xla's own spawn on a pod sets the world's devices for replication; XLA's graphs stay one replica's
    xm.set_replication(d, [d])
    seen["after set_replication"] = [torch_xla._XLAC._xla_get_replication_devices(),
                                     torch_xla._XLAC._xla_get_replication_devices_count()]
    x = torch.ones(2, device=d) * (index + 1)
    seen["computed"] = [(x * 2).cpu().tolist(), xm.all_reduce(xm.REDUCE_SUM, x).cpu().tolist()]
    xm.set_replication(d, [])
    seen["after set_replication []"] = torch_xla._XLAC._xla_get_replication_devices()
    seen["a subset"] = error_of(lambda: torch_xla._XLAC._xla_set_replication_devices([xm.xla_real_devices([d])[0]]))
    # a TPU's attributes (coordinates) of the other replicas' devices are not known here
    replacements.originals["torch_xla:_XLAC._xla_get_all_device_attributes"] = lambda: [
        {"name": "CPU:0", "coords": [0, 0, 0]}]
    seen["attributes beyond a name"] = error_of(xr.global_runtime_device_attributes)
    with open(os.path.join(sys.argv[1], f"{index}.json"), "w") as out:
        json.dump(seen, out)


if __name__ == "__main__":
    xmp.spawn(fn, args=())
'''


@pytest.mark.slow
@pytest.mark.xla
def test_device_names_are_a_pods_global_ones_on_3_replicas(tmp_path):
    """Replica k's device is CPU:k (a pod's runtime names a device by its global ordinal: TPU:k),
    and the world's views list 3 devices: the rank code reads from the name (torch_xla's early
    PJRT code, user scripts) got 0 on every replica, and a device count of 1."""
    script = tmp_path / "names.py"
    script.write_text(DEVICE_NAMES)
    ran = subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", "run", "--nprocs", "3", str(script), str(tmp_path)],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr[-4000:]
    world = ["CPU:0", "CPU:1", "CPU:2"]
    for i in range(3):
        seen = json.loads((tmp_path / f"{i}.json").read_text())
        assert seen.pop("a subset").startswith("ValueError: replication devices ['CPU:%d']" % i)
        assert seen.pop("attributes beyond a name").startswith(
            "NotImplementedError: xr.global_runtime_device_attributes() in the CPU replica mode"
        )
        assert seen == {
            "real": [f"CPU:{i}"],
            "real (all)": [f"CPU:{i}"],
            "torch_xla.real_devices": [f"CPU:{i}"],
            "device_count": 1,
            "hw": "CPU",
            "xla_device": "xla:0",
            "supported": ["xla:0"],
            "all": world,
            "all runtime": world,
            "replication": world,
            "attributes": [{"name": name} for name in world],
            "global_device_count": 3,
            "addressable_device_count": 1,
            "after set_replication": [world, 3],
            "computed": [[2.0 * (i + 1)] * 2, [6.0, 6.0]],
            "after set_replication []": [],
        }
