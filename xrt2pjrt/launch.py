"""`xrt2pjrt launch`: xla_dist's job under PJRT — one command on every worker of a TPU pod.

The words given are the words run. Each word of the command, each ``--env`` value, the conda
environment, the image and the container name is quoted for the worker's shell
(``shlex.quote``): the shell that gcloud's ``--command`` reaches over ssh is the one layer
in between, and it passes every word on as it is — ``$VAR``, ``$(…)``, backquotes, ``~`` and
globs are not expanded there. (xla_dist wrapped each word in double quotes, so all of these
but globs and ``~`` expanded on the worker.) A user who wants the worker's shell to expand a
command says so: ``--shell 'CMD STRING'`` runs ``bash -c 'CMD STRING'`` on each worker (in
the container, with ``--docker-image``). A value that would be read as an option where it
goes (an image or a TPU name starting with ``-``) is refused.

The worker command's shape (/etc/profile read as xla_dist read it, PJRT_DEVICE=TPU, the env,
conda or docker) comes from the same model as ``migrate``'s rewrite of an xla_dist line
(text/xla_dist.py), so a script and this command run the same program on the workers; only
the quoting of the words differs.

The job's secret. The shim's store on a pod lets in only the processes that hold the job's
secret (xrt2pjrt.shim.store): each run makes a new one and hands it to every worker as the
first line of its gcloud's stdin, which the worker command reads into ``XRT2PJRT_JOB_SECRET``
before anything else (so /etc/profile cannot read it first), so that no command line on any
machine holds it (``ps`` shows command lines to every user). Docker passes it into the
container by name, ``sudo --preserve-env`` keeping its value. The program then reads an
empty stdin, as it did before. ``--dry-run`` prints a placeholder, never a secret.

The carried shim. A script migrated to the shim imports ``xrt2pjrt_shim``, the copy that
``migrate --write`` carried into its project (carry.py), and each worker needs that folder
beside the script, of the same version. When the command runs a Python script (``python3
SCRIPT`` or ``python3 -m MODULE``) that exists here and imports the copy, launch looks for the
copy beside it here (refusing to launch when there is none, saying how to make one), and
each worker's command first checks that its own copy has this version: a worker without it
stops before the program starts, saying what to copy where. In a container (--docker-image)
the copy is the image's: that is said, not checked.

Design. One ``gcloud compute tpus tpu-vm ssh NAME --worker=i --command=…`` per worker, run
at once, so that each output line can be prefixed with its worker and each worker's exit
status is known. The worker count comes from ``--num-workers`` or else from ``gcloud
compute tpus tpu-vm describe`` (its ``networkEndpoints``, one per worker). When a worker
fails the others are stopped — a pod cannot go on without one of its hosts, the survivors
would wait in their first collective — and the exit status names the failed workers.
Ctrl-C (or SIGTERM) stops every worker: its local gcloud (a process group of its own: SIGTERM,
then SIGKILL after a grace period), then, since a remote command outlives the ssh client
that started it, the launch's processes on the worker — found by the run id exported in
their environment (``XRT2PJRT_LAUNCH``), and the container, when there is one, by its name —
through one more ``gcloud … ssh --worker=i``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import secrets
import shlex
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from xrt2pjrt import carry
from xrt2pjrt.shim_packages import CARRIED
from xrt2pjrt.shim import settings
from xrt2pjrt.shim.store.secret import new_secret
from xrt2pjrt.text.words import Word
from xrt2pjrt.text.xla_dist import (XRT_ONLY, Launch, Prelude, Seg, Untranslatable, as_argv_text,
                                    gcloud_describe, gcloud_ssh, literal_word)

GRACE_SECONDS = 5.0
STOP_SECONDS = 60.0


class LaunchError(Exception):
    pass


@dataclass(frozen=True)
class Target:
    tpu: str
    zone: str | None = None
    project: str | None = None


@dataclass(frozen=True)
class Request:
    """A launch as the user asked for it: the words of the command line, nothing parsed yet."""

    tpu: str
    command: tuple[str, ...] = ()  # the words after `--`
    shell: str | None = None  # or one string for the worker's shell to expand (--shell)
    zone: str | None = None
    project: str | None = None
    env: tuple[str, ...] = ()  # NAME=VALUE
    conda_env: str | None = None
    docker_image: str | None = None
    docker_container: str | None = None
    docker_run_flags: tuple[str, ...] = ()
    xrt_only: tuple[str, ...] = ()  # xla_dist's XRT-server flags given: said and ignored

    def model(self) -> tuple[Launch, Target]:
        """The launch model and its target; LaunchError for a request that cannot run as given."""
        if self.shell is not None and self.command:
            raise LaunchError("give the command after `--` or as --shell 'CMD', not both")
        if self.shell is not None and not self.shell.strip():
            raise LaunchError("--shell needs a command")
        for flag, value in (("--tpu", self.tpu), ("--docker-image", self.docker_image),
                            ("--docker-container", self.docker_container), ("--conda-env", self.conda_env)):
            if value is not None and (not value or value.startswith("-")):
                raise LaunchError(f"{flag} {value!r}: a name cannot be empty or start with '-' "
                                  "(it would be read as an option)")
        command = ("bash", "-c", self.shell) if self.shell is not None else self.command

        def word(value: str | None) -> Word | None:
            return Word.literal(value) if value is not None else None

        try:
            launch = Launch(
                tpu=Word.literal(self.tpu),
                command=[Word.literal(w) for w in command],
                env=[Word.literal(kv) for kv in self.env],
                conda_env=word(self.conda_env),
                docker_image=word(self.docker_image),
                docker_container=word(self.docker_container),
                docker_run_flags=[Word.literal(f) for f in self.docker_run_flags],
                ignored=[f for f in self.xrt_only if f in XRT_ONLY],
            )
            launch.worker_command(literal_word)  # an --env that is not NAME=VALUE is refused here
        except Untranslatable as exc:
            raise LaunchError(str(exc)) from None
        return launch, Target(self.tpu, self.zone, self.project)


def main(request: Request, num_workers: int | None = None, dry_run_only: bool = False,
         out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """`xrt2pjrt launch`: run (or, with ``dry_run_only``, print) the request; its exit status."""
    launch, target = request.model()
    for flag in launch.ignored:
        print(f"xrt2pjrt launch: ignoring {flag}: PJRT runs no XRT server", file=err)
    shim = shipped_shim(request.command)
    if shim is not None:
        print(f"xrt2pjrt launch: {shim.say(target.tpu, in_container=launch.docker_image is not None)}", file=err)
    if dry_run_only:
        return dry_run(launch, target, num_workers, out, shim)
    return run(launch, target, num_workers, out, err, shim)


# --- the carried shim -------------------------------------------------------------------

_PYTHON = re.compile(r"python[0-9.]*")
_VALUED = frozenset({"-W", "-X", "--check-hash-based-pycs"})  # python's options that take the next word


@dataclass(frozen=True)
class Shipped:
    """The carried shim a launch's script imports: the script as the command names it, the
    folder that must hold the copy (as the command's paths go: relative to the worker's
    working directory, or absolute), and the version of the copy found there on this machine."""

    script: str
    folder: str
    version: str

    @property
    def copy(self) -> str:
        return os.path.normpath(os.path.join(self.folder, CARRIED))

    def say(self, tpu: str, in_container: bool) -> str:
        """What launch says about it: where the workers need it, and how to copy it there."""
        if in_container:
            return (f"{self.script} imports the carried shim ({self.copy}/, xrt2pjrt {self.version}): the image "
                    "must hold it beside the script (not checked from here)")
        return (f"{self.script} imports the carried shim ({self.copy}/, xrt2pjrt {self.version}): each worker checks "
                f"it has that copy before the program starts ({self.copy_command(tpu)} copies it)")

    def copy_command(self, tpu: str) -> str:
        remote = self.folder + "/" if self.folder != "." else ""  # (scp: relative to the worker's home)
        return shlex.join(["gcloud", "compute", "tpus", "tpu-vm", "scp", "--recurse", "--worker=all", self.copy,
                           f"{tpu}:{remote}"])

    def worker_check(self, tpu: str) -> Seg:
        """What a worker runs first (after reading the secret): its copy is this version, or it stops."""
        init = shlex.quote(os.path.join(self.copy, "__init__.py"))
        version = shlex.quote(f'__version__ = "{self.version}"')
        why = shlex.quote(f"xrt2pjrt launch: this worker has no {self.copy}/ of xrt2pjrt {self.version}, which "
                          f"{self.script} imports: copy it from the launching machine ({self.copy_command(tpu)})")
        return Seg(f"grep -qsF {version} {init} || {{ echo {why} >&2; exit 1; }}; ")


def shipped_shim(command: tuple[str, ...]) -> Shipped | None:
    """The carried shim that the Python script ``command`` runs imports; None when the command
    runs no script found here that imports it. LaunchError when it does and no copy is
    beside it here."""
    if not command or not _PYTHON.fullmatch(os.path.basename(command[0])):
        return None
    words = list(command[1:])
    while words and words[0].startswith("-") and words[0] != "-":
        option = words.pop(0)
        if option == "-c" or not words:
            return None
        if option == "-m":  # the module from the working directory, which is sys.path's first entry
            module = os.path.join(*words[0].split("."))
            found = [path for path in (f"{module}.py", os.path.join(module, "__main__.py")) if os.path.isfile(path)]
            return _shipped(found[0], ".") if found else None
        if option in _VALUED:
            words.pop(0)
    return _shipped(words[0], os.path.dirname(words[0]) or ".") if words else None


def _shipped(script: str, folder: str) -> Shipped | None:
    try:
        with open(script, encoding="utf-8", errors="replace") as f:
            source = f.read()
    except OSError:
        return None  # not on this machine: nothing to tell
    if not carry.imports_copy(source):
        return None
    version = carry.version_at(Path(folder))
    if version is None:
        raise LaunchError(f"{script} imports {CARRIED}, and there is no {os.path.join(folder, CARRIED)}/ beside it: "
                          f"run `xrt2pjrt migrate --write --target shim {folder}`, then copy the code with it to "
                          "every worker")
    return Shipped(script, folder, version)


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


# Exported in every worker's command: the processes of this launch are the ones whose
# environment holds it, which is how they are found again to be stopped.
MARKER = settings.LAUNCH.name
# The first thing a worker does: read the job's secret, one line of its stdin. An empty line
# (a --dry-run line run by hand without the variable set) is no secret either.
SECRET = settings.JOB_SECRET.name
READ_SECRET = Seg(f'IFS= read -r {SECRET} && [ -n "${SECRET}" ] || '
                  f'{{ echo "xrt2pjrt launch: no job secret on stdin" >&2; exit 1; }}; export {SECRET}; ')
# What --dry-run shows where a run writes the secret to each gcloud's stdin.
SECRET_PLACEHOLDER = f'printf "%s\\n" "${SECRET}" | '


@dataclass(frozen=True)
class Run:
    """One launch of a command on a pod: the id that marks its processes on the workers, and
    the job's secret, both new for each run."""

    launch: Launch
    target: Target
    id: str
    secret: str = dataclasses.field(repr=False)
    shim: Shipped | None = None  # the carried shim the program imports

    @classmethod
    def new(cls, launch: Launch, target: Target, shim: Shipped | None = None) -> "Run":
        run_id = secrets.token_hex(6)
        if launch.docker_image and not launch.docker_container:  # named, so it can be removed
            launch = dataclasses.replace(launch, docker_container=Word.literal(f"xrt2pjrt-{run_id}"))
        return cls(launch, target, run_id, new_secret(), shim)

    def ssh(self, worker: str) -> list[str]:
        """The gcloud command for a worker; it reads the job's secret from its stdin, then
        checks its copy of the carried shim (outside a container)."""
        check = (self.shim.worker_check(self.target.tpu),) if self.shim and not self.launch.docker_image else ()
        prelude = Prelude((Seg(f"export {MARKER}={self.id}; "), READ_SECRET, *check), (MARKER, SECRET))
        return self._gcloud(worker, as_argv_text(self.launch.worker_command(literal_word, prelude)))

    def stop(self, worker: str) -> list[str]:
        """The command that stops this launch's processes on a worker, even if its ssh is gone."""
        command = (f"for p in $(grep -lzsx {MARKER}={self.id} /proc/[0-9]*/environ | cut -d/ -f3); "
                   'do kill -TERM "$p"; done')
        if self.launch.docker_container:
            name = shlex.quote(self.launch.docker_container.value or "")
            command = f"sudo docker rm -f {name} >/dev/null 2>&1; {command}"
        return self._gcloud(worker, command)

    def _gcloud(self, worker: str, command: str) -> list[str]:
        return gcloud_ssh(self.target.tpu, worker, self.target.zone, self.target.project) + [f"--command={command}"]


def dry_run(launch: Launch, target: Target, num_workers: int | None, out: TextIO, shim: Shipped | None = None) -> int:
    """Print the exact commands a launch would run, the job's secret as a placeholder; run nothing."""
    run_ = Run.new(launch, target, shim)
    if num_workers is None:
        print(shlex.join(gcloud_describe(target.tpu, target.zone, target.project)), file=out)
        workers = ["<i>"]
        print("# then, once per worker i = 0 … N-1, N the networkEndpoints of the TPU above "
              "(--num-workers N gives them here):", file=out)
    else:
        workers = [str(i) for i in range(num_workers)]
    print(f"# each reads the job's secret from its stdin: ${SECRET} stands for it here "
          "(a run makes a new one, the same for every worker)", file=out)
    for worker in workers:
        print(SECRET_PLACEHOLDER + shlex.join(run_.ssh(worker)), file=out)
    return 0


def run(launch: Launch, target: Target, num_workers: int | None, out: TextIO = sys.stdout,
        err: TextIO = sys.stderr, shim: Shipped | None = None) -> int:
    """Run the command on every worker; the exit status: 0, a failed worker's, or 130 on Ctrl-C."""
    n = num_workers if num_workers is not None else worker_count(target)
    return _Pod(Run.new(launch, target, shim), n, out, err).run()


class _Pod:
    def __init__(self, run_: Run, workers: int, out: TextIO, err: TextIO):
        self.run_, self.out, self.err = run_, out, err
        self.argvs = [run_.ssh(str(i)) for i in range(workers)]
        self.lock = threading.Lock()
        self.procs: list[subprocess.Popen] = []

    def run(self) -> int:
        # SIGINT too, explicitly: a launch started from a script in the background inherits
        # it ignored (so Python raises no KeyboardInterrupt), and Ctrl-C or kill -INT must
        # still stop every worker.
        stops = (signal.SIGINT, signal.SIGTERM)
        previous = {s: signal.signal(s, _raise_interrupt) for s in stops} if _main_thread() else {}
        try:
            return self._run()
        except KeyboardInterrupt:
            self._say("interrupted: stopping every worker")
            self._stop(range(len(self.procs)))
            return 130
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _run(self) -> int:
        pumps = []
        for i, argv in enumerate(self.argvs):
            try:
                proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        stdin=subprocess.PIPE, start_new_session=True)
            except FileNotFoundError:
                self._stop(range(len(self.procs)))
                raise LaunchError("gcloud is not on PATH") from None
            self.procs.append(proc)
            self._hand_secret(proc)
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

    def _hand_secret(self, proc: subprocess.Popen) -> None:
        """The job's secret, one line, then the end of the worker's stdin (a few bytes: the
        pipe takes them at once). A gcloud that is gone already fails on its own."""
        try:
            proc.stdin.write(self.run_.secret.encode() + b"\n")
            proc.stdin.close()
        except BrokenPipeError:
            pass

    def _pump(self, worker: int, stream, sink: TextIO) -> None:
        for raw in iter(stream.readline, b""):
            line = raw.decode(errors="replace").rstrip("\r\n")
            with self.lock:
                sink.write(f"[worker {worker}] {line}\n")
                sink.flush()

    def _stop(self, workers) -> None:
        """Stop the workers' gcloud (and what it started here), then the launch's processes on
        each worker: a remote command does not end with the ssh client that started it."""
        workers = list(workers)
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
                break
        stoppers = [threading.Thread(target=self._stop_remote, args=(i,)) for i in workers]
        for t in stoppers:
            t.start()
        for t in stoppers:
            t.join()

    def _stop_remote(self, worker: int) -> None:
        try:
            done = subprocess.run(self.run_.stop(str(worker)), capture_output=True, text=True,
                                  stdin=subprocess.DEVNULL, timeout=STOP_SECONDS)
        except (OSError, subprocess.TimeoutExpired) as exc:
            self._say(f"could not stop worker {worker}: {exc}")
            return
        if done.returncode:
            self._say(f"could not stop worker {worker}: {done.stderr.strip()}")

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
