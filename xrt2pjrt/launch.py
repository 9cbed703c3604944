"""`xrt2pjrt launch`: xla_dist's job under PJRT — one command on every worker of a TPU pod.

The worker command comes from the same model as ``migrate``'s rewrite of an xla_dist line
(text/xla_dist.py), so a script and this command run the same thing on the workers.

Design. One ``gcloud compute tpus tpu-vm ssh NAME --worker=i --command=…`` per worker, run
at once, so that each output line can be prefixed with its worker and each worker's exit
status is known. The worker count comes from ``--num-workers`` or else from ``gcloud
compute tpus tpu-vm describe`` (its ``networkEndpoints``, one per worker). When a worker
fails the others are stopped — a pod cannot go on without one of its hosts, the survivors
would wait in their first collective — and the exit status names the failed workers.
Ctrl-C (or SIGTERM) stops every worker's gcloud and everything it started: each runs in
a process group of its own, which gets SIGTERM, then SIGKILL after a grace period.
Stopping the local ssh client ends the remote command only as far as sshd hangs it up.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import TextIO

from xrt2pjrt.text.xla_dist import Launch, as_argv_text, gcloud_describe, gcloud_ssh

GRACE_SECONDS = 5.0


class LaunchError(Exception):
    pass


@dataclass(frozen=True)
class Target:
    tpu: str
    zone: str | None = None
    project: str | None = None


def worker_count(target: Target) -> int:
    argv = gcloud_describe(target.tpu, target.zone, target.project)
    try:
        proc = subprocess.run(argv, capture_output=True, text=True)
    except FileNotFoundError:
        raise LaunchError("gcloud is not on PATH") from None
    if proc.returncode:
        raise LaunchError(f"`{shlex.join(argv)}` failed: {proc.stderr.strip()}")
    try:
        endpoints = json.loads(proc.stdout).get("networkEndpoints") or []
    except (json.JSONDecodeError, AttributeError):
        raise LaunchError(f"`{shlex.join(argv)}` did not print a TPU as JSON") from None
    if not endpoints:
        raise LaunchError(f"TPU {target.tpu} has no workers (no networkEndpoints); is it READY?")
    return len(endpoints)


def ssh_commands(launch: Launch, target: Target, workers: list[str]) -> list[list[str]]:
    command = as_argv_text(launch.worker_command())
    return [gcloud_ssh(target.tpu, w, target.zone, target.project) + [f"--command={command}"] for w in workers]


def dry_run(launch: Launch, target: Target, num_workers: int | None, out: TextIO, err: TextIO) -> int:
    """Print the exact commands a launch would run; run nothing."""
    if num_workers is None:
        print(shlex.join(gcloud_describe(target.tpu, target.zone, target.project)), file=out)
        workers = ["<i>"]
        print("# then, once per worker i = 0 … N-1, N the networkEndpoints of the TPU above "
              "(--num-workers N gives them here):", file=out)
    else:
        workers = [str(i) for i in range(num_workers)]
    for argv in ssh_commands(launch, target, workers):
        print(shlex.join(argv), file=out)
    return 0


def run(launch: Launch, target: Target, num_workers: int | None, out: TextIO = sys.stdout,
        err: TextIO = sys.stderr) -> int:
    """Run the command on every worker; the exit status: 0, a failed worker's, or 130 on Ctrl-C."""
    n = num_workers if num_workers is not None else worker_count(target)
    argvs = ssh_commands(launch, target, [str(i) for i in range(n)])
    return _Pod(argvs, out, err).run()


class _Pod:
    def __init__(self, argvs: list[list[str]], out: TextIO, err: TextIO):
        self.argvs, self.out, self.err = argvs, out, err
        self.lock = threading.Lock()
        self.procs: list[subprocess.Popen] = []

    def run(self) -> int:
        previous = signal.signal(signal.SIGTERM, _raise_interrupt) if _main_thread() else None
        try:
            return self._run()
        except KeyboardInterrupt:
            self._say("interrupted: stopping every worker")
            self._stop(range(len(self.procs)))
            return 130
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)

    def _run(self) -> int:
        pumps = []
        for i, argv in enumerate(self.argvs):
            try:
                proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        stdin=subprocess.DEVNULL, start_new_session=True)
            except FileNotFoundError:
                self._stop(range(len(self.procs)))
                raise LaunchError("gcloud is not on PATH") from None
            self.procs.append(proc)
            for stream, sink in ((proc.stdout, self.out), (proc.stderr, self.err)):
                pump = threading.Thread(target=self._pump, args=(i, stream, sink), daemon=True)
                pump.start()
                pumps.append(pump)
        failed: dict[int, int] = {}
        stopped: list[int] = []
        while any(p.poll() is None for p in self.procs):
            newly = {i: p.returncode for i, p in enumerate(self.procs)
                     if p.returncode not in (None, 0) and i not in failed and i not in stopped}
            failed.update(newly)
            running = [i for i, p in enumerate(self.procs) if p.poll() is None]
            if newly and running:
                self._say(f"worker {_names(newly)} failed: stopping worker {_names(running)}")
                self._stop(running)
                stopped += running
            time.sleep(0.05)
        for pump in pumps:
            pump.join()
        failed.update({i: p.returncode for i, p in enumerate(self.procs)
                       if p.returncode != 0 and i not in stopped})
        if not failed:
            return 0
        codes = ", ".join(f"worker {i}: exit {code}" for i, code in sorted(failed.items()))
        self._say(f"failed on worker {_names(failed)} ({codes})")
        first = failed[min(failed)]
        return first if 0 < first < 256 else 1

    def _pump(self, worker: int, stream, sink: TextIO) -> None:
        for raw in iter(stream.readline, b""):
            line = raw.decode(errors="replace").rstrip("\r\n")
            with self.lock:
                sink.write(f"[worker {worker}] {line}\n")
                sink.flush()

    def _stop(self, workers) -> None:
        live = [self.procs[i] for i in workers if self.procs[i].poll() is None]
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for p in live:
                try:
                    os.killpg(p.pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + GRACE_SECONDS
            while time.monotonic() < deadline and any(p.poll() is None for p in live):
                time.sleep(0.05)
            live = [p for p in live if p.poll() is None]
            if not live:
                return

    def _say(self, message: str) -> None:
        with self.lock:
            self.err.write(f"xrt2pjrt launch: {message}\n")
            self.err.flush()


def _names(workers) -> str:
    return ", ".join(str(i) for i in sorted(workers))


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()
