"""Test driver: ``xrt2pjrt verify --json`` with a fault injected into the shim (SIMULATED faults).

    python tests/verify_sabotage.py FAULT NPROCS

runs verify in the CPU replica mode, with every replica breaking the shim before the
checks start; the JSON goes to stdout and the exit code is verify's. The faults are the
two the upstream seed reported against early PJRT:

* ``ordering``: the replica group the shim sends lists the last two ordinals swapped, so
  results follow an order that is not the ordinals' (the seed saw [0, 1, 4, 5, 6, 7, 2, 3]
  on a v3-8);
* ``barrier``: ``xm.rendezvous`` returns at once with only the caller's payload, as the
  PJRT nightlies of mid-2022 did ("it doesn't actually introduce a barrier").

Only the replicas are broken (the patches run inside each replica process), never the
judging in the parent.
"""

from __future__ import annotations

import functools
import sys

from xrt2pjrt.runtime import verify, verify_checks


def _swap_last_two_ordinals() -> None:
    from xrt2pjrt.shim import collective_args

    faithful = collective_args.replica_groups

    def swapped(groups, world_size):
        if groups:
            return faithful(groups, world_size)
        order = list(range(world_size))
        order[-2:] = order[:-3:-1]
        return [order]

    collective_args.replica_groups = swapped


def _rendezvous_without_barrier() -> None:
    import xrt2pjrt.shim.xla_model as xm

    def at_once(tag, payload=b"", replicas=[], **options):  # noqa: B006 -- XRT's signature
        return [bytes(payload)]

    xm.rendezvous = at_once


FAULTS = {"ordering": _swap_last_two_ordinals, "barrier": _rendezvous_without_barrier}


def faulty_replica(fault: str, index: int | None = None) -> dict:
    FAULTS[fault]()
    return verify_checks.replica_main(index)


if __name__ == "__main__":
    fault, nprocs = sys.argv[1], int(sys.argv[2])
    sys.exit(verify.main(nprocs, as_json=True, replica=functools.partial(faulty_replica, fault)))
