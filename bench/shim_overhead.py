"""What the shim costs on PJRT (CPU) against native torch_xla 2.9, measured in one run.

    python bench/shim_overhead.py [--steps N] [--processes 2,4]

1. Python cost per call of the shim's ordinal / world-size functions and collectives
   against the native calls (torch_xla.runtime, torch_xla.core.xla_model), runtime started,
   one replica (PJRT CPU runs one replica for real; collectives are traced lazily).
2. Graph executions, compilations and device->host transfers per training step, from
   torch_xla.debug.metrics, for the same XRT-era loop written against the shim and against
   native torch_xla. Target: no extra execution or transfer.
3. Host rendezvous latency (xrt2pjrt.shim.rendezvous, over the shim's store) against
   torch.distributed.barrier on gloo, on the same N processes of this machine.

Parts 1-2 run in a child process with PJRT_DEVICE=CPU; part 3 in N fresh processes
that never start the XLA runtime.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch.multiprocessing as mp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import machine  # noqa: E402

# --- 1 and 2: one process on PJRT CPU -------------------------------------------------


def per_call_and_per_step(steps: int) -> dict:
    import timeit

    import torch
    import torch_xla
    import torch_xla.core.xla_model as xm
    import torch_xla.debug.metrics as met
    import torch_xla.runtime as xr

    import xrt2pjrt.shim.xla_model as shim

    device = torch_xla.device()
    tensor = torch.ones(4, device=device)
    torch_xla.sync()

    def cost(call, number=2000) -> float:
        """Seconds per call, best of 5 rounds."""
        return min(timeit.repeat(call, number=number, repeat=5)) / number

    pairs = {
        "ordinal": (shim.get_ordinal, xr.global_ordinal),
        "world size": (shim.xrt_world_size, xr.world_size),
        "local ordinal": (shim.get_local_ordinal, xr.local_ordinal),
        "is_master_ordinal": (shim.is_master_ordinal, lambda: xr.local_ordinal() == 0),
        "all_reduce('sum', t)": (lambda: shim.all_reduce("sum", tensor), lambda: xm.all_reduce(xm.REDUCE_SUM, tensor)),
        "all_gather(t)": (lambda: shim.all_gather(tensor), lambda: xm.all_gather(tensor)),
    }
    calls = {label: {"shim": cost(s), "native": cost(n)} for label, (s, n) in pairs.items()}
    torch_xla.sync()

    def train(api) -> dict:
        """An XRT-era step: ordinal and world-size queries, forward/backward, all_reduce of
        the loss, optimizer_step, mark_step. Metric deltas per step after a warm-up."""
        torch.manual_seed(0)
        model = torch.nn.Linear(16, 4).to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        x, y = torch.randn(8, 16).to(device), torch.randn(8, 4).to(device)

        def step():
            scale = 1.0 / api["world_size"]()
            api["ordinal"]()
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            api["all_reduce"](loss, scale)
            api["optimizer_step"](optimizer)
            api["sync"]()

        for _ in range(3):  # compile once
            step()
        before = {
            name: met.metric_data(name)[0] if met.metric_data(name) else 0
            for name in ("ExecuteTime", "CompileTime", "TransferFromDeviceTime")
        }
        start = time.perf_counter()
        for _ in range(steps):
            step()
        elapsed = time.perf_counter() - start
        after = {name: met.metric_data(name)[0] if met.metric_data(name) else 0 for name in before}
        per_step = {name: (after[name] - before[name]) / steps for name in before}
        per_step["seconds"] = elapsed / steps
        return per_step

    native = train({
        "world_size": xr.world_size, "ordinal": xr.global_ordinal,
        "all_reduce": lambda t, s: xm.all_reduce(xm.REDUCE_SUM, t, scale=s),
        "optimizer_step": xm.optimizer_step, "sync": torch_xla.sync,
    })  # fmt: skip
    shimmed = train({
        "world_size": shim.xrt_world_size, "ordinal": shim.get_ordinal,
        "all_reduce": lambda t, s: shim.all_reduce("sum", t, scale=s),
        "optimizer_step": shim.optimizer_step, "sync": shim.mark_step,
    })  # fmt: skip
    return {"calls": calls, "steps": {"native": native, "shim": shimmed}}


# --- 3: rendezvous latency on N processes ---------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rendezvous_worker(rank: int, world: int, rounds: int, results) -> None:
    import torch.distributed as dist

    from xrt2pjrt.shim.rendezvous import host_rendezvous

    # torchrun's variables: they tell the shim this process is rank `rank` of a job (rank 0 serves its store)
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world))
    dist.init_process_group("gloo", rank=rank, world_size=world)

    def timed(op) -> list[float]:
        for _ in range(20):  # warm-up: connections, first keys
            op()
        laps = []
        for _ in range(rounds):
            start = time.perf_counter()
            op()
            laps.append(time.perf_counter() - start)
        return laps

    barrier = timed(dist.barrier)
    rendezvous = timed(lambda: host_rendezvous("bench", b"", None, ordinal=rank, world_size=world))
    dist.barrier()
    dist.destroy_process_group()
    results.put((rank, statistics.median(barrier), statistics.median(rendezvous)))


def rendezvous_latency(world: int, rounds: int) -> dict:
    port = _free_port()
    # gloo's store on MASTER_PORT; the host rendezvous serves its own at MASTER_PORT + 1
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    context = mp.get_context("spawn")
    results = context.SimpleQueue()
    mp.start_processes(_rendezvous_worker, args=(world, rounds, results), nprocs=world, start_method="spawn")
    rows = [results.get() for _ in range(world)]
    return {
        "barrier": max(row[1] for row in rows),  # the slowest rank's median
        "rendezvous": max(row[2] for row in rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--processes", default="2,4", help="process counts for the rendezvous benchmark")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(per_call_and_per_step(args.steps)))
        return

    env = {**os.environ, "PJRT_DEVICE": "CPU"}
    env.pop("CPU_NUM_DEVICES", None)  # one replica: 2+ abort inside XLA collectives on CPU
    child = subprocess.run(
        [sys.executable, __file__, "--child", "--steps", str(args.steps)], capture_output=True, text=True, env=env
    )
    if child.returncode != 0:
        raise SystemExit(f"the PJRT CPU part failed:\n{child.stderr[-3000:]}")
    figures = json.loads(child.stdout.splitlines()[-1])

    print(f"machine: {machine()}\n")
    print("1. Python cost per call, PJRT CPU, one replica (runtime started)")
    for label, cost in figures["calls"].items():
        ratio = cost["shim"] / cost["native"]
        print(
            f"  {label:<22} shim {cost['shim'] * 1e6:7.2f} us   native {cost['native'] * 1e6:7.2f} us   "
            f"x{ratio:4.2f}  (+{(cost['shim'] - cost['native']) * 1e6:.2f} us)"
        )
    print(f"\n2. Per training step ({args.steps} steps after warm-up; torch_xla.debug.metrics)")
    native, shimmed = figures["steps"]["native"], figures["steps"]["shim"]
    for name, label in (
        ("ExecuteTime", "graph executions"),
        ("CompileTime", "compilations"),
        ("TransferFromDeviceTime", "device->host transfers"),
        ("seconds", "wall seconds"),
    ):
        extra = shimmed[name] - native[name]
        print(f"  {label:<24} shim {shimmed[name]:8.4f}   native {native[name]:8.4f}   extra {extra:+.4f}")
    print("\n3. Host rendezvous vs torch.distributed.barrier (gloo), median per call, slowest rank")
    for world in (int(n) for n in args.processes.split(",")):
        latency = rendezvous_latency(world, args.rounds)
        print(
            f"  {world} processes: rendezvous {latency['rendezvous'] * 1e3:6.2f} ms   "
            f"barrier {latency['barrier'] * 1e3:6.2f} ms   x{latency['rendezvous'] / latency['barrier']:.1f}"
        )


if __name__ == "__main__":
    main()
