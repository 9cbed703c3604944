"""CPU multi-replica mode, end to end: real torch_xla replicas in real processes.

Every test runs an XRT-era program whose only xrt2pjrt-specific lines are the two imports
(``xrt2pjrt.shim.xla_model as xm``, ``xrt2pjrt.shim.xla_multiprocessing as xmp``) in a
fresh Python process with ``PJRT_DEVICE=CPU``; ``xmp.spawn(fn, nprocs=N)`` starts N replica
processes joined over gloo and a TCPStore on loopback (or across network namespaces).
Each replica writes what it saw to a JSON file; the test compares that to what XLA on a
pod returns (the seed's expected table, XLA's operation semantics) and to a plain-torch
reference of data-parallel training.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from xrt2pjrt.shim import cpu_replicas, settings

PYTHON = sys.executable
ROOT = Path(__file__).resolve().parent.parent

PRELUDE = textwrap.dedent(
    """
    import json, os, sys, time
    import torch
    import xrt2pjrt.shim.xla_model as xm
    import xrt2pjrt.shim.xla_multiprocessing as xmp

    OUT = sys.argv[1]

    def dump(name, value):
        with open(os.path.join(OUT, f"{name}.json"), "w") as handle:
            json.dump(value, handle)
    """
)

MAIN = textwrap.dedent(
    """
    if __name__ == "__main__":
        started = time.time()
        try:
            xmp.spawn(_mp_fn, args=(), nprocs=int(sys.argv[2]) or None, start_method=sys.argv[3])
        except Exception as error:
            dump("parent", {"error": type(error).__name__, "message": str(error),
                            "ended": time.time(), "started": started})
            sys.exit(3)
        dump("parent", {"ended": time.time(), "started": started})
    """
)


def _edited(program: str, old: str, new: str) -> str:
    """PROGRAM with OLD replaced by NEW; OLD must be there, or the edit would silently test nothing."""
    assert program.count(old) == 1, f"{old!r} is not once in the program"
    return program.replace(old, new)


def _program(tmp_path: Path, body: str) -> Path:
    script = tmp_path / f"program_{uuid.uuid4().hex[:8]}.py"
    script.write_text(PRELUDE + textwrap.dedent(body) + MAIN)
    return script


def _start(script: Path, nprocs: int | None, start_method: str, env: dict | None = None, prefix=()):
    out = script.parent / f"out_{uuid.uuid4().hex[:8]}"
    out.mkdir()
    environment = {**os.environ, "PJRT_DEVICE": "CPU", "PYTHONPATH": str(ROOT), **(env or {})}
    environment.pop("CPU_NUM_DEVICES", None)
    process = subprocess.Popen(
        [*prefix, PYTHON, str(script), str(out), str(nprocs or 0), start_method],
        env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    return process, out


def _finish(started, deadline: float = 120) -> tuple[int, dict, str]:
    """Wait for a program; return (exit code, {file stem: JSON}, its output)."""
    process, out = started
    try:
        output, _ = process.communicate(timeout=deadline)
    except subprocess.TimeoutExpired:
        process.kill()  # its replicas die with it (PR_SET_PDEATHSIG)
        output, _ = process.communicate(timeout=30)
        pytest.fail(f"program did not finish in {deadline}s:\n{output[-3000:]}")
    results = {path.stem: json.loads(path.read_text()) for path in out.glob("*.json")}
    return process.returncode, results, output


def _run(tmp_path, body, nprocs, start_method="fork", env=None, deadline=120):
    return _finish(_start(_program(tmp_path, body), nprocs, start_method, env), deadline)


def _replicas(results: dict) -> dict[int, dict]:
    return {int(name): value for name, value in results.items() if name.isdigit()}


# --- choosing the mode (no processes) ------------------------------------------------------
def test_requested_only_on_cpu_for_several_replicas(monkeypatch):
    monkeypatch.delenv(settings.CPU_REPLICAS.name, raising=False)
    monkeypatch.delenv("XRT2PJRT_CPU_REPLICA", raising=False)
    monkeypatch.setenv("PJRT_DEVICE", "CPU")
    assert cpu_replicas.requested(8) and cpu_replicas.requested(2)
    assert not cpu_replicas.requested(1)
    assert not cpu_replicas.requested(None)  # upstream's behaviour: one replica
    monkeypatch.setenv(settings.CPU_REPLICAS.name, "4")
    assert cpu_replicas.requested(None)
    monkeypatch.setenv("PJRT_DEVICE", "TPU")
    assert not cpu_replicas.requested(8)
    monkeypatch.setenv("PJRT_DEVICE", "CPU")
    monkeypatch.setenv(settings.CPU_REPLICAS.name, "many")
    with pytest.raises(ValueError, match="XRT2PJRT_CPU_REPLICAS"):
        cpu_replicas.requested(None)


def test_outside_a_replica_the_xrt_defaults_hold(monkeypatch):
    monkeypatch.delenv("XRT2PJRT_CPU_REPLICA", raising=False)
    assert not cpu_replicas.active()
    assert (cpu_replicas.get_ordinal(5), cpu_replicas.xrt_world_size(3), cpu_replicas.get_local_ordinal(2)) == (5, 3, 2)


# --- the seed -----------------------------------------------------------------------------
SEED = """
def _mp_fn(index):
    import torch_xla.runtime as xr

    rank = xm.get_ordinal()
    world_size = xm.xrt_world_size()
    device = xm.xla_device()
    xm.mark_step()
    seen = {"index": index, "world": world_size, "local": xm.get_local_ordinal(),
            "master": xm.is_master_ordinal(), "device": str(device),
            "torch_xla": [xr.world_size(), xr.global_ordinal(), xr.local_ordinal()]}
    for pin_layout in (False, True):
        t1 = (torch.ones(1) * rank).to(device)
        all_gather_out = xm.all_gather(t1, dim=0, pin_layout=pin_layout)
        t2 = -torch.arange(world_size, dtype=torch.float32).to(device)
        reduce_scatter_out = xm.reduce_scatter(
            xm.REDUCE_SUM, t2, scale=1.0 / world_size, scatter_dim=0,
            shard_count=world_size, pin_layout=pin_layout)
        t3 = torch.cat([-torch.arange(world_size, dtype=torch.float32).view(-1, 1, 1),
                        torch.ones(world_size, 1, 1) * rank], dim=1).to(device)
        all_to_all_out = xm.all_to_all(t3, split_dimension=0, concat_dimension=2,
                                       split_count=world_size, pin_layout=pin_layout)
        xm.mark_step()
        seen[f"pin_layout={pin_layout}"] = {
            "all_gather": all_gather_out.cpu().tolist(),
            "reduce_scatter": reduce_scatter_out.cpu().tolist(),
            "all_to_all": all_to_all_out.cpu().tolist(),
        }
    dump(rank, seen)
"""


def _assert_seed_table(replicas: dict[int, dict], world: int) -> None:
    """The seed's "expected behavior" for rank i, for both pin_layout values."""
    assert sorted(replicas) == list(range(world))
    for i, seen in replicas.items():
        assert seen["index"] == i and seen["world"] == world
        assert seen["torch_xla"] == [world, i, seen["local"]]  # torch_xla's own API: the same world
        for pin_layout in (False, True):
            outputs = seen[f"pin_layout={pin_layout}"]
            assert outputs["all_gather"] == list(range(world)), (i, pin_layout)
            assert outputs["reduce_scatter"] == [-i], (i, pin_layout)
            assert outputs["all_to_all"] == [[[-i] * world, list(range(world))]], (i, pin_layout)


@pytest.mark.xla
def test_seed_program_gives_the_expected_table_on_4_replicas_two_runs_at_once(tmp_path):
    """Both start methods, run at the same time: the runs must not collide on ports.
    (The 'spawn' run is kept small: each of its replicas imports torch_xla afresh.)"""
    script = _program(tmp_path, SEED)
    runs = {(world, method): _start(script, world, method) for world, method in ((4, "fork"), (2, "spawn"))}
    for (world, method), run in runs.items():
        code, results, output = _finish(run)
        assert code == 0, (method, output[-3000:])
        replicas = _replicas(results)
        _assert_seed_table(replicas, world)
        assert [replicas[i]["local"] for i in range(world)] == list(range(world))
        assert [replicas[i]["master"] for i in range(world)] == [True] + [False] * (world - 1)
        assert {r["device"] for r in replicas.values()} == {"xla:0"}  # one real CPU replica each


@pytest.mark.xla
@pytest.mark.slow
def test_seed_program_gives_the_expected_table_on_8_replicas(tmp_path):
    code, results, output = _run(tmp_path, SEED, 8, "fork", deadline=240)
    assert code == 0, output[-3000:]
    _assert_seed_table(_replicas(results), 8)


# --- every collective's semantics on 4 replicas --------------------------------------------
COLLECTIVES = """
def _mp_fn(index):
    import functools
    r = xm.get_ordinal()
    d = xm.xla_device()
    f = lambda *v: torch.tensor(v, dtype=torch.float32, device=d)
    i32 = lambda *v: torch.tensor(v, dtype=torch.int32, device=d)
    seen = {}
    x = f(r + 1.0, -(r + 1.0), 2.0 ** r)
    for kind in ("sum", "mul", "min", "max"):
        seen[kind] = xm.all_reduce(kind, x).cpu().tolist()
    seen["input untouched"] = x.cpu().tolist()
    bits = i32(r, 15 ^ (1 << r), 5)
    seen["and"] = xm.all_reduce(xm.REDUCE_AND, bits).cpu().tolist()
    seen["or"] = xm.all_reduce(xm.REDUCE_OR, bits).cpu().tolist()
    flags = torch.tensor([r % 2 == 0, True], device=d)
    seen["bool and"] = xm.all_reduce("and", flags).cpu().tolist()
    seen["bool or"] = xm.all_reduce("or", flags).cpu().tolist()
    seen["scaled"] = xm.all_reduce("sum", f(r), scale=0.25).cpu().tolist()
    seen["int scaled"] = xm.all_reduce("sum", i32(r), scale=2.0).cpu().tolist()
    seen["grouped"] = xm.all_reduce("sum", f(r), groups=[[0, 2], [1, 3]]).cpu().tolist()
    mixed = [f(*[r] * 5), i32(r, 1, 2), f(), torch.tensor(r + 0.5, device=d), f(*range(1001))]
    xm.all_reduce("sum", mixed)  # dtypes, sizes not a multiple of 4, empty, 0-dim: one call
    seen["mixed list"] = [t.cpu().tolist() for t in mixed[:4]] + [mixed[4].sum().item()]
    for groups in (None, [[0], [1], [2], [3]]):  # a result never shares memory with its input
        source = f(r, r)
        reduced = xm.all_reduce("sum", source, groups=groups)
        reduced.add_(100)
        seen[f"input kept, groups={groups}"] = source.cpu().tolist()
    a, b = f(r), f(r, 1.0).view(1, 2)
    inputs = [a, b]
    returned = xm.all_reduce("max", inputs)
    seen["list returned itself"] = returned is inputs
    seen["list in place"] = [a.cpu().tolist(), b.cpu().tolist()]

    v = f(r, 10 + r).view(1, 2)
    for pin in (True, False):
        seen[f"gather dim=1 pin={pin}"] = xm.all_gather(v, dim=1, pin_layout=pin).cpu().tolist()
        seen[f"gather dim=-1 pin={pin}"] = xm.all_gather(v, dim=-1, pin_layout=pin).cpu().tolist()
        seen[f"gather groups pin={pin}"] = xm.all_gather(
            f(r), groups=[[3, 1], [0, 2]], pin_layout=pin).cpu().tolist()
    out = torch.zeros(4, device=d)
    xm.all_gather(f(r), output=out, pin_layout=False)
    seen["gather output="] = out.cpu().tolist()
    seen["gather list"] = [t.cpu().tolist() for t in xm.all_gather([f(r), i32(r, r)], pin_layout=False)]
    seen["gather bfloat16"] = xm.all_gather(
        torch.tensor([r + 0.5], dtype=torch.bfloat16, device=d), pin_layout=False).float().cpu().tolist()

    ramp = torch.arange(4, dtype=torch.float32, device=d) * (r + 1)
    seen["reduce_scatter groups"] = xm.reduce_scatter(
        "sum", ramp, 1.0, 0, 2, groups=[[0, 1], [2, 3]]).cpu().tolist()
    seen["reduce_scatter list"] = [t.cpu().tolist() for t in xm.reduce_scatter(
        "max", [ramp, ramp.view(4, 1) * 2], 1.0, 0, 4)]
    shard = torch.zeros(1, device=d)
    xm.reduce_scatter("sum", ramp, 0.5, 0, 4, output=shard)
    seen["reduce_scatter output="] = shard.cpu().tolist()
    larger = torch.zeros(4, device=d)  # torch_xla's out=: the output takes the result's shape
    xm.reduce_scatter("sum", ramp, 1.0, 0, 4, output=larger)
    seen["reduce_scatter output= of another shape"] = larger.cpu().tolist()

    mine = f(10 * r, 10 * r + 1).view(2, 1)
    seen["all_to_all groups"] = xm.all_to_all(mine, 0, 1, 2, groups=[[1, 0], [3, 2]]).cpu().tolist()

    seen["permute ring"] = xm.collective_permute(f(r + 1), [[0, 1], [1, 2], [2, 3], [3, 0]]).cpu().tolist()
    seen["permute one pair"] = xm.collective_permute(f(r + 1), [[0, 2]]).cpu().tolist()

    if r == 2:
        time.sleep(2)
    seen["late arrived"] = time.time()
    seen["rendezvous"] = [p.decode() for p in xm.rendezvous("hello", str(r).encode())]
    seen["late left"] = time.time()
    if r in (1, 3):
        seen["rendezvous subset"] = [p.decode() for p in xm.rendezvous("odd", str(r).encode(), [1, 3])]
    seen["mesh_reduce"] = xm.mesh_reduce("loss", r * 1.5, sum)
    checkpoint = os.path.join(OUT, "checkpoint.pt")
    xm.save({"weights": f(r)}, checkpoint)  # the master writes; everyone leaves after it wrote
    seen["checkpoint"] = torch.load(checkpoint)["weights"].tolist()
    dump(r, seen)
"""


@pytest.mark.xla
def test_collectives_have_xla_semantics_across_4_processes(tmp_path):
    code, results, output = _run(tmp_path, COLLECTIVES, 4, "fork")
    assert code == 0, output[-3000:]
    seen = _replicas(results)
    assert sorted(seen) == [0, 1, 2, 3]
    for r, got in seen.items():
        assert got["sum"] == [10.0, -10.0, 15.0]
        assert got["mul"] == [24.0, 24.0, 64.0]
        assert got["min"] == [1.0, -4.0, 1.0]
        assert got["max"] == [4.0, -1.0, 8.0]
        assert got["input untouched"] == [r + 1.0, -(r + 1.0), 2.0**r]
        assert got["and"] == [0, 0, 5]  # 0&1&2&3, 14&13&11&7
        assert got["or"] == [3, 15, 5]  # 0|1|2|3, 14|13|11|7
        assert got["bool and"] == [False, True]
        assert got["bool or"] == [True, True]
        assert got["scaled"] == [1.5]
        assert got["int scaled"] == [12]
        assert got["grouped"] == [[2.0], [4.0]][r % 2]
        assert got["mixed list"] == [[6.0] * 5, [6, 4, 8], [], 8.0, 4 * sum(range(1001))]
        assert got["input kept, groups=None"] == got["input kept, groups=[[0], [1], [2], [3]]"] == [r, r]
        assert got["list returned itself"] is True
        assert got["list in place"] == [[3.0], [[3.0, 1.0]]]
        for pin in (True, False):
            assert got[f"gather dim=1 pin={pin}"] == [[0.0, 10.0, 1.0, 11.0, 2.0, 12.0, 3.0, 13.0]]
            assert got[f"gather dim=-1 pin={pin}"] == [[0.0, 10.0, 1.0, 11.0, 2.0, 12.0, 3.0, 13.0]]
            # a group's result follows the order in which the group lists its members
            assert got[f"gather groups pin={pin}"] == ([3.0, 1.0] if r in (1, 3) else [0.0, 2.0])
        assert got["gather output="] == [0.0, 1.0, 2.0, 3.0]
        assert got["gather list"] == [[0.0, 1.0, 2.0, 3.0], [0, 0, 1, 1, 2, 2, 3, 3]]
        assert got["gather bfloat16"] == [0.5, 1.5, 2.5, 3.5]
        # group [0, 1] sums ramp*(1+2), group [2, 3] ramp*(3+4); position p keeps shard p
        assert got["reduce_scatter groups"] == [[0.0, 3.0], [6.0, 9.0], [0.0, 7.0], [14.0, 21.0]][r]
        assert got["reduce_scatter list"] == [[4.0 * r], [[8.0 * r]]]  # max is ordinal 3's ramp
        assert got["reduce_scatter output="] == [r * 10 * 0.5]
        assert got["reduce_scatter output= of another shape"] == [r * 10.0]
        # member p of [1, 0] / [3, 2] receives chunk p of every member, in listed order
        assert got["all_to_all groups"] == {1: [[10.0, 0.0]], 0: [[11.0, 1.0]], 3: [[30.0, 20.0]], 2: [[31.0, 21.0]]}[r]
        assert got["permute ring"] == [float((r - 1) % 4 + 1)]
        assert got["permute one pair"] == ([1.0] if r == 2 else [0.0])  # no source: zeros
        assert got["rendezvous"] == ["0", "1", "2", "3"]
        assert got["late left"] >= seen[2]["late arrived"]  # nobody left before the late one came
        if r in (1, 3):
            assert got["rendezvous subset"] == ["1", "3"]
        assert got["mesh_reduce"] == 9.0
        assert got["checkpoint"] == [0.0]  # ordinal 0's, complete when xm.save returned


# --- data-parallel training -----------------------------------------------------------------
TRAINING = """
import torch.nn as nn
import torch_xla.distributed.parallel_loader as pl
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

EPOCHS, BATCH, LR = 6, 4, 0.05

def dataset():
    generator = torch.Generator().manual_seed(1)
    features = torch.randn(64, 4, generator=generator)
    target = features @ torch.tensor([[1.5], [-2.0], [0.5], [3.0]]) + 0.25
    return TensorDataset(features, target)

def _mp_fn(index):
    device = xm.xla_device()
    torch.manual_seed(xm.get_ordinal())  # different initial weights on every replica ...
    model = nn.Linear(4, 1).to(device)
    xm.broadcast_master_param(model)  # ... until ordinal 0's are broadcast
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    data = dataset()
    sampler = DistributedSampler(data, num_replicas=xm.xrt_world_size(), rank=xm.get_ordinal(),
                                 shuffle=False)
    loader = pl.MpDeviceLoader(DataLoader(data, batch_size=BATCH, sampler=sampler, drop_last=True), device)
    losses = []
    for epoch in range(EPOCHS):
        total = torch.zeros((), device=device)
        for features, target in loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(features), target)
            loss.backward()
            xm.optimizer_step(optimizer)
            total += loss.detach()
        losses.append(xm.mesh_reduce("epoch loss", total.item(), lambda values: sum(values) / len(values)))
    dump(xm.get_ordinal(), {
        "indices": list(sampler),
        "losses": losses,
        "weight": model.weight.detach().cpu().tolist(),
        "bias": model.bias.detach().cpu().tolist(),
    })
"""


def _reference_training(world: int) -> tuple[list, list]:
    """The same job as one plain-torch process: ordinal 0's initial weights (seed 0), each
    step averages the replicas' gradients."""
    import torch
    import torch.nn as nn

    generator = torch.Generator().manual_seed(1)
    features = torch.randn(64, 4, generator=generator)
    target = features @ torch.tensor([[1.5], [-2.0], [0.5], [3.0]]) + 0.25
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    shards = [list(range(r, 64, world)) for r in range(world)]
    for _epoch in range(6):
        for step in range(len(shards[0]) // 4):
            optimizer.zero_grad()
            for shard in shards:
                batch = shard[step * 4 : (step + 1) * 4]
                (nn.functional.mse_loss(model(features[batch]), target[batch]) / world).backward()
            optimizer.step()
    return model.weight.detach().tolist(), model.bias.detach().tolist()


@pytest.mark.xla
def test_data_parallel_training_keeps_replicas_identical_and_matches_a_reference(tmp_path):
    # nprocs=None, as XRT-era programs often pass, with the replica count from the environment
    code, results, output = _run(tmp_path, TRAINING, None, "fork", env={"XRT2PJRT_CPU_REPLICAS": "4"},
                                 deadline=180)
    assert code == 0, output[-3000:]
    seen = _replicas(results)
    assert sorted(seen) == [0, 1, 2, 3]
    # DistributedSampler over the shim's world size and ordinal: disjoint shards covering all
    shards = [set(seen[r]["indices"]) for r in range(4)]
    assert set().union(*shards) == set(range(64)) and sum(len(s) for s in shards) == 64
    losses = seen[0]["losses"]
    assert losses[-1] < losses[0] / 4, losses
    assert all(seen[r]["losses"] == losses for r in range(4))  # mesh_reduce agrees everywhere
    for r in range(1, 4):  # bit-identical weights on every replica
        assert seen[r]["weight"] == seen[0]["weight"] and seen[r]["bias"] == seen[0]["bias"]
    weight, bias = _reference_training(4)
    assert seen[0]["weight"][0] == pytest.approx(weight[0], abs=1e-4)
    assert seen[0]["bias"] == pytest.approx(bias, abs=1e-4)


# --- faults ---------------------------------------------------------------------------------
FAULTS = """
import signal

def _mp_fn(index):
    r = xm.get_ordinal()
    mode = os.environ["FAULT"]
    dump(f"pid{r}", os.getpid())
    xm.all_reduce("sum", torch.ones(2, device=xm.xla_device()))
    if mode == "exit" and r == 1:
        dump("fault", time.time())
        os._exit(7)
    if mode == "kill" and r == 2:
        dump("fault", time.time())
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "raise" and r == 2:
        dump("fault", time.time())
        raise ValueError("boom in replica 2")
    if mode == "tags":
        xm.rendezvous("checkpoint" if r < 2 else "eval")
    if mode == "late" and r == 2:
        time.sleep(120)
    for _ in range(1000):  # the survivors keep waiting for the faulty one
        xm.rendezvous("step")
        xm.all_reduce("sum", torch.ones(2, device=xm.xla_device()))
"""

FAULT_CASES = {
    # mode: (words the parent's error must contain)
    "exit": ["CPU replica 1", "exited with code 7"],
    "kill": ["CPU replica 2", "killed by SIGKILL"],
    "raise": ["CPU replica 2", "exited with code 1", "ValueError: boom in replica 2"],
    "tags": ["rendezvous('checkpoint')", "rendezvous('eval')", "ordinals [0, 1]", "ordinals [2]"],
    "late": ["timed out", "replicas [2] never arrived"],
}


def _assert_all_ended(results: dict) -> None:
    for name, pid in results.items():
        if name.startswith("pid"):
            assert not _alive(pid), name


@pytest.mark.xla
def test_faults_end_every_replica_with_an_error_naming_the_cause(tmp_path):
    """Five faulty runs side by side (which also shows that concurrent runs do not collide)."""
    script = _program(tmp_path, FAULTS)
    runs = {
        mode: _start(script, 3, "fork", env={"FAULT": mode, "XRT2PJRT_RENDEZVOUS_TIMEOUT": "4"})
        for mode in FAULT_CASES
    }
    for mode, run in runs.items():
        code, results, output = _finish(run, deadline=120)
        assert code == 3, (mode, output[-3000:])
        parent = results["parent"]
        assert parent["error"] == "ReplicaFailed", (mode, parent)
        for words in FAULT_CASES[mode]:
            assert words in parent["message"], (mode, parent["message"])
        if "fault" in results:  # the parent noticed within seconds of the fault
            assert parent["ended"] - results["fault"] < 15, mode
        _assert_all_ended(results)


ORPHANS = """
def _mp_fn(index):
    dump(f"pid{xm.get_ordinal()}", os.getpid())
    time.sleep(300)
"""


@pytest.mark.xla
def test_replicas_die_with_a_killed_parent(tmp_path):
    """A test runner that kills the program must not leave replicas behind."""
    process, out = _start(_program(tmp_path, ORPHANS), 3, "fork")
    try:
        deadline = time.monotonic() + 120
        while len(list(out.glob("pid*.json"))) < 3:
            assert time.monotonic() < deadline and process.poll() is None, "replicas did not start"
            time.sleep(0.2)
        process.kill()
        process.communicate(timeout=30)
        pids = [json.loads(path.read_text()) for path in out.glob("pid*.json")]
        ended = time.monotonic() + 10
        while any(_alive(pid) for pid in pids) and time.monotonic() < ended:
            time.sleep(0.1)
        assert not any(_alive(pid) for pid in pids)
    finally:
        process.kill()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError):  # a zombie is dead, only not yet reaped by init
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split()[0] != "Z"
    return True


# --- several hosts --------------------------------------------------------------------------
HOSTS = _edited(
    SEED,
    "    dump(rank, seen)\n",
    '    seen["host"] = int(os.environ["XRT2PJRT_CPU_HOST_INDEX"])\n'
    '    seen["payloads"] = [p.decode() for p in xm.rendezvous("hosts", str(seen["host"]).encode())]\n'
    "    dump(rank, seen)\n",
)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


JOB_SECRET = uuid.uuid4().hex  # the same on every host of one job


def _host_env(index: int, master: str, port: int, **extra) -> dict:
    return {"XRT2PJRT_CPU_HOSTS": "2", "XRT2PJRT_CPU_HOST_INDEX": str(index), "MASTER_ADDR": master,
            "XRT2PJRT_RENDEZVOUS_PORT": str(port), "XRT2PJRT_RENDEZVOUS_TIMEOUT": "60",
            "XRT2PJRT_JOB_SECRET": JOB_SECRET, **extra}


def _pod_replicas(runs) -> dict[int, dict]:
    """Every host's run finished and succeeded; their replicas' results by ordinal. A
    failure shows every host's output: the first to fail is often only waiting for another."""
    finished = [_finish(run) for run in runs]
    outputs = "\n".join(f"--- host run {k} (exit {code}):\n{output[-3000:]}"
                         for k, (code, _, output) in enumerate(finished))
    assert all(code == 0 for code, _, _ in finished), outputs
    return {ordinal: value for _, results, _ in finished for ordinal, value in _replicas(results).items()}


def _assert_pod_layout(replicas: dict[int, dict]) -> None:
    """Two hosts x two processes: host h runs ordinals 2h, 2h+1 with local ordinals 0, 1."""
    _assert_seed_table(replicas, 4)
    assert [replicas[o]["host"] for o in range(4)] == [0, 0, 1, 1]
    assert [replicas[o]["local"] for o in range(4)] == [0, 1, 0, 1]
    assert [replicas[o]["master"] for o in range(4)] == [True, False, True, False]
    assert all(replicas[o]["payloads"] == ["0", "0", "1", "1"] for o in range(4))


@pytest.mark.xla
@pytest.mark.slow
def test_two_hosts_on_loopback_join_through_the_store_of_host_0(tmp_path):
    script = _program(tmp_path, HOSTS)
    port = _free_port()
    runs = [_start(script, 2, "fork", env=_host_env(h, "127.0.0.1", port)) for h in (1, 0)]
    _assert_pod_layout(_pod_replicas(runs))


@pytest.mark.xla
@pytest.mark.slow
def test_a_failure_on_one_host_ends_the_other_host(tmp_path):
    script = _program(tmp_path, _edited(FAULTS, 'mode == "exit" and r == 1', 'mode == "exit" and r == 3'))
    port = _free_port()
    runs = [_start(script, 2, "fork", env=_host_env(h, "127.0.0.1", port, FAULT="exit")) for h in (0, 1)]
    outcomes = [_finish(run) for run in runs]
    for code, results, output in outcomes:
        assert code == 3, output[-3000:]
        assert "CPU replica 3 on host 1" in results["parent"]["message"]
        assert "exited with code 7" in results["parent"]["message"]
        _assert_all_ended(results)
    assert "another host failed" in outcomes[0][1]["parent"]["message"]


@contextlib.contextmanager
def _network_namespaces(count: int):
    """``count`` namespaces joined by veth pairs to a bridge: hosts 10.231.x.(h+1)/24."""
    if shutil.which("ip") is None:
        pytest.skip("needs the `ip` tool (iproute2) to make network namespaces")
    tag = uuid.uuid4().hex[:6]
    names = [f"xrtns{tag}{h}" for h in range(count)]
    bridge = f"xrtbr{tag}"
    subnet = 10 + int(tag[:2], 16) % 200
    commands = []

    def ip(*words):
        commands.append(words)
        done = subprocess.run(["ip", *words], capture_output=True, text=True)
        if done.returncode:
            raise OSError(f"ip {' '.join(words)}: {done.stderr.strip()}")

    try:
        try:
            ip("link", "add", bridge, "type", "bridge")
            ip("link", "set", bridge, "up")
            addresses = []
            for h, name in enumerate(names):
                ip("netns", "add", name)
                ip("link", "add", f"{name}a", "type", "veth", "peer", "name", f"{name}b")
                ip("link", "set", f"{name}a", "master", bridge)
                ip("link", "set", f"{name}a", "up")
                ip("link", "set", f"{name}b", "netns", name)
                address = f"10.231.{subnet}.{h + 1}"
                ip("-n", name, "addr", "add", f"{address}/24", "dev", f"{name}b")
                ip("-n", name, "link", "set", f"{name}b", "up")
                ip("-n", name, "link", "set", "lo", "up")
                addresses.append(address)
        except OSError as error:
            pytest.skip(f"needs root and CAP_NET_ADMIN to make network namespaces ({error})")
        yield list(zip(names, addresses))
    finally:
        for name in names:
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
            subprocess.run(["ip", "link", "del", f"{name}a"], capture_output=True)
        subprocess.run(["ip", "link", "del", bridge], capture_output=True)


@pytest.mark.xla
@pytest.mark.slow
def test_two_hosts_in_separate_network_namespaces(tmp_path):
    """Each "host" has its own network stack and address; only the bridge joins them."""
    script = _program(tmp_path, HOSTS)
    with _network_namespaces(2) as hosts:
        (_, master), _ = hosts
        runs = [
            _start(script, 2, "fork", env=_host_env(h, master, 29400), prefix=("ip", "netns", "exec", name))
            for h, (name, _) in reversed(list(enumerate(hosts)))
        ]
        replicas = _pod_replicas(runs)
    _assert_pod_layout(replicas)


SIGNAL_IN_REPLICA = textwrap.dedent("""
    import signal
    import torch_xla.distributed.xla_multiprocessing as xmp

    def _mp_fn(index):
        signal.signal(signal.SIGTERM, lambda *a: None)

    if __name__ == '__main__':
        xmp.spawn(_mp_fn)
""")


@pytest.mark.slow
@pytest.mark.xla
def test_the_spawned_function_runs_in_a_thread_as_torch_xla_runs_it_on_a_tpu(tmp_path):
    """signal.signal in _mp_fn raises on a TPU (torch_xla runs fn in a thread per device;
    checked with torch_xla's own spawn on CPU): it passed in the CPU replicas, which ran fn in
    the main thread, hiding the crash."""
    script = tmp_path / "train.py"
    script.write_text(SIGNAL_IN_REPLICA)
    ran = subprocess.run([sys.executable, "-m", "xrt2pjrt", "run", "--nprocs", "2", str(script)], capture_output=True,
                         text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert ran.returncode != 0
    assert "ValueError: signal only works in main thread" in ran.stdout + ran.stderr


WORK_ALONE_AFTER_THE_LAST_COLLECTIVE = """
def _mp_fn(index):
    xm.rendezvous("trained")
    if xm.is_master_ordinal():
        time.sleep(6)  # a final evaluation, an upload: longer than the rendezvous timeout below
    dump(str(index), {"ended": time.time()})
"""


@pytest.mark.slow
@pytest.mark.xla
def test_a_replica_may_work_alone_after_the_others_returned_for_longer_than_the_rendezvous_timeout(tmp_path):
    """On a pod a replica whose function returned waits for nobody: the master's work after
    the last collective may take longer than any rendezvous timeout (the CPU mode's own exit
    barrier timed out after it, killed the master mid-work and failed the run)."""
    code, results, output = _run(tmp_path, WORK_ALONE_AFTER_THE_LAST_COLLECTIVE, 2,
                                 env={"XRT2PJRT_RENDEZVOUS_TIMEOUT": "2"})
    assert code == 0, output[-3000:]
    replicas = _replicas(results)
    assert sorted(replicas) == [0, 1] and replicas[0]["ended"] - replicas[1]["ended"] > 4
    assert "error" not in results["parent"]


MASTER_SAVES_WHILE_ANOTHER_FAILS = """
def _mp_fn(index):
    xm.all_reduce("sum", torch.ones(2, device=xm.xla_device()))
    if index == 0:
        time.sleep(3)  # the last checkpoint, written while replica 1 has already failed
        dump("saved", time.time())
    else:
        raise ValueError("boom after the last collective")
"""


@pytest.mark.slow
@pytest.mark.xla
def test_a_replica_that_waits_on_nobody_finishes_when_another_fails_as_on_a_pod(tmp_path):
    """torch_xla's spawn on a pod waits for every process before it raises: the master's
    last checkpoint is written although replica 1 failed (the CPU mode ended it within 0.2 s)."""
    code, results, output = _run(tmp_path, MASTER_SAVES_WHILE_ANOTHER_FAILS, 2)
    assert code == 3, output[-3000:]
    assert "saved" in results, output[-3000:]
    assert results["parent"]["error"] == "ReplicaFailed" and "boom after the last collective" in results["parent"]["message"]


PRINTS_JSON = """
import json, sys, torch, torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr
import torch_xla.distributed.xla_multiprocessing as xmp


def _mp_fn(index):
    d = torch_xla.device()
    # one write per line: the replicas share the pipe (and may run unbuffered)
    sys.stdout.write(f"before {index}\\n")  # not flushed: may be in Python's buffer when gloo first connects
    x = torch.tensor([float(xr.global_ordinal())], device=d)
    total = xm.all_reduce(xm.REDUCE_SUM, x).cpu().item()  # the world's gloo group
    backwards = xm.all_gather(x, groups=[[2, 1, 0]]).cpu().tolist()  # another group: another order
    if xm.is_master_ordinal():
        sys.stdout.write(json.dumps({"sum": total, "gather": backwards}) + "\\n")
    sys.stdout.write(f"after {index}\\n")
    sys.stdout.flush()


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=())
"""


@pytest.mark.xla
def test_a_replicas_stdout_holds_only_what_the_program_printed(tmp_path):
    """gloo prints "[Gloo] Rank r is connected to k peer ranks ..." on stdout (fd 1, from C++)
    for every group it connects: the program's JSON on stdout did not parse. It goes to stderr
    now, and fd 1 is the program's stdout again after."""
    script = tmp_path / "prints_json.py"
    script.write_text(PRINTS_JSON)
    ran = subprocess.run([sys.executable, "-m", "xrt2pjrt", "run", "--nprocs", "3", str(script)], capture_output=True,
                         text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert ran.returncode == 0, ran.stderr[-3000:]
    lines = ran.stdout.splitlines()
    assert sorted(lines) == sorted([f"before {i}" for i in range(3)] + [f"after {i}" for i in range(3)]
                                   + ['{"sum": 3.0, "gather": [2.0, 1.0, 0.0]}']), ran.stdout
    # what gloo printed is on stderr: each of the 3 replicas connects 2 groups
    assert ran.stderr.count("[Gloo] Rank") == 6, ran.stderr[-3000:]


STDOUT_INTO_STDERR = """
import os, threading
from xrt2pjrt.shim import cpu_replicas, settings

os.write(1, b"out 1\\n")
try:
    with cpu_replicas._stdout_into_stderr():
        os.write(1, b"err 1\\n")
        raise KeyError("a failure inside")
except KeyError:
    pass
os.write(1, b"out 2\\n")
inside, leave = threading.Event(), threading.Event()


def other():
    with cpu_replicas._stdout_into_stderr():
        inside.set()
        leave.wait()
        os.write(1, b"err 4\\n")


thread = threading.Thread(target=other)
with cpu_replicas._stdout_into_stderr():
    thread.start()
    inside.wait()
    os.write(1, b"err 2\\n")
os.write(1, b"err 3\\n")  # the other thread is still inside
leave.set()
thread.join()
os.write(1, b"out 3\\n")
"""


def test_stdout_into_stderr_restores_fd_1_when_the_block_raises_and_when_the_last_thread_leaves():
    ran = subprocess.run([sys.executable, "-c", STDOUT_INTO_STDERR], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert ran.returncode == 0, ran.stderr
    assert (ran.stdout, ran.stderr) == ("out 1\nout 2\nout 3\n", "err 1\nerr 2\nerr 3\nerr 4\n")


LONG_ON_HOST_1 = """
def _mp_fn(index):
    dump(f"pid{xm.get_ordinal()}", os.getpid())
    xm.rendezvous("started")
    if os.environ["XRT2PJRT_CPU_HOST_INDEX"] == "1":
        time.sleep(120)
"""


@pytest.mark.xla
@pytest.mark.slow
def test_a_host_whose_launcher_is_killed_does_not_leave_the_others_waiting_for_ever(tmp_path):
    """Host 1's launcher gets SIGKILL (no abort posted; its replica dies with it): host 0's
    replica, which returned and waits for the others with no deadline, sees host 1 stop
    counting and fails the run within the rendezvous timeout (it had waited for ever)."""
    script = _program(tmp_path, LONG_ON_HOST_1)
    port = _free_port()
    runs = [_start(script, 1, "fork", env=_host_env(h, "127.0.0.1", port, XRT2PJRT_RENDEZVOUS_TIMEOUT="4"))
            for h in (0, 1)]
    host_1, out_1 = runs[1]
    deadline = time.monotonic() + 120
    while not (out_1 / "pid1.json").exists():
        assert time.monotonic() < deadline, "host 1's replica never started"
        time.sleep(0.2)
    time.sleep(1)
    killed = time.monotonic()
    host_1.kill()
    code, results, output = _finish(runs[0], deadline=60)
    assert code == 3, output[-3000:]
    assert "CPU host 1 stopped answering" in results["parent"]["message"]
    assert time.monotonic() - killed < 30
    host_1.communicate(timeout=30)
