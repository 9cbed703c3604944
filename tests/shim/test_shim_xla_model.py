"""xrt2pjrt.shim.xla_model on real torch_xla 2.9, PJRT_DEVICE=CPU, one replica.

Everything that starts torch_xla's runtime runs in a fresh subprocess (``run_xla``), so
the runtime is fresh for each test and the pytest process never starts one. Each script
turns DeprecationWarning into an error: no deprecation noise from torch_xla may reach a
user through a name the shim provides.
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.xla

PREAMBLE = """\
import json, os, sys, warnings
import torch
import torch_xla
import xrt2pjrt.shim.xla_model as xm
import xrt2pjrt.shim.xla_multiprocessing as xmp
warnings.simplefilter("error", DeprecationWarning)
"""


def run_xla(code: str, *, env: dict | None = None, timeout: float = 180) -> str:
    """Run PREAMBLE + ``code`` in a fresh interpreter with PJRT_DEVICE=CPU; return stdout."""
    full_env = {**os.environ, "PJRT_DEVICE": "CPU", "CPU_NUM_DEVICES": "1", **(env or {})}
    for name in ("XRT2PJRT_CPU_REPLICAS", "XRT2PJRT_RENDEZVOUS_TRANSPORT", "MASTER_ADDR"):
        full_env.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-c", PREAMBLE + textwrap.dedent(code)],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout


def last_json(stdout: str):
    return json.loads(stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_ordinals_answer_defval_before_the_runtime_and_replica_ids_after():
    stdout = run_xla("""
        from xrt2pjrt.shim import topology
        started = torch_xla._XLAC._xla_runtime_is_initialized
        before = [xm.xrt_world_size(), xm.xrt_world_size(defval=4), xm.get_ordinal(defval=3),
                  xm.get_local_ordinal(defval=2), xm.is_master_ordinal(), started()]
        device = xm.xla_device()
        after = [xm.xrt_world_size(), xm.get_ordinal(), xm.get_local_ordinal(),
                 xm.is_master_ordinal(local=False), str(device), started(),
                 xm.get_xla_supported_devices(), xm.get_xla_supported_devices("CPU", 1),
                 xm.get_xla_supported_devices("TPU")]
        xm.master_print("master says hi", flush=True)
        xm.master_print("to stderr", fd=sys.stderr)
        where = topology.observed_placement()
        print(json.dumps([before, after, xm.DEVICE_TOUCH.first, [where.ordinal, where.process, where.thread, where.device]]))
    """)
    assert stdout.startswith("master says hi\n") and "to stderr" not in stdout
    before, after, touch, placement = last_json(stdout)
    # XRT semantics: no replication configured yet -> defval, and the runtime stays off
    assert before == [1, 4, 3, 2, True, False]
    assert after == [1, 0, 0, True, "xla:0", True, ["xla:0"], ["xla:0"], None]
    assert touch.startswith("xm.xla_device() at <string>:")
    assert placement == [0, 0, 0, "xla:0"]


@pytest.mark.slow
def test_collectives_take_xrt_era_call_shapes_and_compute():
    # XLA_ALWAYS_ALLREDUCE: torch_xla would skip a one-replica all_reduce; run it for real.
    out = last_json(
        run_xla(
            """
        device = xm.xla_device()
        t = torch.arange(4., device=device)
        pair = [t.clone(), t.clone() + 1]
        same = xm.all_reduce("max", pair, 1.0, [[0]], None, True)  # XRT positional, cctx included
        results = {
            "all_reduce": xm.all_reduce(xm.REDUCE_SUM, t),
            "all_reduce_scaled": xm.all_reduce("sum", t, 0.5),
            "all_reduce_groups": xm.all_reduce("SUM", t, 1.0, groups=[[0]]),
            "all_gather_pinned": xm.all_gather(t.view(2, 2), 1),
            "all_gather_unpinned": xm.all_gather(t, 0, None, None, False),
            "reduce_scatter": xm.reduce_scatter(xm.REDUCE_SUM, t, 0.5, 0, 1),
            "reduce_scatter_groups": xm.reduce_scatter("sum", t, 1.0, 0, 1, [[0]], None, False),
            "all_to_all": xm.all_to_all(t.view(4, 1), 0, 1, 1),
            "collective_permute": xm.collective_permute(t, [[0, 0]]),
        }
        model = torch.nn.Linear(2, 2).to(device)
        weights = model.weight.detach().cpu().clone()
        xm.broadcast_master_param(model)  # ordinal 0 is the root: its weights stay
        results["broadcast_kept_weights"] = torch.tensor(bool(torch.equal(model.weight.detach().cpu(), weights)))
        gathered_list = xm.all_gather([t, t * 2])
        gathered_list_unpinned = xm.all_gather([t, t * 2], pin_layout=False)
        xm.mark_step()
        report = {name: value.cpu().tolist() for name, value in results.items()}
        report["in_place_list_is_returned"] = same is pair
        report["list"] = [v.cpu().tolist() for v in pair]
        report["gathered_list"] = [v.cpu().tolist() for v in gathered_list + gathered_list_unpinned]
        errors = {}
        for name, call in {
            "reduce_type": lambda: xm.all_reduce("avg", t),
            "shard_count": lambda: xm.reduce_scatter("sum", t, 1.0, 0, 2),
            "split_count": lambda: xm.all_to_all(t, 0, 0, 2),
            "groups": lambda: xm.all_gather(t, groups=[[0, 1]]),
            "pairs": lambda: xm.collective_permute(t, [[0, 1]]),
            "root": lambda: xm.collective_broadcast([t], root_ordinal=1),
        }.items():
            try:
                call()
            except ValueError as error:
                errors[name] = str(error)
        report["errors"] = errors
        print(json.dumps(report))
    """,
            env={"XLA_ALWAYS_ALLREDUCE": "1"},
        )
    )
    assert out["all_reduce"] == [0, 1, 2, 3]
    assert out["all_reduce_scaled"] == [0, 0.5, 1, 1.5]
    assert out["all_reduce_groups"] == [0, 1, 2, 3]
    assert out["in_place_list_is_returned"] and out["list"] == [[0, 1, 2, 3], [1, 2, 3, 4]]
    assert out["all_gather_pinned"] == [[0, 1], [2, 3]]
    assert out["all_gather_unpinned"] == [0, 1, 2, 3]
    assert out["gathered_list"] == [[0, 1, 2, 3], [0, 2, 4, 6]] * 2
    assert out["reduce_scatter"] == [0, 0.5, 1, 1.5]
    assert out["reduce_scatter_groups"] == [0, 1, 2, 3]
    assert out["all_to_all"] == [[0], [1], [2], [3]]
    assert out["collective_permute"] == [0, 1, 2, 3]
    errors = out["errors"]
    assert "one of sum, mul" in errors["reduce_type"]
    assert "shard_count=2" in errors["shard_count"] and "split_count=2" in errors["split_count"]
    assert "outside a world of 1" in errors["groups"] and "outside a world of 1" in errors["pairs"]
    assert "root_ordinal 1 is outside a world of 1" in errors["root"]
    assert out["broadcast_kept_weights"] is True


@pytest.mark.slow
def test_hlo_shows_the_explicit_ordinal_ordered_groups_the_shim_sends():
    """Lowering only: the shim is told it is ordinal 3 of 8 (a v3-8's world) and the HLO
    of each collective is read, never executed. The graph must gain no sync and no
    device->host transfer from the shim."""
    out = last_json(
        run_xla(
            """
        import torch_xla.debug.metrics as met
        import torch_xla.runtime as xr
        hlo = torch_xla._XLAC._get_xla_tensors_hlo
        device = xm.xla_device()
        xm.PJRT.xrt_world_size = lambda defval=1: 8
        xm.PJRT.get_ordinal = lambda defval=0: 3
        xr.global_ordinal = lambda: 3  # torch_xla's pinned all_gather pads by this
        t = torch.ones(2, device=device)
        texts = {
            "all_reduce": hlo([xm.all_reduce("sum", t)]),
            "all_reduce_groups": hlo([xm.all_reduce("sum", t, groups=[[0, 2, 4, 6], [1, 3, 5, 7]])]),
            "all_gather_unpinned": hlo([xm.all_gather(t, pin_layout=False)]),
            "all_gather_pinned": hlo([xm.all_gather(t)]),
            "all_gather_groups": hlo([xm.all_gather(t, groups=[[7, 3, 1, 5], [0, 2, 4, 6]], pin_layout=False)]),
            "reduce_scatter": hlo([xm.reduce_scatter("sum", torch.ones(8, device=device), 1.0, 0, 8)]),
            "all_to_all": hlo([xm.all_to_all(torch.ones(8, 1, device=device), 0, 1, 8)]),
            "collective_permute": hlo([xm.collective_permute(t, [(i, (i + 1) % 8) for i in range(8)])]),
        }
        texts["metrics"] = met.metric_names()
        print(json.dumps(texts))
    """,
            env={"XLA_ALWAYS_ALLREDUCE": "1"},
        )
    )
    everyone = "replica_groups={{0,1,2,3,4,5,6,7}}"
    assert "all-reduce(" in out["all_reduce"] and everyone in out["all_reduce"]
    assert "replica_groups={{0,2,4,6},{1,3,5,7}}" in out["all_reduce_groups"]
    assert "all-gather(f32[2]{0}" in out["all_gather_unpinned"] and everyone in out["all_gather_unpinned"]
    assert "replica_groups={{7,3,1,5},{0,2,4,6}}" in out["all_gather_groups"]
    # pinned all_gather = all_reduce of the input padded into slot 3 of 8 (6 before, 8 after)
    assert "padding=6_8" in out["all_gather_pinned"] and everyone in out["all_gather_pinned"]
    assert "reduce-scatter(" in out["reduce_scatter"] and everyone in out["reduce_scatter"]
    assert "all-to-all(" in out["all_to_all"] and everyone in out["all_to_all"]
    assert "source_target_pairs={{0,1},{1,2},{2,3},{3,4},{4,5},{5,6},{6,7},{7,0}}" in out["collective_permute"]
    assert "ExecuteTime" not in out["metrics"] and "TransferFromDeviceTime" not in out["metrics"]


@pytest.mark.slow
def test_rendezvous_mesh_reduce_do_on_ordinals_and_save(tmp_path):
    path = tmp_path / "state.pt"
    out = last_json(
        run_xla(f"""
        import numpy as np
        device = xm.xla_device()
        report = {{
            "plain": [p.decode() for p in xm.rendezvous("start")],
            "payload": [p.decode() for p in xm.rendezvous("x", b"hello", [0])],
            "str_payload": [p.decode() for p in xm.rendezvous("y", "text")],
            "xla_transport": [p.decode() for p in xm.rendezvous("z", b"abc", transport="xla")],
            "xla_transport_body": [p.decode() for p in xm._xla_rendezvous("z", b"payload", [])],
            "mesh_numpy": float(xm.mesh_reduce("acc", np.float64(0.25), np.mean)),
            "mesh_tensor": xm.mesh_reduce("t", torch.full((2,), 3.0, device=device), lambda xs: sum(xs).tolist()),
            "on_ordinal": xm.do_on_ordinals(lambda x: x.sum().item(), (torch.ones(3, device=device),), (0,)),
            "off_ordinal": xm.do_on_ordinals(lambda: 1, (), 5),
        }}
        for name, call in {{"outside": lambda: xm.rendezvous("q", b"", [1]),
                            "transport": lambda: xm.rendezvous("q", transport="carrier-pigeon")}}.items():
            try:
                call()
            except ValueError as error:
                report[name] = str(error)
        xm.save({{"w": torch.arange(3, device=device)}}, {str(path)!r})
        print(json.dumps(report))
    """)
    )
    assert out["plain"] == [""] and out["payload"] == ["hello"] and out["str_payload"] == ["text"]
    assert out["xla_transport"] == ["abc"] and out["xla_transport_body"] == ["payload"]
    assert out["mesh_numpy"] == 0.25 and out["mesh_tensor"] == [3.0, 3.0]
    assert out["on_ordinal"] == 3.0 and out["off_ordinal"] is None
    assert "outside the world of 1" in out["outside"]
    assert "carrier-pigeon" in out["transport"]
    import torch

    assert torch.load(path)["w"].tolist() == [0, 1, 2]


XRT_ERA_PROGRAM = '''
import argparse
import torch
import torch.nn as nn
import torch_xla.distributed.parallel_loader as pl
import xrt2pjrt.shim.xla_model as xm  # was: import torch_xla.core.xla_model as xm
import xrt2pjrt.shim.xla_multiprocessing as xmp  # was: import torch_xla.distributed.xla_multiprocessing as xmp
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

SERIAL_EXEC = xmp.MpSerialExecutor()
WRAPPED_MODEL = xmp.MpModelWrapper(nn.Linear(4, 1))


def make_data():
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(256, 4, generator=generator)
    y = x @ torch.tensor([[1.5], [-2.0], [0.5], [3.0]]) + 0.25
    return TensorDataset(x, y)


def _mp_fn(index, flags):
    device = xm.xla_device()
    dataset = SERIAL_EXEC.run(make_data)
    sampler = DistributedSampler(dataset, num_replicas=xm.xrt_world_size(), rank=xm.get_ordinal(), shuffle=True)
    loader = pl.MpDeviceLoader(DataLoader(dataset, batch_size=32, sampler=sampler), device)
    model = WRAPPED_MODEL.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=flags.lr * xm.xrt_world_size())
    for epoch in range(flags.epochs):
        total = torch.zeros((), device=device)
        for x, y in loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            xm.optimizer_step(optimizer)
            total += loss.detach()
        epoch_loss = xm.mesh_reduce("epoch_loss", total.item() / len(loader), lambda xs: sum(xs) / len(xs))
        xm.master_print(f"epoch {epoch} loss {epoch_loss:.6f} ordinal {xm.get_ordinal()} of {xm.xrt_world_size()}")
    xm.rendezvous("done")
    xm.save(model.state_dict(), flags.out)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--nprocs", type=lambda v: None if v == "None" else int(v), default=8)
    parser.add_argument("--out", required=True)
    flags = parser.parse_args()
    xmp.spawn(_mp_fn, args=(flags,), nprocs=flags.nprocs, start_method="fork")
'''


@pytest.mark.slow
@pytest.mark.parametrize("nprocs,world", [("1", 1), ("None", 1), ("2", 2)])
def test_an_xrt_era_program_with_two_changed_imports_trains(tmp_path, nprocs, world):
    """nprocs=1 runs in this process, None in torch_xla's spawned child, 2 in the CPU
    replica mode (two processes, gradients averaged through the shim's all_reduce)."""
    script = tmp_path / "train.py"
    script.write_text(XRT_ERA_PROGRAM)
    out = tmp_path / "model.pt"
    env = {
        **os.environ,
        "PJRT_DEVICE": "CPU",
        "CPU_NUM_DEVICES": "1",
        "PYTHONWARNINGS": "error::DeprecationWarning:xrt2pjrt",
    }
    done = subprocess.run(
        [sys.executable, str(script), "--nprocs", nprocs, "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    losses = [float(line.split()[3]) for line in done.stdout.splitlines() if line.startswith("epoch")]
    assert len(losses) == 6, done.stdout
    assert f"ordinal 0 of {world}" in done.stdout
    assert losses[-1] < losses[0] / 10, losses
    import torch

    assert set(torch.load(out)) == {"weight", "bias"}


# --- in-process: no runtime is started below -------------------------------------------

# XRT-era (torch_xla 1.8-1.13) signatures: name -> (parameter, default) in order.
XRT_SIGNATURES = {
    "xrt_world_size": [("defval", 1)],
    "get_ordinal": [("defval", 0)],
    "get_local_ordinal": [("defval", 0)],
    "is_master_ordinal": [("local", True)],
    "xla_device": [("n", None), ("devkind", None)],
    "get_xla_supported_devices": [("devkind", None), ("max_devices", None)],
    "all_reduce": [
        ("reduce_type", None),
        ("inputs", None),
        ("scale", 1.0),
        ("groups", None),
        ("cctx", None),
        ("pin_layout", True),
    ],
    "all_gather": [("value", None), ("dim", 0), ("groups", None), ("output", None), ("pin_layout", True)],
    "reduce_scatter": [
        ("reduce_type", None),
        ("input", None),
        ("scale", None),
        ("scatter_dim", None),
        ("shard_count", None),
        ("groups", None),
        ("output", None),
        ("pin_layout", True),
    ],
    "all_to_all": [
        ("value", None),
        ("split_dimension", None),
        ("concat_dimension", None),
        ("split_count", None),
        ("groups", None),
        ("pin_layout", True),
    ],
    "collective_permute": [("value", None), ("pairs", None)],
    "rendezvous": [("tag", None), ("payload", b""), ("replicas", [])],
    "mesh_reduce": [("tag", None), ("data", None), ("reduce_fn", None)],
    "do_on_ordinals": [("target", None), ("data", ()), ("ordinals", (0,))],
    "reduce_gradients": [("optimizer", None), ("groups", None), ("pin_layout", True)],
    "optimizer_step": [
        ("optimizer", None),
        ("barrier", False),
        ("optimizer_args", {}),
        ("groups", None),
        ("pin_layout", True),
    ],
    "save": [("data", None), ("file_or_path", None), ("master_only", True), ("global_master", False)],
}


@pytest.mark.parametrize("name", sorted(XRT_SIGNATURES))
def test_xrt_era_signatures_are_back(name):
    import xrt2pjrt.shim.xla_model as xm

    params = [
        p
        for p in inspect.signature(getattr(xm, name)).parameters.values()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY)
    ]
    got = [(p.name, None if p.default is p.empty else p.default) for p in params]
    assert got[: len(XRT_SIGNATURES[name])] == XRT_SIGNATURES[name]


def test_every_public_name_of_torch_xla_xla_model_passes_through():
    import torch_xla.core.xla_model as upstream

    import xrt2pjrt.shim.xla_model as xm

    public = [n for n in dir(upstream) if not n.startswith("_")]
    assert len(public) > 50
    missing = [n for n in public if not hasattr(xm, n)]
    assert missing == []
    assert xm.REDUCE_SUM == "sum" and xm.RateTracker is upstream.RateTracker
    assert set(public) <= set(dir(xm))
    with pytest.raises(AttributeError, match="neither has torch_xla.core.xla_model"):
        xm.no_such_name


# torch_xla 1.13's xla_model defines these public names (read from pytorch/xla at v1.13.0;
# its imports left out). Every one must be reachable through the shim, and come with
# `from xrt2pjrt.shim.xla_model import *`.
XRT_1_13_NAMES = """
CollectiveContext DeviceContext REDUCE_AND REDUCE_MAX REDUCE_MIN REDUCE_MUL REDUCE_OR REDUCE_SUM
RateTracker ToXlaTensorArena add_step_closure all_gather all_reduce all_to_all check_view_sharing
collective_broadcast collective_permute do_on_ordinals get_local_ordinal get_memory_info get_ordinal
get_rng_state get_xla_supported_devices is_master_ordinal is_xla_tensor mark_step master_print
mesh_reduce optimization_barrier_ optimizer_step parse_xla_device recv reduce_gradients
reduce_scatter rendezvous save send send_cpu_data_to_device set_replication set_rng_state unlazy
wait_device_ops xla_device xla_device_hw xla_real_devices xla_replication_devices xrt_world_size
""".split()


def test_star_import_gives_torch_xlas_whole_surface_and_the_xrt_era_names():
    import torch_xla.core.xla_model as upstream

    namespace: dict = {}
    exec("from xrt2pjrt.shim.xla_model import *", namespace)
    upstream_names = {n for n in dir(upstream) if not n.startswith("_")}
    assert upstream_names - set(namespace) == set()
    assert set(XRT_1_13_NAMES) - set(namespace) == set()
    assert namespace["REDUCE_SUM"] == "sum" and namespace["add_step_closure"] is upstream.add_step_closure
    assert namespace["get_ordinal"].__module__ == "xrt2pjrt.shim.xla_model"


@pytest.mark.slow
def test_a_multi_process_job_answers_no_ordinal_before_its_runtime_starts():
    """torchrun's processes before the runtime: XRT's defval would make every one rank 0."""
    out = run_xla(
        """
        errors = []
        for call in (xm.get_ordinal, xm.xrt_world_size, xm.get_local_ordinal, lambda: xm.rendezvous("x")):
            try:
                call()
            except RuntimeError as error:
                errors.append(str(error))
        print(json.dumps([errors, torch_xla._XLAC._xla_runtime_is_initialized()]))
    """,
        env={"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "3", "LOCAL_WORLD_SIZE": "4"},
    )
    errors, started = last_json(out)
    assert len(errors) == 4 and not started
    assert (
        "xm.get_ordinal() before torch_xla's runtime started in this process, which is process 3 of 4 (torchrun)"
        in errors[0]
    )
    assert "init_method='xla://'" in errors[0]


@pytest.mark.slow
def test_a_process_whose_runtime_is_a_world_of_one_in_a_bigger_job_says_so():
    """torchrun's processes under PJRT_DEVICE=CPU each start a world of one: never ordinal 0 of 1."""
    out = run_xla(
        """
        device = xm.xla_device()
        try:
            xm.get_ordinal()
        except RuntimeError as error:
            print(json.dumps(str(error)))
    """,
        env={"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"},
    )
    assert "process 1 of 2 (torchrun), but torch_xla's runtime here sees a world of 1" in last_json(out)


@pytest.mark.slow
def test_collective_context_and_cctx_in_every_collective():
    out = last_json(
        run_xla(
            """
        device = xm.xla_device()
        t = torch.arange(4., device=device)
        cctx = xm.CollectiveContext(groups=[[0]])
        results = {
            "all_reduce": xm.all_reduce("sum", t, 1.0, None, cctx),  # XRT's positional cctx
            "all_gather": xm.all_gather(t, cctx=cctx),
            "reduce_scatter": xm.reduce_scatter("sum", t, 1.0, 0, 1, cctx=cctx),
            "all_to_all": xm.all_to_all(t.view(4, 1), 0, 1, 1, cctx=cctx),
            "collective_permute": xm.collective_permute(t, [[0, 0]], cctx=cctx),
        }
        xm.collective_broadcast([t], cctx=cctx)
        report = {name: value.cpu().tolist() for name, value in results.items()}
        report["context"] = [cctx.world_size, cctx.ordinal, cctx.intercore_group, cctx.requires_interhost_reduce]
        print(json.dumps(report))
    """,
            env={"XLA_ALWAYS_ALLREDUCE": "1"},
        )
    )
    assert out.pop("context") == [1, 0, [[0]], False]
    assert out == {
        "all_reduce": [0, 1, 2, 3],
        "all_gather": [0, 1, 2, 3],
        "reduce_scatter": [0, 1, 2, 3],
        "all_to_all": [[0], [1], [2], [3]],
        "collective_permute": [0, 1, 2, 3],
    }


@pytest.mark.slow
def test_xrt_spellings_of_devices_and_data_transfer(monkeypatch):
    out = last_json(
        run_xla("""
        device = xm.xla_device()
        one = xm.send_cpu_data_to_device(torch.ones(2), device)  # XRT: a tensor comes back a tensor
        named = xm.send_cpu_data_to_device(data={"w": torch.ones(1)}, device=device)
        native = xm.send_cpu_data_to_device(datas=torch.ones(1), device=device)  # torch_xla 2.x: a list
        print(json.dumps([type(one).__name__, str(one.device), str(named["w"].device), type(native).__name__,
                          xm.parse_xla_device("TPU:3"), xm.parse_xla_device("xla:0")]))
    """)
    )
    assert out == ["Tensor", "xla:0", "xla:0", "list", ["TPU", 3], None]
    import xrt2pjrt.shim.xla_model as xm

    monkeypatch.setenv("PJRT_DEVICE", "CUDA")  # XRT called CUDA devices GPU
    monkeypatch.setattr(xm._xm, "get_xla_supported_devices", lambda max_devices=None: ["xla:0", "xla:1"][:max_devices])
    assert xm.get_xla_supported_devices("GPU") == ["xla:0", "xla:1"] and xm.get_xla_supported_devices("gpu", 1) == [
        "xla:0"
    ]
    assert xm.get_xla_supported_devices("TPU") is None


@pytest.mark.slow
def test_parallel_loader_takes_xrts_loader_keyword():
    out = last_json(
        run_xla("""
        import xrt2pjrt.shim.parallel_loader as pl
        from torch.utils.data import DataLoader, TensorDataset
        device = xm.xla_device()
        data = DataLoader(TensorDataset(torch.arange(6.).view(6, 1)), batch_size=2)
        xrt = [b[0].cpu().view(-1).tolist() + [str(b[0].device)] for b in pl.ParallelLoader(loader=data, devices=[device]).per_device_loader(device)]
        native = [b[0].cpu().view(-1).tolist() for b in pl.ParallelLoader(cpu_loader=data, devices=[device]).per_device_loader(device)]
        print(json.dumps([xrt, native, pl.MpDeviceLoader.__module__]))
    """)
    )
    assert out == [
        [[0, 1, "xla:0"], [2, 3, "xla:0"], [4, 5, "xla:0"]],
        [[0, 1], [2, 3], [4, 5]],
        "torch_xla.distributed.parallel_loader",
    ]


def test_the_cpu_replica_module_implements_the_backend_protocol():
    import xrt2pjrt.shim.xla_model as xm
    from xrt2pjrt.shim.cpu import collectives

    for name, method in inspect.getmembers(xm.Backend, inspect.isfunction):
        if name.startswith("_"):
            continue
        wanted = [(p.name, p.default, p.kind) for p in list(inspect.signature(method).parameters.values())[1:]]
        for implementation in (getattr(collectives, name), getattr(xm.PJRT, name)):
            got = [(p.name, p.default, p.kind) for p in inspect.signature(implementation).parameters.values()]
            assert got[: len(wanted)] == wanted, f"{implementation.__module__}.{name}"


def test_one_dispatch_sends_every_call_and_what_is_built_on_them_to_the_active_backend(monkeypatch):
    """With the CPU replica mode active (world of 4, this is ordinal 2), the shim's calls
    and its own reduce_gradients/optimizer_step/mesh_reduce/is_master_ordinal reach the
    mode's functions with explicit groups; no torch_xla runtime is involved."""
    import torch

    import xrt2pjrt.shim.xla_model as xm
    from xrt2pjrt.shim.cpu import collectives
    from xrt2pjrt.shim.cpu import placement

    calls = []

    def recorder(name, result):
        def record(*args, **kwargs):
            calls.append((name, args, kwargs))
            return result(*args) if callable(result) else result

        return record

    monkeypatch.setattr(placement, "active", lambda: True)
    monkeypatch.setattr(collectives, "xrt_world_size", lambda defval=1: 4)
    monkeypatch.setattr(collectives, "get_ordinal", lambda defval=0: 2)
    monkeypatch.setattr(collectives, "get_local_ordinal", lambda defval=0: 2)
    for name in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "collective_permute"):
        monkeypatch.setattr(collectives, name, recorder(name, lambda value, *rest: value))
    monkeypatch.setattr(collectives, "rendezvous", recorder("rendezvous", lambda tag, payload, replicas: [payload] * 4))

    model = torch.nn.Linear(2, 1)
    model(torch.ones(1, 2)).sum().backward()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    before = model.weight.detach().clone()
    xm.optimizer_step(optimizer)
    name, args, kwargs = calls.pop(0)
    assert (name, args[0], kwargs) == (
        "all_reduce",
        "sum",
        {"scale": 0.25, "groups": [[0, 1, 2, 3]], "pin_layout": True},
    )
    assert [t.shape for t in args[1]] == [torch.Size([1, 2]), torch.Size([1])]
    assert not torch.equal(before, model.weight)

    t = torch.arange(8.0)
    xm.all_gather(t, 0, [[3, 2], [1, 0]], None, False)
    xm.reduce_scatter("SUM", t, 1.0, 0, 4)
    xm.all_to_all(t, 0, 0, 4)
    xm.collective_permute(t, [(0, 1)])
    assert [(n, k.get("groups")) for n, a, k in calls] == [
        ("all_gather", [[3, 2], [1, 0]]),
        ("reduce_scatter", [[0, 1, 2, 3]]),
        ("all_to_all", [[0, 1, 2, 3]]),
        ("collective_permute", None),
    ]
    assert calls[-1][1][1] == [[0, 1]]
    calls.clear()

    assert xm.mesh_reduce("loss", 1.5, sum) == 6.0
    assert calls[0][0] == "rendezvous" and calls[0][1][0] == "loss"
    assert not xm.is_master_ordinal() and xm.get_ordinal() == 2 and xm.xrt_world_size() == 4


@pytest.mark.slow
def test_on_a_torch_xla_without_torch_xla_device_and_sync_the_shim_uses_xms_own():
    """SIMULATED torch_xla 2.2: before torch_xla.device (2.3) and torch_xla.sync (2.5), the
    shim's xla_device and mark_step must call xm's own functions, which did the job then."""
    code = textwrap.dedent("""\
        import json
        import torch_xla
        import torch_xla.core.xla_model as native
        del torch_xla.device, torch_xla.sync  # SIMULATED: names torch_xla 2.2 did not have
        calls = []
        native.xla_device = lambda n=None, devkind=None: calls.append(["xla_device", n]) or "xla:0"
        native.mark_step = lambda wait=False: calls.append(["mark_step", wait])
        import xrt2pjrt.shim.xla_model as xm
        xm.xla_device()
        xm.mark_step(wait=True)
        print(json.dumps(calls))
        """)
    env = {**os.environ, "PJRT_DEVICE": "CPU"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-4000:]
    assert last_json(done.stdout) == [["xla_device", None], ["mark_step", True]]
