"""xrt2pjrt.shim.cpu.collectives, end to end: XLA's results from real torch_xla replicas in real processes.

The seed's expected table, XLA's operation semantics for every collective, and
data-parallel training against a plain-torch reference (see replica_programs).
"""

from __future__ import annotations

import pytest

from replica_programs import (
    SEED,
    assert_seed_table,
    by_ordinal,
    finish_program,
    run_program,
    start_program,
    write_program,
)


@pytest.mark.slow
@pytest.mark.xla
def test_seed_program_gives_the_expected_table_on_4_replicas_two_runs_at_once(tmp_path):
    """Both start methods, run at the same time: the runs must not collide on ports.
    (The 'spawn' run is kept small: each of its replicas imports torch_xla afresh.)"""
    script = write_program(tmp_path, SEED)
    runs = {(world, method): start_program(script, world, method) for world, method in ((4, "fork"), (2, "spawn"))}
    for (world, method), run in runs.items():
        code, results, output = finish_program(run)
        assert code == 0, (method, output[-3000:])
        replicas = by_ordinal(results)
        assert_seed_table(replicas, world)
        assert [replicas[i]["local"] for i in range(world)] == list(range(world))
        assert [replicas[i]["master"] for i in range(world)] == [True] + [False] * (world - 1)
        assert {r["device"] for r in replicas.values()} == {"xla:0"}  # one real CPU replica each


@pytest.mark.xla
@pytest.mark.slow
def test_seed_program_gives_the_expected_table_on_8_replicas(tmp_path):
    code, results, output = run_program(tmp_path, SEED, 8, "fork", deadline=240)
    assert code == 0, output[-3000:]
    assert_seed_table(by_ordinal(results), 8)


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


@pytest.mark.slow
@pytest.mark.xla
def test_collectives_have_xla_semantics_across_4_processes(tmp_path):
    code, results, output = run_program(tmp_path, COLLECTIVES, 4, "fork")
    assert code == 0, output[-3000:]
    seen = by_ordinal(results)
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


@pytest.mark.slow
@pytest.mark.xla
def test_data_parallel_training_keeps_replicas_identical_and_matches_a_reference(tmp_path):
    # nprocs=None, as XRT-era programs often pass, with the replica count from the environment
    code, results, output = run_program(
        tmp_path, TRAINING, None, "fork", env={"XRT2PJRT_CPU_REPLICAS": "4"}, deadline=180
    )
    assert code == 0, output[-3000:]
    seen = by_ordinal(results)
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
