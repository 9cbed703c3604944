"""A TPU VM or pod as ``gcloud compute tpus tpu-vm describe NAME --format=json`` reports it.

`xrt2pjrt launch` asks before each try and, during one, every ``--health-poll`` seconds. The
fields are the Cloud TPU API's Node: ``state`` (READY once created and usable; CREATING,
RESTARTING, REPAIRING… while it is not yet or not now; PREEMPTED, TERMINATED, STOPPED…
when waiting will not bring it back), ``health`` (HEALTHY; TIMEOUT, UNHEALTHY_TENSORFLOW,
UNHEALTHY_MAINTENANCE, "under maintenance … will resume running once rescheduled"; left out,
or HEALTH_UNSPECIFIED, while the health monitor has reported nothing) and
``networkEndpoints``, one per worker.

xla_dist (torch_xla 1.13) asked the same API through cloud_tpu_client: it refused to start
unless the state was READY and the health HEALTHY, looked for UNHEALTHY_MAINTENANCE every 10
s of a run, and after one waited for HEALTHY again (up to 1200 s, asking every 30 s). Here a
TPU is ready when READY and HEALTHY (or with no health reported: a launch must not wait
forever on a monitor that says nothing), under maintenance when its health says so or its
state is not READY, and gone in a state that waiting does not end.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from dataclasses import dataclass

READY = "READY"
MAINTENANCE = "UNHEALTHY_MAINTENANCE"
HEALTHY = frozenset({"HEALTHY", "HEALTH_UNSPECIFIED", ""})  # "": gcloud leaves out a health never reported
# States a TPU stays in until someone starts, or recreates, it.
GONE = frozenset({"PREEMPTED", "TERMINATED", "STOPPING", "STOPPED", "DELETING", "HIDING", "HIDDEN"})


class Unanswered(Exception):
    """gcloud could not say: not on PATH, a failed call (its error in the message), or not a TPU."""


@dataclass(frozen=True)
class Tpu:
    state: str
    health: str
    workers: int

    @property
    def ready(self) -> bool:
        return self.state == READY and self.health in HEALTHY

    @property
    def under_maintenance(self) -> bool:
        return self.health == MAINTENANCE or self.state != READY

    @property
    def gone(self) -> bool:
        return self.state in GONE

    def __str__(self) -> str:
        return f"state {self.state or 'not reported'}, health {self.health or 'not reported'}"


def describe(argv: list[str]) -> Tpu:
    """Run the describe command ``argv``; the TPU it prints, or Unanswered."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise Unanswered("gcloud is not on PATH") from None
    if proc.returncode:
        raise Unanswered(f"`{shlex.join(argv)}` failed: {proc.stderr.strip()}")
    try:
        node = json.loads(proc.stdout)
        return Tpu(str(node.get("state") or ""), str(node.get("health") or ""), len(node.get("networkEndpoints") or []))
    except (json.JSONDecodeError, AttributeError):
        raise Unanswered(f"`{shlex.join(argv)}` did not print a TPU as JSON") from None
