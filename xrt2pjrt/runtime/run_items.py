"""What ``xrt2pjrt run`` says of the items to decide of the code it runs: at a spot the run
passes, the program itself shows whether the item's trouble is there.

An item is a TODO line ``migrate --write`` wrote (``# TODO(xrt2pjrt): message [rule-id]``)
above a statement of the script or of a module it imports from its own folder. While the script
runs, every process of the run (the launching one and each replica) watches the spots whose
trouble a run can show, and writes what it saw, one JSON line a sighting, to a folder of the run:

- manual-mesh-reduce-objects: the value handed to ``xm.mesh_reduce``, saved and loaded back as
  torch_xla 2.x's mesh_reduce loads it (``torch.load(weights_only=True)``): refused, confirmed;
  loaded, cleared.
- manual-send-cpu-data-tensor: the value handed to ``xm.send_cpu_data_to_device``: a bare tensor
  (2.x returns it in a list), confirmed; anything else comes back as it went, cleared.
- spawn-runtime-before: the launching process reaching its spawn with no XLA runtime started,
  cleared; the run stopped because the launching process started it first, confirmed.

At the end the launching process prints each item of the files the run loaded: confirmed,
cleared, not reached (a rule run checks, at a spot no process passed), or not checked (a rule
whose trouble a run does not show, such as a count read as the world size).
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import io
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from xrt2pjrt.shim import settings
from xrt2pjrt.shim.cpu import launch_guard, replacements

_TODO = re.compile(r"^\s*# TODO\(xrt2pjrt\): (?P<message>.*) \[(?P<rule>[\w.-]+)\]\s*$")
MESH_REDUCE, SEND_CPU_DATA, RUNTIME_BEFORE = (
    "manual-mesh-reduce-objects",
    "manual-send-cpu-data-tensor",
    "spawn-runtime-before",
)
CHECKED = frozenset({MESH_REDUCE, SEND_CPU_DATA, RUNTIME_BEFORE})


@dataclasses.dataclass(frozen=True)
class Item:
    """An item to decide: its rule and message, the file, and the lines of its statement."""

    path: str
    first: int
    last: int
    rule: str
    message: str


def items_in(path: str) -> list[Item]:
    """The items of the file ``path``: each TODO line's, at the statement below its TODO lines."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    try:
        ends = {
            node.lineno: node.end_lineno for node in ast.walk(ast.parse("\n".join(lines))) if isinstance(node, ast.stmt)
        }
    except (SyntaxError, ValueError):
        ends = {}
    items, pending = [], []
    for number, line in enumerate(lines, 1):
        todo = _TODO.match(line)
        if todo:
            pending.append(todo)
        elif pending and line.strip() and not line.lstrip().startswith("#"):
            items += [Item(path, number, ends.get(number, number), todo["rule"], todo["message"]) for todo in pending]
            pending = []
    return items


# --- in every process of the run: what it sees ---------------------------------------------


def _saw(rule: str, confirmed: bool, what: str) -> None:
    """Write down a sighting of ``rule``'s trouble (``confirmed``) or of its absence, at the
    user's code that called into torch_xla."""
    folder, frame = settings.RUN_ITEMS.text(), launch_guard.user_frame()
    if not folder or frame is None or not os.path.isdir(folder):
        return
    sighting = {
        "path": os.path.realpath(frame.filename),
        "line": frame.lineno,
        "rule": rule,
        "confirmed": confirmed,
        "what": what,
    }
    with open(os.path.join(folder, f"{os.getpid()}.jsonl"), "a", encoding="utf-8") as handle:
        handle.write(json.dumps(sighting) + "\n")


def _loads_as_mesh_reduce_does(data: Any) -> tuple[bool, str]:
    """(refused, what): ``data`` saved and loaded back as torch_xla 2.x's mesh_reduce does."""
    import pickle

    import torch
    import torch_xla.core.xla_model as xm

    kind = f"{type(data).__module__}.{type(data).__qualname__}".removeprefix("builtins.")
    saved = io.BytesIO()
    torch.save(xm._maybe_convert_to_cpu(data), saved)
    saved.seek(0)
    try:
        torch.load(saved, weights_only=True)
    except pickle.UnpicklingError:
        return True, f"got a {kind}, which torch.load(weights_only=True) refuses"
    return False, f"got a {kind}, which loads as before"


def _mesh_reduce(tag, data, reduce_fn):
    _saw(MESH_REDUCE, *_loads_as_mesh_reduce_does(data))
    return replacements.originals["torch_xla.core.xla_model:mesh_reduce"](tag, data, reduce_fn)


def _send_cpu_data_to_device(datas, device, *args, **kwargs):
    import torch

    bare = isinstance(datas, torch.Tensor)
    _saw(
        SEND_CPU_DATA,
        bare,
        "got a bare tensor: 2.x returns it in a one-element list"
        if bare
        else f"got a {type(datas).__name__}, which comes back as it went",
    )
    return replacements.originals["torch_xla.core.xla_model:send_cpu_data_to_device"](datas, device, *args, **kwargs)


@dataclasses.dataclass(frozen=True)
class WatchedReplica:
    """A spawn's function that watches its replica's spots first (a replica started with
    start_method='spawn' is a new interpreter: the launching process's watch is not in it)."""

    fn: Callable

    def __call__(self, index: int, *args: Any) -> Any:
        watch()
        return self.fn(index, *args)


def _spawn(fn, args=(), nprocs=None, join=True, daemon=False, start_method="spawn"):
    import torch_xla

    started = torch_xla._XLAC._xla_runtime_is_initialized()
    _saw(
        RUNTIME_BEFORE,
        started,
        "the launching process had started the XLA runtime before this spawn"
        if started
        else "the launching process reached this spawn with no XLA runtime started",
    )
    return replacements.originals["torch_xla.distributed.xla_multiprocessing:spawn"](
        WatchedReplica(fn), args, nprocs, join, daemon, start_method
    )


# What every process watches; and what the launching process watches too (in a replica,
# xmp.spawn is the CPU replicas' own: a nested spawn, which they refuse).
WATCHED = (
    replacements.Replacement("torch_xla.core.xla_model:mesh_reduce", _mesh_reduce, "torch_xla's, its value watched"),
    replacements.Replacement(
        "torch_xla.core.xla_model:send_cpu_data_to_device", _send_cpu_data_to_device, "torch_xla's, its value watched"
    ),
)
WATCHED_LAUNCH = (
    replacements.Replacement(
        "torch_xla.distributed.xla_multiprocessing:spawn",
        _spawn,
        "torch_xla's, the launching process's runtime watched",
    ),
)


def watch() -> None:
    """Watch this process's spots, once (its torch_xla functions wrapped: replacements.apply)."""
    replacements.apply("watched", WATCHED)


# --- in the launching process: the run's items, and what became of each --------------------


@dataclasses.dataclass
class Watch:
    """The run's folder of sightings; :meth:`report` says what became of each item."""

    script: str
    folder: str

    def stopping(self, stop: Callable[[str, str], Any]) -> Callable[[str, str], Any]:
        """``stop`` (run's end of a script that would run as one process), first writing down
        that the launching process started the runtime before any spawn: every spawn's
        spawn-runtime-before item is then confirmed."""

        @functools.wraps(stop)
        def stopped(what: str, where: str) -> Any:
            if what == "runtime":
                with open(os.path.join(self.folder, "stopped.json"), "w", encoding="utf-8") as handle:
                    json.dump({"where": where}, handle)
            return stop(what, where)

        return stopped

    def report(self) -> str:
        """One line a item of the files the run loaded from the script's folder, or ""."""
        items = [item for path in _loaded_files(self.script) for item in items_in(path)]
        if not items:
            return ""
        sightings = [
            json.loads(line)
            for file in Path(self.folder).glob("*.jsonl")
            for line in file.read_text(encoding="utf-8").splitlines()
        ]
        stopped = Path(self.folder, "stopped.json")
        runtime_at = json.loads(stopped.read_text(encoding="utf-8"))["where"] if stopped.exists() else None
        here = os.path.dirname(os.path.realpath(self.script))
        lines = ["xrt2pjrt run: the items to decide of the code it ran, as the run saw them:"]
        for item in items:
            verdict, what = _verdict(item, sightings, runtime_at)
            place = f"{os.path.relpath(item.path, here)}:{item.first}"
            lines.append(f"  {verdict:<12} {place} [{item.rule}] {what or item.message}")
        return "\n".join(lines)


def _verdict(item: Item, sightings: list[dict], runtime_at: str | None) -> tuple[str, str]:
    """confirmed, cleared, not reached or not checked, and what the run saw there."""
    if item.rule not in CHECKED:
        return "not checked", "(a run does not show this: decide by reading the code)"
    if item.rule == RUNTIME_BEFORE and runtime_at is not None:
        return "confirmed", f"the launching process started the XLA runtime before any spawn, at {runtime_at}"
    seen = [
        s
        for s in sightings
        if s["rule"] == item.rule and s["path"] == item.path and item.first <= s["line"] <= item.last
    ]
    if not seen:
        return "not reached", ""
    confirmed = [s for s in seen if s["confirmed"]]
    calls = f"{len(seen)} call{'s' * (len(seen) > 1)}"
    if confirmed:
        return "confirmed", f"{confirmed[0]['what']} ({len(confirmed)} of {calls})"
    return "cleared", f"{seen[0]['what']} ({calls})"


def _loaded_files(script: str) -> list[str]:
    """The script, and the modules this process loaded from its folder and below, in order."""
    here = os.path.join(os.path.dirname(os.path.realpath(script)), "")
    files = [os.path.realpath(script)]
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if path and path.endswith(".py") and os.path.realpath(path).startswith(here):
            files.append(os.path.realpath(path))
    return list(dict.fromkeys(files))


@contextlib.contextmanager
def watched(script: str) -> Iterator[Watch]:
    """The run of ``script`` watched: its processes write their sightings to a folder of the
    run; on the way out, what became of each item is printed (stderr), and the folder removed."""
    folder = tempfile.mkdtemp(prefix="xrt2pjrt-run-items-")
    os.environ[settings.RUN_ITEMS.name] = folder  # (the replicas inherit it)
    run = Watch(script, folder)
    try:
        watch()
        replacements.apply("watched launch", WATCHED_LAUNCH)
        yield run
    finally:
        said = run.report()
        if said:
            print(said, file=sys.stderr)
        os.environ.pop(settings.RUN_ITEMS.name, None)
        shutil.rmtree(folder, ignore_errors=True)
