"""XRT-era programs run in the CPU replica mode, as the tests of tests/shim/cpu/ run them.

Every program's only xrt2pjrt-specific lines are the two imports (``xrt2pjrt.shim.xla_model
as xm``, ``xrt2pjrt.shim.xla_multiprocessing as xmp``); it runs in a fresh Python process
with ``PJRT_DEVICE=CPU``, where ``xmp.spawn(fn, nprocs=N)`` starts N replica processes joined
over gloo and the job's store on loopback (or across network namespaces). Each replica
writes what it saw to a JSON file, which the tests compare to what XLA on a pod returns.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

PYTHON = sys.executable
ROOT = Path(__file__).resolve().parents[3]


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


def edited(program: str, old: str, new: str) -> str:
    """PROGRAM with OLD replaced by NEW; OLD must be there, or the edit would silently test nothing."""
    assert program.count(old) == 1, f"{old!r} is not once in the program"
    return program.replace(old, new)


def write_program(tmp_path: Path, body: str) -> Path:
    script = tmp_path / f"program_{uuid.uuid4().hex[:8]}.py"
    script.write_text(PRELUDE + textwrap.dedent(body) + MAIN)
    return script


def start_program(script: Path, nprocs: int | None, start_method: str, env: dict | None = None, prefix=()):
    out = script.parent / f"out_{uuid.uuid4().hex[:8]}"
    out.mkdir()
    environment = {**os.environ, "PJRT_DEVICE": "CPU", "PYTHONPATH": str(ROOT), **(env or {})}
    environment.pop("CPU_NUM_DEVICES", None)
    process = subprocess.Popen(
        [*prefix, PYTHON, str(script), str(out), str(nprocs or 0), start_method],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return process, out


def finish_program(started, deadline: float = 120) -> tuple[int, dict, str]:
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


def run_program(tmp_path, body, nprocs, start_method="fork", env=None, deadline=120):
    return finish_program(start_program(write_program(tmp_path, body), nprocs, start_method, env), deadline)


def by_ordinal(results: dict) -> dict[int, dict]:
    return {int(name): value for name, value in results.items() if name.isdigit()}


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


def assert_seed_table(replicas: dict[int, dict], world: int) -> None:
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


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError):  # a zombie is dead, only not yet reaped by init
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split()[0] != "Z"
    return True


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
