"""The CPU replica mode against torch.distributed's gloo, on the same processes, in one run.

    python bench/cpu_replicas.py [--nprocs 4] [--sizes 1,64] [--repeat 10] [--steps 10]

N CPU replicas (xrt2pjrt.shim.cpu, started as ``xrt2pjrt run`` starts them) each
join a plain gloo process group as well, over the mode's own store. Then, in every
replica, one after the other:

1. all_reduce (sum) of S MB of float32: torch_xla's ``xm.all_reduce`` on an XLA tensor in
   the mode (device->host, exchange, fold, host->device, all included) against
   ``dist.all_reduce`` on a CPU tensor with gloo. Each call starts after a gloo barrier; a
   call's time is the slowest replica's; the figure is the median over ``--repeat`` calls.
   Bandwidth is S / time ("algorithm bandwidth"). Target: the mode at least half of gloo's.
   The two take turns, call by call, so that other load on the machine falls on both.
2. A training step of the same model (an MLP, 784-512-512-10, batch 64 per replica, SGD):
   torch_xla with ``xm.optimizer_step`` in the mode against torch's
   DistributedDataParallel with gloo on CPU tensors. Median step time over ``--steps``
   steps after 3 warm-up steps (the first XLA steps compile).

Figures, not a test: nothing fails on a number.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import machine  # noqa: E402

MB = 2**20


def _timed(calls: dict, repeat: int) -> dict[str, list[float]]:
    """Seconds per call of each of ``calls``, taken in turn (so that other load on the
    machine falls on both alike), every call starting after a gloo barrier."""
    import torch.distributed as dist

    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(repeat):
        for name, call in calls.items():
            dist.barrier()
            start = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - start)
    return times


def _all_reduce_times(sizes_mb: list[int], repeat: int) -> dict:
    import torch
    import torch.distributed as dist
    import torch_xla
    import torch_xla.core.xla_model as xm

    device = torch_xla.device()
    times = {}
    for size in sizes_mb:
        count = size * MB // 4
        host = torch.ones(count)
        on_device = torch.ones(count, device=device)
        torch_xla.sync()
        xm.wait_device_ops()

        def mode():
            xm.all_reduce(xm.REDUCE_SUM, on_device)  # a new tensor: on_device keeps its ones
            xm.wait_device_ops()

        def gloo():
            host.fill_(1.0)  # in place: keep the values from growing (a memset, timed for gloo too)
            dist.all_reduce(host)

        mode(), gloo()  # warm-up: compiles, connects
        times[size] = _timed({"mode": mode, "gloo": gloo}, repeat)
    return times


def _model():
    import torch.nn as nn

    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


def _step_times(steps: int) -> dict:
    import torch
    import torch.nn.functional as F
    import torch_xla
    import torch_xla.core.xla_model as xm
    from torch.nn.parallel import DistributedDataParallel

    generator = torch.Generator().manual_seed(0)
    images, labels = torch.randn(64, 784, generator=generator), torch.randint(0, 10, (64,), generator=generator)
    device = torch_xla.device()

    torch.manual_seed(0)
    model = _model().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = images.to(device), labels.to(device)

    def mode_step():
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        xm.optimizer_step(optimizer)
        torch_xla.sync()  # as MpDeviceLoader does between steps
        xm.wait_device_ops()

    torch.manual_seed(0)
    ddp = DistributedDataParallel(_model())
    ddp_optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)

    def ddp_step():
        ddp_optimizer.zero_grad()
        F.cross_entropy(ddp(images), labels).backward()
        ddp_optimizer.step()

    for _ in range(3):
        mode_step(), ddp_step()
    return _timed({"mode": mode_step, "ddp": ddp_step}, steps)


def replica(index: int, sizes_mb: list[int], repeat: int, steps: int) -> dict:
    import torch.distributed as dist
    from torch.distributed import PrefixStore

    from xrt2pjrt.shim.cpu import placement, transport

    where = placement.placement()
    dist.init_process_group(
        "gloo", store=PrefixStore("bench", transport.store()), rank=where.ordinal, world_size=where.world_size
    )
    return {"all_reduce": _all_reduce_times(sizes_mb, repeat), "step": _step_times(steps)}


def _pairs(runs: list[dict], path: tuple, ours: str, theirs: str) -> tuple[float, float, list[float]]:
    """(median time of ours, median time of theirs, their time / ours call by call, sorted).
    A call's time is its slowest replica's; the two took turns, so the ratio taken pair by
    pair holds while other load on the machine comes and goes."""

    def slowest(name: str) -> list[float]:
        per_replica = []
        for run in runs:
            for key in path:
                run = run[key]
            per_replica.append(run[name])
        return [max(times) for times in zip(*per_replica)]

    mine, baseline = slowest(ours), slowest(theirs)
    return statistics.median(mine), statistics.median(baseline), sorted(b / m for m, b in zip(mine, baseline))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nprocs", type=int, default=4)
    parser.add_argument("--sizes", default="1,64", help="all_reduce sizes in MB, comma-separated")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--steps", type=int, default=10)
    options = parser.parse_args()
    sizes = [int(s) for s in options.sizes.split(",")]

    os.environ["PJRT_DEVICE"] = "CPU"
    print(machine())
    from xrt2pjrt.shim.cpu import supervisor

    reports = supervisor.spawn(
        replica, args=(sizes, options.repeat, options.steps), nprocs=options.nprocs, start_method="fork"
    )
    runs = list(reports.values())
    print(f"\nall_reduce (sum, float32), {options.nprocs} replicas, {options.repeat} calls each, in turns")
    print(
        f"{'size':>6}  {'mode':>9}  {'gloo':>9}  {'mode GB/s':>9}  {'gloo GB/s':>9}  "
        "mode/gloo bandwidth: median (min-max) of the pairs"
    )
    for size in sizes:
        mode, gloo, ratios = _pairs(runs, ("all_reduce", size), "mode", "gloo")
        print(
            f"{size:>4}MB  {mode * 1e3:>7.1f}ms  {gloo * 1e3:>7.1f}ms  {size * MB / mode / 1e9:>9.2f}  "
            f"{size * MB / gloo / 1e9:>9.2f}  {statistics.median(ratios):.2f} ({ratios[0]:.2f}-{ratios[-1]:.2f})"
        )
    mode, ddp, ratios = _pairs(runs, ("step",), "mode", "ddp")
    print(
        f"\ntraining step, {options.nprocs} replicas, MLP 784-512-512-10, batch 64 per replica, "
        f"{options.steps} steps each, in turns"
    )
    print(
        f"  mode (torch_xla, xm.optimizer_step) {mode * 1e3:.1f} ms, DDP (gloo, CPU) {ddp * 1e3:.1f} ms; "
        f"DDP/mode time: median {statistics.median(ratios):.2f} ({ratios[0]:.2f}-{ratios[-1]:.2f}) of the pairs"
    )


if __name__ == "__main__":
    main()
