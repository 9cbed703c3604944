"""The checks ``xrt2pjrt verify`` runs on every replica, and how their results are judged.

The checks are the upstream reproduction of the ordering bug (pytorch/xla #3824: seed
``mismatched-rank-in-collective-ops``) generalised to any world size N, plus the barrier
its author asked for. A program that trusts ``get_ordinal()`` expects, on ordinal i:

====================  =========================================  ===========================
check                 what each replica sends                    expected on ordinal i
====================  =========================================  ===========================
all_gather            [i]                                        [0, 1, ..., N-1]
reduce_scatter        -[0, 1, ..., N-1], scale 1/N               [-i]
all_to_all            [[-0..-(N-1)], [i]*N] split 0, concat 2    [[[-i]*N, [0, ..., N-1]]]
all_reduce            [i + 1], sum                               [N(N+1)/2]
collective_permute    [i], ring pairs (k, k+1 mod N)             [i-1 mod N]
rendezvous payloads   b"pi"                                      [p0, p1, ..., pN-1]
rendezvous barrier    ordinal N-1 arrives LATE_SECONDS late      others wait >= LATE_SECONDS/2
mesh_reduce           i, reduce_fn = list                        [0, 1, ..., N-1]
====================  =========================================  ===========================

Each check is written once and runs against two APIs: the shim's
(``xrt2pjrt.shim.xla_model``) and torch_xla's own (``torch_xla.core.xla_model`` with
``torch_xla.runtime`` ordinals; in the CPU replica mode the replicas are one torch_xla world
too, see ``xrt2pjrt.shim.cpu.world``). A replica returns plain data (:func:`replica_main`); the
parent judges every replica's data together (:func:`judge`), so the expected values come
from ordinals and the world size, never from a table.

This module imports torch and torch_xla only inside the replica: the parent that spawns
the replicas does not pay for them.
"""

from __future__ import annotations

import dataclasses
import operator
import os
import random
import time
import traceback
from collections.abc import Callable
from typing import Any

LATE_SECONDS = 1.0
SHIM, NATIVE = "shim", "torch_xla"


@dataclasses.dataclass(frozen=True)
class AtLeast:
    """An expected lower bound (seconds waited in the barrier)."""

    seconds: float

    def __str__(self) -> str:
        return f"waits ≥ {self.seconds:g} s"


@dataclasses.dataclass(frozen=True)
class Api:
    """The functions a check calls: the shim's, or torch_xla's own."""

    label: str
    xm: Any  # a module with torch_xla.core.xla_model's collectives and rendezvous
    ordinal: Callable[[], int]
    world_size: Callable[[], int]
    local_ordinal: Callable[[], int]


@dataclasses.dataclass(frozen=True)
class Check:
    name: str
    # On a replica: what it got, as plain Python data.
    run: Callable[[Api, Any], Any]
    # (ordinal, world size) -> what XLA on a TPU pod returns to that ordinal.
    expect: Callable[[int, int], Any]
    # Why the check proves nothing with one replica; None when it still does.
    trivial: str | None
    accepts: Callable[[Any, Any], bool] = operator.eq
    # world size -> what the reader should know about the setup
    note: Callable[[int], str] | None = None


def _values(tensor) -> list:
    return tensor.cpu().tolist()


def _ordinal_tensor(api: Api, device):
    import torch

    return (torch.ones(1) * api.ordinal()).to(device)


def _all_gather(pin_layout: bool):
    def run(api: Api, device):
        return _values(api.xm.all_gather(_ordinal_tensor(api, device), dim=0, pin_layout=pin_layout))

    return run


def _reduce_scatter(api: Api, device):
    import torch

    world = api.world_size()
    value = -torch.arange(world, dtype=torch.float32)
    return _values(api.xm.reduce_scatter("sum", value.to(device), 1.0 / world, 0, world, pin_layout=False))


def _all_to_all(api: Api, device):
    import torch

    world = api.world_size()
    value = torch.cat(
        [-torch.arange(world, dtype=torch.float32).view(-1, 1, 1), torch.ones(world, 1, 1) * api.ordinal()], dim=1
    )
    return _values(api.xm.all_to_all(value.to(device), 0, 2, world, pin_layout=False))


def _all_reduce(api: Api, device):
    import torch

    return _values(api.xm.all_reduce("sum", (torch.ones(1) * (api.ordinal() + 1)).to(device)))


def _collective_permute(api: Api, device):
    world = api.world_size()
    ring = [[k, (k + 1) % world] for k in range(world)]
    return _values(api.xm.collective_permute(_ordinal_tensor(api, device), ring))


def _payloads(api: Api, device):
    received = api.xm.rendezvous("xrt2pjrt.verify.payloads", f"p{api.ordinal()}".encode())
    return [bytes(payload).decode("utf-8", "replace") for payload in received]


def _barrier(api: Api, device) -> float:
    """Seconds this replica waited in a rendezvous that ordinal N-1 reaches late."""
    api.xm.rendezvous("xrt2pjrt.verify.barrier.start")
    if api.ordinal() == api.world_size() - 1 > 0:
        time.sleep(LATE_SECONDS)
    entered = time.monotonic()
    api.xm.rendezvous("xrt2pjrt.verify.barrier")
    return round(time.monotonic() - entered, 3)


def _barrier_expected(ordinal: int, world: int) -> AtLeast:
    # Everybody left the start rendezvous together, so a replica that leaves the barrier
    # before the late one arrived waited much less than LATE_SECONDS.
    return AtLeast(0.0 if ordinal == world - 1 else LATE_SECONDS / 2)


def _mesh_reduce(api: Api, device):
    return api.xm.mesh_reduce("xrt2pjrt.verify.mesh_reduce", api.ordinal(), list)


ONE_REPLICA = "one replica gets its own data back whatever the ordering"
CHECKS = (
    Check("all_gather pin_layout=False", _all_gather(False), lambda i, n: [float(k) for k in range(n)], ONE_REPLICA),
    Check("all_gather pin_layout=True", _all_gather(True), lambda i, n: [float(k) for k in range(n)], ONE_REPLICA),
    Check("reduce_scatter", _reduce_scatter, lambda i, n: [float(-i)], ONE_REPLICA),
    Check("all_to_all", _all_to_all, lambda i, n: [[[float(-i)] * n, [float(k) for k in range(n)]]], ONE_REPLICA),
    Check("all_reduce sum", _all_reduce, lambda i, n: [float(n * (n + 1) // 2)], "a sum over one replica"),
    Check(
        "collective_permute ring",
        _collective_permute,
        lambda i, n: [float((i - 1) % n)],
        "the ring sends each replica its own value",
    ),
    Check("rendezvous payloads", _payloads, lambda i, n: [f"p{k}" for k in range(n)], ONE_REPLICA),
    Check(
        "rendezvous barrier",
        _barrier,
        _barrier_expected,
        "nobody to wait for",
        accepts=lambda expected, got: isinstance(got, (int, float)) and got >= expected.seconds,
        note=lambda n: f"ordinal {n - 1} arrives {LATE_SECONDS:g} s late" if n > 1 else "",
    ),
    Check("mesh_reduce", _mesh_reduce, lambda i, n: list(range(n)), ONE_REPLICA),
)


# --- on each replica ---------------------------------------------------------------------
def _apis() -> list[Api]:
    import torch_xla.core.xla_model as native_xm
    import torch_xla.runtime as xr

    import xrt2pjrt.shim.xla_model as shim_xm

    return [
        Api(SHIM, shim_xm, shim_xm.get_ordinal, shim_xm.xrt_world_size, shim_xm.get_local_ordinal),
        Api(NATIVE, native_xm, xr.global_ordinal, xr.world_size, xr.local_ordinal),
    ]


def _error(error: BaseException) -> dict:
    return {"error": f"{type(error).__name__}: {error}".strip(), "traceback": traceback.format_exc()}


def _replica_id(device) -> int:
    """XLA's replica id of this replica: where a collective with no replica groups puts it.

    Every replica sends a random token through torch_xla's own all_gather with implicit
    groups, which XLA orders by replica id; ordinals play no part in it.
    """
    import torch
    import torch_xla.core.xla_model as native_xm

    token = random.SystemRandom().randrange(1, 2**31 - 1)
    tokens = _values(native_xm.all_gather(torch.tensor([token], dtype=torch.int32).to(device), pin_layout=False))
    return tokens.index(token)


def replica_main(index: int | None = None) -> dict:
    """Run every check on this replica; return plain data for the parent to judge.

    ``index`` is what the CPU replica mode's spawn passes (the parent knows it already);
    torch_xla's ``run_multiprocess`` passes nothing.
    """
    # The parent's stdout carries the table or the JSON: replicas write to stderr only.
    os.dup2(2, 1)
    import xrt2pjrt.shim.xla_model as shim_xm
    from xrt2pjrt.shim.cpu import placement

    device = shim_xm.xla_device()
    apis = _apis()
    report: dict[str, Any] = {"identity": {}, "results": {}}
    if not placement.active():  # there the mode defines the replica ids: the launched ordinals
        try:
            report["replica_id"] = _replica_id(device)
        except Exception as error:  # noqa: BLE001 -- reported as this replica's result
            report["replica_id"] = _error(error)
    for api in apis:
        identity = {}
        for field, call in (
            ("ordinal", api.ordinal),
            ("world_size", api.world_size),
            ("local_ordinal", api.local_ordinal),
        ):
            try:
                identity[field] = call()
            except Exception as error:  # noqa: BLE001
                identity[field] = _error(error)
        report["identity"][api.label] = identity
        for check in CHECKS:
            try:
                got = check.run(api, device)
            except Exception as error:  # noqa: BLE001 -- one broken check must not hide the rest
                got = _error(error)
            report["results"][f"{check.name} ({api.label})"] = got
    return report


# --- in the parent -----------------------------------------------------------------------
@dataclasses.dataclass
class CheckResult:
    name: str
    passed: bool
    expected: dict[int, Any]  # by ordinal (the one each replica was launched as)
    got: dict[int, Any]
    rows_passed: dict[int, bool]
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def detail(self) -> str:
        return "; ".join(self.notes)


def _is_error(value: Any) -> bool:
    return isinstance(value, dict) and "error" in value


def _result(name: str, expected: dict[int, Any], got: dict[int, Any], accepts, notes: list[str]) -> CheckResult:
    rows = {o: not _is_error(got[o]) and accepts(expected[o], got[o]) for o in got}
    errors = [f"ordinal {o} raised {got[o]['error']}" for o in got if _is_error(got[o])]
    wrong = [o for o in got if not rows[o] and not _is_error(got[o])]
    if wrong:
        notes = [f"wrong on ordinal{'s' if len(wrong) > 1 else ''} {', '.join(map(str, wrong))}"] + notes
    return CheckResult(name, all(rows.values()), expected, got, rows, errors + notes)


def _ordinal_results(
    reports: dict[int, dict], label: str, world: int, replica_ids: dict[int, int], id_source: str
) -> list[CheckResult]:
    identities = {o: r["identity"][label] for o, r in reports.items()}
    local = {o: position for position, o in enumerate(sorted(reports))}
    return [
        _result(
            f"ordinal = replica id ({label})",
            replica_ids,
            {o: i["ordinal"] for o, i in identities.items()},
            operator.eq,
            [f"replica id: {id_source}"],
        ),
        _result(
            f"world size ({label})",
            {o: world for o in reports},
            {o: i["world_size"] for o, i in identities.items()},
            operator.eq,
            [],
        ),
        _result(
            f"local ordinal ({label})",
            local,
            {o: i["local_ordinal"] for o, i in identities.items()},
            operator.eq,
            ["expected: the ordinal's position among this host's ordinals"],
        ),
    ]


def labels_run(reports: dict[int, dict]) -> list[str]:
    first = next(iter(reports.values()))
    return list(first["identity"])


def judge(reports: dict[int, dict], world: int) -> list[CheckResult]:
    """Every check over every replica's report. ``reports`` maps the ordinal each replica was
    launched as to what :func:`replica_main` returned; ``world`` is the world size the
    launcher asked for."""
    if "replica_id" in next(iter(reports.values())):
        replica_ids = {o: r["replica_id"] for o, r in reports.items()}
        id_source = "position in torch_xla's all_gather with no replica groups (XLA's order)"
    else:
        replica_ids = {o: o for o in reports}
        id_source = "the ordinal the CPU replica mode launched the replica as"
    results = []
    for label in labels_run(reports):
        results += _ordinal_results(reports, label, world, replica_ids, id_source)
        # The program's view: expectations follow the ordinal the API reported (the
        # launcher's where the API raised).
        seen = {o: r["identity"][label]["ordinal"] for o, r in reports.items()}
        seen = {o: (s if isinstance(s, int) else o) for o, s in seen.items()}
        for check in CHECKS:
            name = f"{check.name} ({label})"
            expected = {o: check.expect(seen[o], world) for o in reports}
            notes = []
            if world == 1 and check.trivial:
                notes.append(f"trivial at world size 1: {check.trivial}")
            if check.note and check.note(world):
                notes.append(check.note(world))
            results.append(
                _result(name, expected, {o: r["results"][name] for o, r in reports.items()}, check.accepts, notes)
            )
    return results
