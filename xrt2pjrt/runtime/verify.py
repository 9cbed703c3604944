"""``xrt2pjrt verify``: prove on this machine that ordinals, collectives and rendezvous behave.

It starts every replica of this machine, runs :mod:`xrt2pjrt.runtime.verify_checks` in each, brings
every replica's results back to this process, and judges them together:

* ``PJRT_DEVICE=CPU`` with ``--nprocs N`` (N > 1): the shim's CPU replica mode
  (``xrt2pjrt.shim.cpu``), N processes that are one PJRT CPU replica each and
  one world for the shim and for torch_xla's own API alike;
* otherwise torch_xla's ``run_multiprocess``: every local device (one replica on CPU; every
  chip, or TensorCore on v2/v3, on a TPU VM). On a pod, run it on every worker
  (``xrt2pjrt launch --tpu NAME -- xrt2pjrt verify``): each worker shows its own ordinals.

Exit codes: 0 every check passed, 1 some check failed, 2 verify could not run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xrt2pjrt.runtime import doctor, verify_checks
from xrt2pjrt.shim import settings
from xrt2pjrt.runtime.verify_checks import CheckResult

EXIT_PASSED, EXIT_FAILED, EXIT_NOT_RUN = 0, 1, 2


class CannotVerify(RuntimeError):
    """The replicas could not be started or did not finish."""


@dataclass
class Verification:
    world_size: int
    device: str
    mode: str
    torch_xla: str | None
    checks: list[CheckResult]

    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.checks)


def _cpu_hosts() -> int:
    return settings.CPU_HOSTS.read()


def _start(nprocs: int | None, device: str, replica: Callable) -> tuple[dict[int, dict], int, str]:
    """(reports by ordinal, expected world size, how the replicas were started)."""
    if nprocs is not None and nprocs < 1:
        raise CannotVerify(f"--nprocs {nprocs}: at least one replica is needed")
    if device == "CPU" and nprocs and nprocs > 1:
        from xrt2pjrt.shim.cpu import supervisor

        os.environ["PJRT_DEVICE"] = "CPU"
        try:
            reports = supervisor.spawn(replica, nprocs=nprocs)
        except supervisor.ReplicaFailed as error:
            raise CannotVerify(str(error)) from error
        return reports, nprocs * _cpu_hosts(), "xrt2pjrt CPU replica mode"
    if device == "CPU" and int(os.environ.get("CPU_NUM_DEVICES", "1") or 1) > 1:
        raise CannotVerify(
            f"CPU_NUM_DEVICES={os.environ['CPU_NUM_DEVICES']}: torch_xla aborts in every collective "
            "with several CPU devices in one process; unset it and use --nprocs N"
        )
    if nprocs is not None and device != "CPU":
        raise CannotVerify(f"--nprocs is for CPU; on {device} verify runs every local device")
    os.environ["PJRT_DEVICE"] = device
    from xrt2pjrt.shim import xla_multiprocessing as xmp

    try:
        reports = xmp.run_multiprocess(replica)
    except Exception as error:  # noqa: BLE001 -- whatever stopped the replicas is the message
        raise CannotVerify(f"the replicas did not finish: {type(error).__name__}: {error}") from error
    return reports, _pjrt_world(device, len(reports)), "torch_xla run_multiprocess"


def _pjrt_world(device: str, local_replicas: int) -> int:
    """The world size to expect: the TPU slice's, read like doctor does; else this host's."""
    if device == "TPU":
        found, _, _ = doctor.read_topology(os.environ, doctor.metadata_server())
        if found:
            return found.world_size
    return local_replicas


def run(nprocs: int | None = None, replica: Callable = verify_checks.replica_main) -> Verification:
    """Start the replicas, gather their reports, judge them.

    ``replica`` is the function each replica runs (it must be picklable by reference);
    tests pass a deliberately broken one.
    """
    versions = doctor.installed_versions()
    if versions["torch_xla"] is None:
        raise CannotVerify("torch_xla is not installed: nothing to verify (see xrt2pjrt doctor)")
    device = doctor.runtime_device(os.environ, versions).device
    if device is None:
        raise CannotVerify("torch_xla would pick no device: set PJRT_DEVICE (see xrt2pjrt doctor)")
    reports, world, mode = _start(nprocs, device, replica)
    return Verification(world, device, mode, versions["torch_xla"], verify_checks.judge(reports, world))


# --- rendering ---------------------------------------------------------------------------
def _show(value: Any) -> str:
    """Compact: whole floats as integers, errors by their message."""
    if isinstance(value, dict) and "error" in value:
        return f"error: {value['error'].splitlines()[0]}"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return str(value)


def render(verification: Verification) -> str:
    rows = [("check", "ordinal", "expected", "got", "")]
    checks_by_note: dict[str, list[str]] = {}  # one line per note, naming every check it is about
    for check in verification.checks:
        for number, ordinal in enumerate(check.got):
            rows.append(
                (
                    check.name if number == 0 else "",
                    str(ordinal),
                    _show(check.expected[ordinal]),
                    _show(check.got[ordinal]),
                    "PASS" if check.rows_passed[ordinal] else "FAIL",
                )
            )
        for note in check.notes:
            checks_by_note.setdefault(note, []).append(check.name)
    widths = [max(len(row[column]) for row in rows) for column in range(4)]
    lines = [
        f"xrt2pjrt verify: world size {verification.world_size} on {verification.device} "
        f"({verification.mode}), torch_xla {verification.torch_xla}",
        "",
    ]
    lines += ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[4] for row in rows]
    if checks_by_note:
        lines += ["", "Notes"]
        for note, names in checks_by_note.items():
            lines += [f"  {note}", f"    ({', '.join(names)})"]
    failed = [check.name for check in verification.checks if not check.passed]
    total = len(verification.checks)
    lines.append("")
    lines.append(
        f"{total} checks passed." if not failed else f"{len(failed)} of {total} checks FAILED: {', '.join(failed)}"
    )
    return "\n".join(lines)


def to_record(verification: Verification) -> dict:
    return {
        "world_size": verification.world_size,
        "torch_xla": verification.torch_xla,
        "device": verification.device,
        "mode": verification.mode,
        "passed": verification.passed,
        "checks": [
            {
                "name": check.name,
                "passed": check.passed,
                "expected": {str(o): v for o, v in check.expected.items()},
                "got": {str(o): v for o, v in check.got.items()},
                "detail": check.detail,
            }
            for check in verification.checks
        ],
    }


def main(
    nprocs: int | None,
    as_json: bool,
    replica: Callable = verify_checks.replica_main,
    echo: Callable[[str], None] = print,
    error: Callable[[str], None] = print,
) -> int:
    """Run, print the table or the JSON, return the exit code."""
    try:
        verification = run(nprocs, replica)
    except CannotVerify as reason:
        error(f"xrt2pjrt verify: {reason}")
        return EXIT_NOT_RUN
    echo(json.dumps(to_record(verification), indent=2, default=str) if as_json else render(verification))
    return EXIT_PASSED if verification.passed else EXIT_FAILED
