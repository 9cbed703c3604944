"""The shim's store and host rendezvous with as many clients as a large pod has, simulated.

    python bench/store_scale.py [--clients 8,64,256] [--threads 16] [--rounds 20] [--payload 1024] [--compare]

A v4-512 job has 256 processes (64 hosts x 4), larger pods 1,024 to 4,096, all meeting in
one store. This machine has 2 cores, so a pod is simulated: N clients are real connections
from real processes (N / --threads processes of up to --threads threads, each thread a
participant of its own, as the shim gives each thread its own connection; forked from one
process that imported their code) to a real store served by ``start_helper`` (a process of
its own, as on a pod). Per client count it prints:

1. the connect burst: every client connects and authenticates at the same instant (one
   start time for all processes); how many got in, the slowest connect, any refusal;
2. the barrier: ``host_rendezvous`` with an empty payload (``xm.rendezvous(tag)``), median
   per call of the slowest participant, and the store process's CPU time per barrier (read
   around the timed barriers);
3. the fan-out: ``host_rendezvous`` with a --payload byte payload of its own from everyone
   (``xm.mesh_reduce``: each of N participants receives N payloads, N^2 x payload bytes);
4. the store process's peak memory, threads and open files with every client connected.

Ratios are against the smallest client count, measured in the same run. ``--compare`` runs
every size twice, in the same run, with the same shape and the same ``host_rendezvous``: once
against the shim's store and once against a bare ``torch.distributed.TCPStore(use_libuv=True)``
(no secret, no value limit: the engine alone), and prints the shim's figures as a ratio to
the bare engine's. Many more processes than cores share this machine, so wall times
include waiting for a core; the store's CPU per barrier is the figure that shows how its
work grows with N. Each participant holds N x --payload bytes at once in a fan-out: at
4,096 participants give a --payload of 64 (1 kB each would need 16 GiB at once here).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import machine  # noqa: E402

from xrt2pjrt.shim import settings  # noqa: E402
from xrt2pjrt.shim.store.client import StoreClient  # noqa: E402
from xrt2pjrt.shim.store.helper import start_helper  # noqa: E402
from xrt2pjrt.shim.store.protocol import StoreError  # noqa: E402
from xrt2pjrt.shim.store.secret import job_secret, new_secret  # noqa: E402

# The simulating processes get it from the environment, as a job's processes do.
os.environ.setdefault(settings.JOB_SECRET.name, new_secret())
SECRET = job_secret()


# --- one process of the simulated pod ------------------------------------------------------
class BareTCPStore:
    """A bare torch TCPStore client with the calls ``host_rendezvous`` makes (the baseline)."""

    def __init__(self, port: int):
        import torch.distributed as dist

        self.port = port
        self._store = dist.TCPStore(
            "127.0.0.1", port, is_master=False, use_libuv=True, timeout=datetime.timedelta(seconds=300)
        )

    def clone(self) -> BareTCPStore:
        return BareTCPStore(self.port)

    def close(self) -> None:
        self._store = None

    def delete_keys(self, keys) -> int:
        return sum(self._store.delete_key(key) for key in keys)

    def __getattr__(self, name):  # set, get, add, check, multi_get, num_keys, set_timeout
        return getattr(self._store, name)


def worker(
    engine: str,
    port: int,
    first: int,
    threads: int,
    world: int,
    start_at: float,
    rounds: int,
    payload: int,
    store_pid: int,
) -> None:
    """``threads`` participants (ordinals first..), printing one JSON line each. Ordinal 0
    also reads the store process's CPU time around the timed barriers and fan-outs: every
    participant leaves a rendezvous only once all arrived, so the span covers everyone's."""
    from xrt2pjrt.shim.rendezvous import host_rendezvous

    store = BareTCPStore(port) if engine == "bare" else StoreClient("127.0.0.1", port, SECRET, timeout=600)
    results = []

    def participant(ordinal: int) -> None:
        own = store.clone()
        row = {"ordinal": ordinal}
        time.sleep(max(0.0, start_at - time.time()))
        began = time.perf_counter()
        try:
            own.num_keys()  # connect + handshake + one call
            row["connect"] = time.perf_counter() - began
            own.close()  # the rendezvous makes its own connection (a clone), as in a job
        except (StoreError, RuntimeError) as error:  # RuntimeError: torch's DistStoreError
            row["refused"] = f"{type(error).__name__}: {error}"
            results.append(row)
            return

        def timed(data: bytes) -> float:
            laps = []
            for _ in range(rounds):
                lap = time.perf_counter()
                got = host_rendezvous("bench", data, None, ordinal=ordinal, world_size=world, store=own)
                laps.append(time.perf_counter() - lap)
                assert len(got) == world and got[ordinal] == data
            return statistics.median(laps)

        def store_cpu() -> float:  # ordinal 0 reads it; the others leave /proc alone
            return _cpu_seconds(store_pid) if ordinal == 0 else 0.0

        timed(b"")  # warm-up: the rendezvous' own connection, first keys
        cpu = [store_cpu()]
        row["barrier"] = timed(b"")
        cpu.append(store_cpu())
        # Each its own payload: the same from everyone is a barrier's, which the rendezvous sends once.
        row["fanout"] = timed(ordinal.to_bytes(4, "big") + bytes(max(0, payload - 4)))
        cpu.append(store_cpu())
        if ordinal == 0:
            row["store_cpu"] = {"barrier": (cpu[1] - cpu[0]) / rounds, "fanout": (cpu[2] - cpu[1]) / rounds}
        results.append(row)

    team = [threading.Thread(target=participant, args=(first + t,)) for t in range(threads)]
    for thread in team:
        thread.start()
    for thread in team:
        thread.join()
    for row in results:  # one write each: the processes share the pipe
        os.write(1, (json.dumps(row) + "\n").encode())
    os._exit(0)  # the rendezvous' exit duty is for a job's process; this is a simulation's


def launcher(engine: str, port: int, clients: int, threads: int, *args) -> None:
    """Fork the simulating processes from one that imported what they need, once.

    Their memory is then mostly shared: torch (the bare engine's client) costs each process
    about 265 MB of its own when imported, so 256 processes that each imported it would need
    68 GB, while forked they fit this machine."""
    import gc

    if engine == "bare":
        import torch.distributed  # noqa: F401
    import xrt2pjrt.shim.rendezvous  # noqa: F401

    gc.freeze()  # the collector then leaves the shared pages alone
    children = []
    for first in range(0, clients, threads):
        pid = os.fork()
        if pid == 0:
            worker(engine, port, first, min(threads, clients - first), clients, *args)
        children.append(pid)
    failed = sum(os.waitpid(pid, 0)[1] != 0 for pid in children)
    sys.exit(1 if failed else 0)


# --- the store's process, seen from outside ----------------------------------------------------
def _status(pid: int) -> dict:
    fields = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            fields[key] = value.split()[0] if value.split() else ""
    return {
        "hwm_mb": int(fields["VmHWM"]) / 1024,
        "rss_mb": int(fields["VmRSS"]) / 1024,
        "threads": int(fields["Threads"]),
        "files": len(os.listdir(f"/proc/{pid}/fd")),
    }


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


class _BareServer:
    """A bare TCPStore(use_libuv=True) master in a process of its own; ends when stdin closes."""

    CODE = (
        "import sys, torch.distributed as d; s = d.TCPStore('127.0.0.1', 0, is_master=True, "
        "wait_for_workers=False, use_libuv=True); print(s.port, flush=True); sys.stdin.read()"
    )

    def __init__(self):
        self.process = subprocess.Popen(
            [sys.executable, "-c", self.CODE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.port = int(self.process.stdout.readline())

    def stop(self) -> None:
        self.process.stdin.close()
        self.process.wait(30)


class _ShimServer:
    """The shim's store, served as a job serves it (``start_helper``)."""

    def __init__(self, clients: int):
        self.helper = start_helper("127.0.0.1", 0, SECRET, expected=clients + 1, linger=5)
        self.process, self.port = self.helper.process, self.helper.port

    def stop(self) -> None:
        self.helper.abort("benchmark over")
        self.helper.finish(last=True)
        self.process.wait(30)


def one_size(clients: int, threads: int, rounds: int, payload: int, engine: str = "shim") -> dict:
    served = _BareServer() if engine == "bare" else _ShimServer(clients)
    pid = served.process.pid
    idle = _status(pid)
    start_at = time.time() + 5.0 + clients / 100  # every process forked and waiting by then
    # TORCH_CPP_LOG_LEVEL: torch's client warns once per connection that 127.0.0.1 has no name.
    simulation = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--launch",
            engine,
            str(served.port),
            str(clients),
            str(threads),
            str(start_at),
            str(rounds),
            str(payload),
            str(pid),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TORCH_CPP_LOG_LEVEL": "ERROR"},
    )
    # Sample the store while the clients are connected: its peak threads and files.
    busiest = idle
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(simulation.stdout))
    reader.start()
    while simulation.poll() is None:
        now = _status(pid)
        if now["files"] > busiest["files"]:
            busiest = now
        time.sleep(0.05)
    reader.join()
    final = _status(pid)
    rows = [json.loads(line) for line in lines]
    served.stop()
    joined = [r for r in rows if "connect" in r]
    refused = [r for r in rows if "refused" in r]
    done = [r for r in joined if "barrier" in r]
    phases = next((r["store_cpu"] for r in done if "store_cpu" in r), {"barrier": float("nan"), "fanout": float("nan")})
    return {
        "engine": engine,
        "clients": clients,
        "processes": -(-clients // threads),
        "joined": len(joined),
        "refused": len(refused),
        "store_cpu_barrier": phases["barrier"],
        "store_cpu_fanout": phases["fanout"],
        "refusals": sorted({r["refused"][:160] for r in refused}),
        "completed": len(done),
        "connect_max": max((r["connect"] for r in joined), default=float("nan")),
        "connect_median": statistics.median(r["connect"] for r in joined) if joined else float("nan"),
        "barrier": max((r["barrier"] for r in done), default=float("nan")),
        "fanout": max((r["fanout"] for r in done), default=float("nan")),
        "idle": idle,
        "busiest": busiest,
        "hwm_mb": final["hwm_mb"],
    }


def _ratio(figure: float, base: float) -> float:
    """``figure / base``; nan when the base is 0 (fewer CPU ticks than one over a few calls)."""
    return figure / base if base else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", default="8,64,256", help="client counts (the first is the baseline)")
    parser.add_argument("--threads", type=int, default=16, help="clients per simulating process")
    parser.add_argument("--rounds", type=int, default=20, help="timed rendezvous per participant and kind")
    parser.add_argument("--payload", type=int, default=1024, help="bytes each participant gives the fan-out")
    parser.add_argument(
        "--compare",
        action="store_true",
        help="run each size against a bare torch TCPStore(use_libuv=True) too; print ratios",
    )
    args = parser.parse_args()
    print(f"machine: {machine()}; open-file limit {os.sysconf('SC_OPEN_MAX')}")
    print(
        f"SIMULATION: N clients = N real connections from N/{args.threads} real processes "
        f"({args.threads} threads each) to one real store process, all on this machine\n"
    )
    sizes = [int(n) for n in args.clients.split(",")]
    if args.compare:
        compare(sizes, args.threads, args.rounds, args.payload)
        return
    results = [one_size(n, args.threads, args.rounds, args.payload) for n in sizes]
    base = results[0]
    header = (
        f"{'clients':>7} {'procs':>5} {'joined':>6} {'refused':>7} {'connect max':>11} "
        f"{'barrier':>9} {'x':>5} {'store CPU/barrier':>17} {'x':>6} "
        f"{'fan-out':>9} {'x':>6} {'store peak':>10} {'threads':>7} {'files':>5}"
    )
    print(header)
    for r in results:
        print(
            f"{r['clients']:>7} {r['processes']:>5} {r['joined']:>6} {r['refused']:>7} "
            f"{r['connect_max'] * 1e3:>8.0f} ms {r['barrier'] * 1e3:>6.2f} ms {_ratio(r['barrier'], base['barrier']):>5.1f} "
            f"{r['store_cpu_barrier'] * 1e3:>14.2f} ms "
            f"{_ratio(r['store_cpu_barrier'], base['store_cpu_barrier']):>6.1f} "
            f"{r['fanout'] * 1e3:>6.2f} ms {_ratio(r['fanout'], base['fanout']):>6.1f} "
            f"{r['hwm_mb']:>7.1f} MB {r['busiest']['threads']:>7} {r['busiest']['files']:>5}"
        )
        for why in r["refusals"]:
            print(f"        refused: {why}")
        if r["completed"] != r["joined"]:
            print(f"        only {r['completed']} of {r['joined']} participants finished their rendezvous")
    print(
        f"\nratios (x) against {base['clients']} clients; store CPU/barrier is the store process's CPU "
        f"over the {args.rounds} timed barriers, per barrier; "
        f"fan-out: {args.payload} B from each participant, so each receives N x {args.payload} B"
    )
    idle = base["idle"]
    for r in results:
        extra = r["busiest"]["rss_mb"] - idle["rss_mb"]
        print(
            f"  {r['clients']} clients: store RSS {idle['rss_mb']:.1f} MB idle, {r['busiest']['rss_mb']:.1f} MB "
            f"connected ({extra * 1024 / r['clients']:.0f} kB per client), peak {r['hwm_mb']:.1f} MB"
        )


def compare(sizes: list[int], threads: int, rounds: int, payload: int) -> None:
    """Each size against the bare engine, then the shim's store, one after the other; ratios."""
    figures = [
        ("barrier", "barrier"),
        ("fanout", "fan-out"),
        ("store_cpu_barrier", "CPU/barrier"),
        ("store_cpu_fanout", "CPU/fan-out"),
    ]
    print(
        f"{'clients':>7} {'load':>5} "
        + " ".join(f"{name + ' bare':>16} {'shim':>10} {'x':>5}" for _, name in figures)
        + f" {'refused bare/shim':>17}"
    )
    for clients in sizes:
        bare = one_size(clients, threads, rounds, payload, "bare")
        shim = one_size(clients, threads, rounds, payload, "shim")
        load = os.getloadavg()[0]
        print(
            f"{clients:>7} {load:>5.1f} "
            + " ".join(
                f"{bare[key] * 1e3:>13.2f} ms {shim[key] * 1e3:>7.2f} ms {_ratio(shim[key], bare[key]):>5.2f}"
                for key, _ in figures
            )
            + f" {bare['refused']:>8}/{shim['refused']}",
            flush=True,
        )
        for r in (bare, shim):
            for why in r["refusals"]:
                print(f"        {r['engine']} refused: {why}")
            if r["completed"] != r["joined"]:
                print(f"        {r['engine']}: only {r['completed']} of {r['joined']} participants finished")
    print(
        f"\nx: the shim's store / the bare engine, same shape, same run; barrier and fan-out: median per "
        f"call of the slowest participant ({rounds} rounds); fan-out: {payload} B from each participant; "
        f"CPU: the store process's, per call, over the {rounds} timed calls of each kind"
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--launch"]:
        engine, port, clients, threads, start_at, rounds, payload, store_pid = sys.argv[2:]
        launcher(
            engine, int(port), int(clients), int(threads), float(start_at), int(rounds), int(payload), int(store_pid)
        )
    else:
        main()
