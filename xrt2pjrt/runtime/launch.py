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
status is known. When a worker fails the others are stopped — a pod cannot go on without one
of its hosts, the survivors would wait in their first collective — and the exit status names
the failed workers. Ctrl-C (or SIGTERM) stops every worker: its local gcloud (a process group
of its own: SIGTERM, then SIGKILL after a grace period), then, since a remote command outlives
the ssh client that started it, the launch's processes on the worker — found by the run id
exported in their environment (``XRT2PJRT_LAUNCH``; TERM, then KILL what is left), and the
container, when there is one, by its name — through one more ``gcloud … ssh --worker=i``.

Tries, as xla_dist made them (torch_xla 1.13: ``MAX_TPU_RETRY = 50``). Before each try,
launch waits until ``gcloud compute tpus tpu-vm describe`` says the TPU is READY and HEALTHY
(tpu_health.py; its ``networkEndpoints`` count the workers unless ``--num-workers`` does),
and asks again every ``--health-poll`` seconds of a try. xla_dist restarted the run on every
worker when the TPU went under maintenance or a worker was lost (ssh's own failure status,
255), and not when the program failed: so does launch, up to ``--max-restarts`` times,
stopping every worker first (as above) so that no copy of the last try holds a TPU beside
the next one. A program may exit 255 itself (``sys.exit(-1)``), which xla_dist took for a lost
worker: each worker's shell reports its exit status last (an EXIT trap), so a gcloud that
ends with 255 after that report ended with the program, and one without it lost the worker.
A program that fails while the TPU is under maintenance was stopped by it: that try is
restarted too. Each try ends with one line: which try, why it ended, what happens next.
"""

from __future__ import annotations

import dataclasses
import itertools
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
from xrt2pjrt.runtime.tpu_health import Tpu, Unanswered, describe
from xrt2pjrt.text.words import Word
from xrt2pjrt.text.xla_dist import (
    XRT_ERA_CONDA_ENV,
    XRT_ONLY,
    Launch,
    Prelude,
    Seg,
    Untranslatable,
    as_argv_text,
    conda_env_note,
    gcloud_describe,
    gcloud_ssh,
    literal_word,
)

GRACE_SECONDS = 5.0
STOP_SECONDS = 60.0
# What ssh exits with when it fails itself (the connection, not the command).
LOST = 255
# How long a worker's exit report may trail its gcloud's end (the pipe is read by a thread).
REPORT_SECONDS = 2.0


class LaunchError(Exception):
    pass


@dataclass(frozen=True)
class Target:
    tpu: str
    zone: str | None = None
    project: str | None = None

    def describe(self) -> list[str]:
        return gcloud_describe(self.tpu, self.zone, self.project)


@dataclass(frozen=True)
class Retries:
    """How a launch outlasts TPU maintenance and lost workers, as xla_dist did."""

    max_restarts: int = 50  # xla_dist's MAX_TPU_RETRY: a first try and up to 50 more
    poll: float = 10.0  # seconds between health checks (xla_dist looked for maintenance every 10 s of a run)
    timeout: float = 1200.0  # seconds a health wait, or stopping a worker, may take (xla_dist's 1200)

    @property
    def tries(self) -> int:
        return self.max_restarts + 1


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
        for flag, value in (
            ("--tpu", self.tpu),
            ("--docker-image", self.docker_image),
            ("--docker-container", self.docker_container),
            ("--conda-env", self.conda_env),
        ):
            if value is not None and (not value or value.startswith("-")):
                raise LaunchError(
                    f"{flag} {value!r}: a name cannot be empty or start with '-' (it would be read as an option)"
                )
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


def main(
    request: Request,
    num_workers: int | None = None,
    dry_run_only: bool = False,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
    retries: Retries = Retries(),
) -> int:
    """`xrt2pjrt launch`: run (or, with ``dry_run_only``, print) the request; its exit status."""
    launch, target = request.model()
    for flag in launch.ignored:
        print(f"xrt2pjrt launch: ignoring {flag}: PJRT runs no XRT server", file=err)
    if request.conda_env is not None and XRT_ERA_CONDA_ENV.search(request.conda_env):
        print(f"xrt2pjrt launch: {conda_env_note(request.conda_env)}", file=err)
    shim = shipped_shim(request.command)
    if shim is not None:
        print(f"xrt2pjrt launch: {shim.say(target.tpu, in_container=launch.docker_image is not None)}", file=err)
    if dry_run_only:
        return dry_run(launch, target, num_workers, out, shim, retries)
    return run(launch, target, num_workers, out, err, shim, retries)


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
            return (
                f"{self.script} imports the carried shim ({self.copy}/, xrt2pjrt {self.version}): the image "
                "must hold it beside the script (not checked from here)"
            )
        return (
            f"{self.script} imports the carried shim ({self.copy}/, xrt2pjrt {self.version}): each worker checks "
            f"it has that copy before the program starts ({self.copy_command(tpu)} copies it)"
        )

    def copy_command(self, tpu: str) -> str:
        remote = self.folder + "/" if self.folder != "." else ""  # (scp: relative to the worker's home)
        return shlex.join(
            ["gcloud", "compute", "tpus", "tpu-vm", "scp", "--recurse", "--worker=all", self.copy, f"{tpu}:{remote}"]
        )

    def worker_check(self, tpu: str) -> Seg:
        """What a worker runs first (after reading the secret): its copy is this version, or it stops."""
        init = shlex.quote(os.path.join(self.copy, "__init__.py"))
        version = shlex.quote(f'__version__ = "{self.version}"')
        why = shlex.quote(
            f"xrt2pjrt launch: this worker has no {self.copy}/ of xrt2pjrt {self.version}, which "
            f"{self.script} imports: copy it from the launching machine ({self.copy_command(tpu)})"
        )
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
        raise LaunchError(
            f"{script} imports {CARRIED}, and there is no {os.path.join(folder, CARRIED)}/ beside it: "
            f"run `xrt2pjrt migrate --write --target shim {folder}`, then copy the code with it to "
            "every worker"
        )
    return Shipped(script, folder, version)


# Exported in every worker's command: the processes of this launch are the ones whose
# environment holds it, which is how they are found again to be stopped.
MARKER = settings.LAUNCH.name
# The first thing a worker does: read the job's secret, one line of its stdin. An empty line
# (a --dry-run line run by hand without the variable set) is no secret either.
SECRET = settings.JOB_SECRET.name
READ_SECRET = Seg(
    f'IFS= read -r {SECRET} && [ -n "${SECRET}" ] || '
    f'{{ echo "xrt2pjrt launch: no job secret on stdin" >&2; exit 1; }}; export {SECRET}; '
)
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

    @property
    def exit_report(self) -> str:
        """What each worker's shell writes last on its stderr, before its exit status."""
        return f"xrt2pjrt launch {self.id}: exit "

    def ssh(self, worker: str) -> list[str]:
        """The gcloud command for a worker; it reads the job's secret from its stdin, then
        checks its copy of the carried shim (outside a container)."""
        check = (self.shim.worker_check(self.target.tpu),) if self.shim and not self.launch.docker_image else ()
        report = Seg(f"trap 'echo \"{self.exit_report}$?\" >&2' EXIT; ")
        prelude = Prelude((Seg(f"export {MARKER}={self.id}; "), report, READ_SECRET, *check), (MARKER, SECRET))
        return self._gcloud(worker, as_argv_text(self.launch.worker_command(literal_word, prelude)))

    def stop(self, worker: str) -> list[str]:
        """The command that stops this launch's processes on a worker, even if its ssh is gone:
        TERM, then KILL what is left after a grace period; it fails while any is left."""
        find = f"grep -lzsx {MARKER}={self.id} /proc/[0-9]*/environ | cut -d/ -f3"
        command = (
            f'p=$({find}); [ -z "$p" ] || kill -TERM $p 2>/dev/null; '
            f'for _ in $(seq {int(GRACE_SECONDS * 5)}); do [ -z "$({find})" ] && break; sleep 0.2; done; '
            f'p=$({find}); [ -z "$p" ] || {{ kill -KILL $p 2>/dev/null; sleep 0.2; }}; [ -z "$({find})" ]'
        )
        if self.launch.docker_container:
            name = shlex.quote(self.launch.docker_container.value or "")
            command = f"sudo docker rm -f {name} >/dev/null 2>&1; {command}"
        return self._gcloud(worker, command)

    def _gcloud(self, worker: str, command: str) -> list[str]:
        return gcloud_ssh(self.target.tpu, worker, self.target.zone, self.target.project) + [f"--command={command}"]


def dry_run(
    launch: Launch,
    target: Target,
    num_workers: int | None,
    out: TextIO,
    shim: Shipped | None = None,
    retries: Retries = Retries(),
) -> int:
    """Print the exact commands a launch would run, the job's secret as a placeholder; run nothing."""
    run_ = Run.new(launch, target, shim)
    print(
        f"# before each try (at most {retries.tries}), until the TPU is READY and HEALTHY; then every "
        f"{retries.poll:g} s of the try, for maintenance:",
        file=out,
    )
    print(shlex.join(target.describe()), file=out)
    if num_workers is None:
        workers = ["<i>"]
        print(
            "# then, once per worker i = 0 … N-1, N the networkEndpoints of the TPU above "
            "(--num-workers N gives them here):",
            file=out,
        )
    else:
        workers = [str(i) for i in range(num_workers)]
    print(
        f"# each reads the job's secret from its stdin: ${SECRET} stands for it here "
        "(a run makes a new one, the same for every worker)",
        file=out,
    )
    for worker in workers:
        print(SECRET_PLACEHOLDER + shlex.join(run_.ssh(worker)), file=out)
    return 0


def run(
    launch: Launch,
    target: Target,
    num_workers: int | None,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
    shim: Shipped | None = None,
    retries: Retries = Retries(),
) -> int:
    """Run the command on every worker, trying again after maintenance or a lost worker; the
    exit status: 0, a failed worker's, 1 when it gives up, or 130 on Ctrl-C."""
    return _Launcher(launch, target, num_workers, out, err, shim, retries).run()


class _GiveUp(Exception):
    """The launch cannot go on: why, in a line."""


@dataclass(frozen=True)
class Ending:
    """How a try ended: ``done``, ``failed`` (the program's own failure), ``restart`` (what
    xla_dist restarted on: maintenance, a lost worker) or ``gone`` (a TPU waiting will not bring back)."""

    why: str
    kind: str
    status: int = 1  # the launch's exit status, when it ends with this try


class _Launcher:
    """The tries of a launch: before each, a wait until the TPU is READY and HEALTHY; after one
    that ended as xla_dist restarted, every worker stopped; at most ``retries.tries``."""

    def __init__(
        self,
        launch: Launch,
        target: Target,
        num_workers: int | None,
        out: TextIO,
        err: TextIO,
        shim: Shipped | None,
        retries: Retries,
    ):
        self.launch, self.target, self.num_workers, self.shim, self.retries = launch, target, num_workers, shim, retries
        self.out, self.err = out, err
        self.lock = threading.Lock()  # one writer at a time on out and err, shared with every try's pumps
        self.attempt: _Try | None = None
        self.unstopped: dict[int, str] = {}  # workers of the last try its stop did not reach, and why
        self.answered = False  # whether gcloud has described the TPU once

    def run(self) -> int:
        # SIGINT too, explicitly: a launch started from a script in the background inherits
        # it ignored (so Python raises no KeyboardInterrupt), and Ctrl-C or kill -INT must
        # still stop every worker.
        stops = (signal.SIGINT, signal.SIGTERM)
        previous = {s: signal.signal(s, _raise_interrupt) for s in stops} if _main_thread() else {}
        try:
            return self._tries()
        except KeyboardInterrupt:
            self.say("interrupted: stopping every worker")
            if self.attempt is not None:
                self.attempt.stop_every_worker()
            return 130
        except _GiveUp as exc:
            self.say(f"{exc}: giving up")
            return 1
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _tries(self) -> int:
        tries, name = self.retries.tries, self.target.tpu
        for k in itertools.count(1):
            tpu = self._wait_until_ready()
            if self.unstopped:
                self._stop_the_last_try()
            workers = self.num_workers if self.num_workers is not None else tpu.workers
            self.attempt = _Try(Run.new(self.launch, self.target, self.shim), workers, self)
            ending = self.attempt.run()
            head = f"try {k} of {tries} ended: {ending.why}"
            if ending.kind == "done":
                self.say(f"{head}: done")
                return 0
            if ending.kind == "failed":
                self.say(f"{head}: the program's own failure, not restarted")
                return ending.status
            last = ending.kind == "gone" or k == tries
            if ending.kind == "gone":
                self.say(
                    f"{head}: stopping every worker; waiting will not bring it back (start or recreate it, "
                    "then launch again): giving up"
                )
            elif last:
                self.say(
                    f"{head}: stopping every worker; no restarts left (--max-restarts "
                    f"{self.retries.max_restarts}): giving up"
                )
            else:
                self.say(f"{head}: stopping every worker, then try {k + 1} once TPU {name} is READY and HEALTHY")
            self.unstopped = self.attempt.stop_every_worker()
            if last:
                return ending.status

    def _wait_until_ready(self) -> Tpu:
        """The TPU once READY and HEALTHY; LaunchError when gcloud cannot describe it at all,
        _GiveUp when it is gone or not ready within the timeout."""
        name, poll, timeout = self.target.tpu, self.retries.poll, self.retries.timeout
        deadline = time.monotonic() + timeout
        waiting = False
        while True:
            try:
                tpu = describe(self.target.describe())
            except Unanswered as exc:
                if not self.answered:  # a wrong name, project or zone: nothing to wait for
                    raise LaunchError(str(exc)) from None
                seen = str(exc)
            else:
                self.answered, seen = True, str(tpu)
                if tpu.ready and (tpu.workers or self.num_workers is not None):
                    return tpu
                if tpu.ready:
                    raise LaunchError(f"TPU {name} has no workers (no networkEndpoints)")
                if tpu.gone:
                    raise _GiveUp(
                        f"TPU {name} is {tpu.state}, which waiting does not end (start or recreate it, "
                        "then launch again)"
                    )
            if time.monotonic() + poll > deadline:
                raise _GiveUp(f"TPU {name} not READY and HEALTHY after {timeout:g} s ({seen})")
            if not waiting:
                self.say(
                    f"TPU {name} is not READY and HEALTHY ({seen}): waiting up to {timeout:g} s, asking "
                    f"every {poll:g} s"
                )
                waiting = True
            time.sleep(poll)

    def check(self) -> Tpu | None:
        """The TPU now, or None when gcloud did not answer (a failed check ends nothing: the
        workers will tell)."""
        try:
            return describe(self.target.describe())
        except Unanswered:
            return None

    def _stop_the_last_try(self) -> None:
        """Stop what the last try left on workers its stop did not reach (a worker that was
        coming back), before a new try starts beside it."""
        deadline = time.monotonic() + self.retries.timeout
        while True:
            self.unstopped = self.attempt.stop_remote(self.unstopped)
            if not self.unstopped:
                return
            if time.monotonic() + self.retries.poll > deadline:
                why = "; ".join(f"worker {i}: {why}" for i, why in sorted(self.unstopped.items()))
                raise _GiveUp(
                    f"could not stop the last try within {self.retries.timeout:g} s ({why}), and will not "
                    "start another beside it"
                )
            time.sleep(self.retries.poll)

    def say(self, message: str) -> None:
        with self.lock:
            self.err.write(f"xrt2pjrt launch: {message}\n")
            self.err.flush()


class _Try:
    """One try: the command on every worker at once, until every worker ends, one fails, one
    is lost, or the TPU goes under maintenance (asked every ``retries.poll`` seconds)."""

    def __init__(self, run_: Run, workers: int, launcher: _Launcher):
        self.run_, self.launcher = run_, launcher
        self.out, self.err, self.lock = launcher.out, launcher.err, launcher.lock
        self.argvs = [run_.ssh(str(i)) for i in range(workers)]
        self.procs: list[subprocess.Popen] = []
        self.pumps: list[threading.Thread] = []
        self.exits: dict[int, int] = {}  # the exit status each worker's shell reported
        self.reported = [threading.Event() for _ in range(workers)]  # its report, or the end of its stderr, came

    def run(self) -> Ending:
        self._start()
        failed: dict[int, int] = {}
        settled: set[int] = set()  # workers whose gcloud failed and whose end is known, or that were stopped
        next_check = time.monotonic() + self.launcher.retries.poll
        while True:
            running = [i for i, p in enumerate(self.procs) if p.poll() is None]
            statuses = {
                i: self._status(i, p.returncode) for i, p in enumerate(self.procs) if p.returncode and i not in settled
            }
            settled.update(statuses)
            lost = [i for i, status in statuses.items() if status is None]
            if lost:
                return Ending(
                    f"worker {_names(lost)} lost (its ssh ended with {LOST} before the command did)", "restart"
                )
            ended = {i: status for i, status in statuses.items() if status}  # (a report of 0: done, ssh failed after)
            if ended:
                if not failed:  # the program's own failure, or the first sign of maintenance?
                    tpu = self.launcher.check()
                    if tpu is not None and tpu.under_maintenance:
                        return self._maintenance(tpu, f"worker {_names(ended)} failed and ")
                failed.update(ended)
                running = [i for i in running if self.procs[i].poll() is None]
                if running:
                    self.launcher.say(f"worker {_names(ended)} failed: stopping worker {_names(running)}")
                    self.stop(running)
                    settled.update(running)
                continue
            if not running:
                break
            if time.monotonic() >= next_check:
                tpu = self.launcher.check()
                if tpu is not None and tpu.under_maintenance:
                    return self._maintenance(tpu)
                next_check = time.monotonic() + self.launcher.retries.poll
            time.sleep(0.05)
        for pump in self.pumps:
            pump.join()
        if not failed:
            return Ending("every worker exited 0", "done", 0)
        codes = ", ".join(f"worker {i}: exit {code}" for i, code in sorted(failed.items()))
        first = failed[min(failed)]
        return Ending(f"failed on worker {_names(failed)} ({codes})", "failed", first if 0 < first < 256 else 1)

    def _maintenance(self, tpu: Tpu, lead: str = "") -> Ending:
        name = self.run_.target.tpu
        if tpu.gone:
            return Ending(f"{lead}TPU {name} is {tpu.state}", "gone")
        return Ending(f"{lead}TPU {name} is under maintenance ({tpu})", "restart")

    def _status(self, worker: int, code: int) -> int | None:
        """The exit status of a worker whose gcloud exited with ``code``: the one its shell
        reported, else ``code``; None for a lost worker (ssh's own failure, and no report)."""
        if code == LOST:
            self.reported[worker].wait(REPORT_SECONDS)
        if worker in self.exits:
            return self.exits[worker]
        return None if code == LOST else code

    def _start(self) -> None:
        for i, argv in enumerate(self.argvs):
            try:
                proc = subprocess.Popen(
                    argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.PIPE, start_new_session=True
                )
            except FileNotFoundError:
                self.stop(range(len(self.procs)))
                raise LaunchError("gcloud is not on PATH") from None
            self.procs.append(proc)
            self._hand_secret(proc)
            for stream, sink, report in ((proc.stdout, self.out, None), (proc.stderr, self.err, self.run_.exit_report)):
                pump = threading.Thread(target=self._pump, args=(i, stream, sink, report), daemon=True)
                pump.start()
                self.pumps.append(pump)

    def _hand_secret(self, proc: subprocess.Popen) -> None:
        """The job's secret, one line, then the end of the worker's stdin (a few bytes: the
        pipe takes them at once). A gcloud that is gone already fails on its own."""
        try:
            proc.stdin.write(self.run_.secret.encode() + b"\n")
            proc.stdin.close()
        except BrokenPipeError:
            pass

    def _pump(self, worker: int, stream, sink: TextIO, report: str | None) -> None:
        """Each line of a worker's output, prefixed with the worker; its exit ``report`` (on
        stderr), kept."""
        for raw in iter(stream.readline, b""):
            line = raw.decode(errors="replace").rstrip("\r\n")
            if report is not None and report in line:  # after the program's last output, on its line if unended
                line, _, status = line.partition(report)
                self.exits[worker] = int(status) if status.isdigit() else -1
                self.reported[worker].set()
                if not line:
                    continue
            with self.lock:
                sink.write(f"[worker {worker}] {line}\n")
                sink.flush()
        if report is not None:
            self.reported[worker].set()

    def stop_every_worker(self) -> dict[int, str]:
        """Stop every worker; the workers whose stop did not reach them, and why. Their output
        until then is written first."""
        unstopped = self.stop(range(len(self.procs)))
        for pump in self.pumps:
            pump.join(GRACE_SECONDS)
        return unstopped

    def stop(self, workers) -> dict[int, str]:
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
        unstopped = self.stop_remote({i: "" for i in workers})
        for worker, why in sorted(unstopped.items()):
            self.launcher.say(f"could not stop worker {worker}: {why}")
        return unstopped

    def stop_remote(self, workers: dict[int, str]) -> dict[int, str]:
        """Run the stop command on each of ``workers`` at once; those it did not stop, and why."""
        unstopped: dict[int, str] = {}

        def stop(worker: int) -> None:
            try:
                done = subprocess.run(
                    self.run_.stop(str(worker)),
                    capture_output=True,
                    text=True,
                    stdin=subprocess.DEVNULL,
                    timeout=STOP_SECONDS,
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                unstopped[worker] = str(exc)
                return
            if done.returncode:  # gcloud's last line says why
                unstopped[worker] = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]

        stoppers = [threading.Thread(target=stop, args=(i,)) for i in workers]
        for t in stoppers:
            t.start()
        for t in stoppers:
            t.join()
        return unstopped


def _names(workers) -> str:
    return ", ".join(str(i) for i in sorted(workers))


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()
