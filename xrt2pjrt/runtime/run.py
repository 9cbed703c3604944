"""``xrt2pjrt run``: any torch_xla program on N CPU replicas, in the spirit of torchrun.

    xrt2pjrt run --nprocs N SCRIPT [ARGS...]
    xrt2pjrt run --nprocs N --per-process SCRIPT [ARGS...]

By default SCRIPT runs once, in this process, with ``PJRT_DEVICE=CPU``. When it calls
``xmp.spawn`` or ``torch_xla.launch`` (torch_xla's own, or the shim's), N CPU replica
processes start (:mod:`xrt2pjrt.shim.cpu`); inside each one torch_xla's own API
sees the N-replica world (:mod:`xrt2pjrt.shim.cpu.world`). A script that would run
as one process, not N, is stopped with :data:`EXIT_NEVER_SPAWNED` rather than passed off
as an N-replica run: at once when, before its first spawn, it starts the XLA runtime (its
first device or ordinal call; torch_xla's spawn could not start replicas after that) or
spawns with ``nprocs=1``; at its end when it finished without spawning at all.

``--per-process`` is for scripts that never spawn (one process per replica, as under
torchrun): SCRIPT runs N times, each run one replica from its first line, with ``RANK``,
``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``, ``GROUP_RANK`` and
``TORCHELASTIC_RUN_ID`` set as torchrun sets them (so ``torch_xla.launch`` calls its
function in the process, as under torchrun). No ``MASTER_PORT``: ``init_method='xla://'``
meets in the replicas' store, and nothing else is opened for the script.

Several hosts: ``--hosts H --host-index I --master ADDR[:PORT]`` on every host. They set
``XRT2PJRT_CPU_HOSTS``, ``XRT2PJRT_CPU_HOST_INDEX``, ``MASTER_ADDR`` and ``MASTER_PORT``,
which keep working on their own; the replicas' store is served by host 0 (see
:mod:`xrt2pjrt.shim.cpu` for its port).

One shim per process: a script migrated to the shim imports ``xrt2pjrt_shim``, the copy
carried into its project, while run's replicas, launch guard and replacement tables are the
installed shim's. Two copies in one process would each keep their own placement, store and
spawn count, so under run ``xrt2pjrt_shim`` and its modules are the installed shim's
(:class:`InstalledShim`).

At the end of a run (not ``--per-process``), what became of each item to decide of the code it
ran: confirmed, cleared, not reached or not checked (:mod:`xrt2pjrt.runtime.run_items`).

Exit code: by default the script's own. With ``--per-process``, 0 when every replica
finished, else the exit code of the replica that failed (128 + N for a signal N), as a
shell reports it. Output: every replica writes to this terminal, as in the shim's mode.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.abc
import importlib.machinery
import importlib.util
import multiprocessing
import os
import runpy
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from xrt2pjrt.runtime import run_items
from xrt2pjrt.shim_packages import CARRIED, installed_name
from xrt2pjrt.shim import settings
from xrt2pjrt.shim.cpu import launch, launch_guard, placement, replacements, supervisor

EXIT_NEVER_SPAWNED = 3


class RunError(ValueError):
    """The command line asks for something run cannot do."""


def configure(
    nprocs: int, hosts: int | None = None, host_index: int | None = None, master: str | None = None, environ=os.environ
) -> None:
    """The environment the CPU replica mode reads, from run's options."""
    if nprocs < 1:
        raise RunError(f"--nprocs {nprocs}: at least one replica is needed")
    environ["PJRT_DEVICE"] = "CPU"
    environ[settings.CPU_REPLICAS.name] = str(nprocs)
    if hosts is not None:
        environ[settings.CPU_HOSTS.name] = str(hosts)
    if host_index is not None:
        environ[settings.CPU_HOST_INDEX.name] = str(host_index)
    if master:
        address, port = _address_and_port(master)
        environ["MASTER_ADDR"] = address
        if port:
            environ["MASTER_PORT"] = port
    count = settings.CPU_HOSTS.text(environ) or "1"
    index = settings.CPU_HOST_INDEX.text(environ) or "0"
    if not (count.isdigit() and index.isdigit() and int(index) < int(count)):
        raise RunError(
            f"host index {index} is not one of {count} hosts "
            f"(--host-index, --hosts or {settings.CPU_HOST_INDEX.name}, {settings.CPU_HOSTS.name})"
        )


def _address_and_port(master: str) -> tuple[str, str]:
    """'host', 'host:port', '[v6]' or '[v6]:port' -> (address, port or '')."""
    if master.startswith("["):
        address, _, rest = master[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else rest
    elif master.count(":") == 1:
        address, port = master.split(":")
    else:
        address, port = master, ""
    if not address or (port and not port.isdigit()):
        raise RunError(f"--master {master!r} is not ADDR[:PORT]")
    return address, port


def main(
    script: str,
    args: Sequence[str],
    nprocs: int,
    per_process: bool = False,
    hosts: int | None = None,
    host_index: int | None = None,
    master: str | None = None,
) -> int:
    """Run SCRIPT as the options say; return the exit code."""
    if not os.path.isfile(script):
        raise RunError(f"{script}: no such file")
    if importlib.util.find_spec("torch_xla") is None:
        from xrt2pjrt.runtime.doctor import install_command, installed_versions

        raise RunError(
            f"torch_xla is not installed: run needs it ({install_command(installed_versions(), tpu=False)}; "
            "or, in the xrt2pjrt checkout, pip install -e '.[xla]')"
        )
    configure(nprocs, hosts, host_index, master)
    sys.meta_path.insert(0, InstalledShim())
    if per_process:
        return _per_process(script, list(args), nprocs)
    return _once(script, list(args))


def _once(script: str, args: list[str]) -> int:
    replacements.apply("launch", launch.LAUNCH)
    started, world = supervisor.spawn_count(), _world()
    with run_items.watched(script) as watch:  # at the end: what became of each item to decide
        if world > 1:
            launch_guard.guard_launching_process(watch.stopping(functools.partial(_stop, script, world)))
        try:
            code = _exit_code_of(lambda: _execute(script, args))
        finally:
            launch_guard.lift_launch_guard()
    if code == 0 and supervisor.spawn_count() == started and world > 1:
        print(
            f"xrt2pjrt run: {script} finished without starting replicas (no xmp.spawn or "
            f"torch_xla.launch): it ran as one process, not {world} replicas. A script that "
            "runs once per replica needs --per-process.",
            file=sys.stderr,
        )
        return EXIT_NEVER_SPAWNED
    return code


def _stop(script: str, world: int, what: str, where: str) -> NoReturn:
    """End a script that is about to run as one process, not ``world`` replicas (see
    launch_guard.guard_launching_process for ``what``)."""
    if what == "runtime":
        print(
            f"xrt2pjrt run: {script} started torch_xla's runtime in the launching process before "
            f"any xmp.spawn or torch_xla.launch, at {where}\nStopped there: it would run as one process, "
            f"not {world} replicas, and no spawn can start replicas after that (torch_xla: 'Runtime is "
            "already initialized'). A script that runs once per replica (torchrun style, no spawn) needs "
            "--per-process; a script that spawns must use the device only inside the function it spawns.",
            file=sys.stderr,
        )
    else:
        print(
            f"xrt2pjrt run: {script} spawns with nprocs=1 (one replica, in this process), at {where}\n"
            f"Stopped there: run --nprocs asked for {world} replicas. Spawn with nprocs=None (every "
            "device: here, the CPU replicas), or run with --nprocs 1.",
            file=sys.stderr,
        )
    raise SystemExit(EXIT_NEVER_SPAWNED)


def _world() -> int:
    return settings.CPU_REPLICAS.read() * settings.CPU_HOSTS.read()


def _per_process(script: str, args: list[str], nprocs: int) -> int:
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods:
        import torch_xla  # noqa: F401 -- imported once here, each forked replica starts with it

    try:
        supervisor.spawn(
            ScriptReplica(script, args), nprocs=nprocs, start_method="fork" if "fork" in methods else "spawn"
        )
    except supervisor.ReplicaFailed as failure:
        print(f"xrt2pjrt run: {failure}", file=sys.stderr)
        _name_the_marked_spot(str(failure))
        code = failure.exitcode
        return 128 - code if code is not None and code < 0 else code or 1
    return 0


@dataclasses.dataclass(frozen=True)
class ScriptReplica:
    """A spawn target: SCRIPT from its first line, as one replica (torchrun's variables set)."""

    script: str
    args: list[str]

    def __call__(self, index: int) -> None:
        where = placement.placement()
        os.environ.update(
            RANK=str(where.ordinal),
            WORLD_SIZE=str(where.world_size),
            LOCAL_RANK=str(where.local_ordinal),
            LOCAL_WORLD_SIZE=str(where.local_world_size),
            GROUP_RANK=str(where.host),
            TORCHELASTIC_RUN_ID="xrt2pjrt-run",
        )
        _execute(self.script, self.args)


class InstalledShim(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports of the carried copy (``xrt2pjrt_shim``, ``xrt2pjrt_shim.xla_model``, ...)
    answered with the installed shim's modules, the same objects under both names."""

    def find_spec(self, name, path=None, target=None):
        if name != CARRIED and not name.startswith(f"{CARRIED}."):
            return None
        installed = importlib.util.find_spec(installed_name(name))
        if installed is None:
            return None
        return importlib.util.spec_from_loader(name, self, is_package=installed.submodule_search_locations is not None)

    def __init__(self):
        self.specs: dict[str, importlib.machinery.ModuleSpec] = {}  # the installed modules' own

    def create_module(self, spec):
        module = importlib.import_module(installed_name(spec.name))
        self.specs[module.__name__] = module.__spec__
        return module

    def exec_module(self, module):
        # The import system gave the module the carried name's spec: it gets its own back.
        module.__spec__ = self.specs.pop(module.__name__)


def _execute(script: str, args: list[str]) -> None:
    """SCRIPT as ``python SCRIPT ARGS`` runs it: as __main__, its folder first on sys.path
    (put before the tool's own entries, which stay: spawned replicas import xrt2pjrt)."""
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")


def _exit_code_of(call) -> int:
    """What the interpreter would exit with after ``call``: SystemExit's code, 1 after an
    uncaught exception (its traceback printed), 130 after Ctrl-C."""
    try:
        call()
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            return stop.code or 0
        print(stop.code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        traceback.print_exc()
        return 130
    except BaseException as error:  # noqa: BLE001 -- the script's own failure: shown as Python shows it
        traceback.print_exc()
        _name_the_marked_spot(traceback.format_exc() + str(error))
        return 1
    return 0


def _name_the_marked_spot(failure: str) -> None:
    """After a crash, the spot to decide it stopped at, if a TODO line marks it: the migration
    asked a person to look there (a replica's traceback is in its failure's message)."""
    from xrt2pjrt.settling import marked_spot

    spot = marked_spot(failure)
    if spot is not None:
        print(
            f"xrt2pjrt run: it stopped at a spot the migration marked to decide: {spot} "
            f"(xrt2pjrt rules {spot.rule} says why)",
            file=sys.stderr,
        )
