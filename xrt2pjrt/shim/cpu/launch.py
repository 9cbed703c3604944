"""The ``launch`` table: in the process ``xrt2pjrt run`` starts, torch_xla's own spawn
(``xmp.spawn``, ``torch_xla.launch``) starts the CPU replicas.
"""

from __future__ import annotations

from xrt2pjrt.shim import spawn_targets
from xrt2pjrt.shim.cpu import supervisor
from xrt2pjrt.shim.cpu.launch_guard import caller, lift_launch_guard
from xrt2pjrt.shim.cpu.placement import active, requested
from xrt2pjrt.shim.cpu.replacements import Replacement, originals


def spawn(fn, nprocs=None, start_method="spawn", args=()):
    """torch_xla's spawn (``xmp.spawn`` and ``torch_xla.launch`` call it, and the shim's
    ``xmp.spawn`` for ``nprocs=1``): ``nprocs=None`` (every device) starts the CPU replicas,
    once pickle has taken ``fn`` and ``args`` as torch_xla's pool would on a TPU; other values
    go to torch_xla (1 runs ``fn`` here, anything else is its ValueError).
    Before the run's first spawn, ``nprocs=1`` is a run of one replica: see
    ``launch_guard.guard_launching_process``."""
    guard = lift_launch_guard()
    torch_xla_spawn = originals["torch_xla._internal.pjrt:spawn"]
    if active():
        return torch_xla_spawn(fn, nprocs, start_method, args)
    if nprocs == 1 and guard is not None:
        guard.stop("one replica", caller())
    if nprocs is None and requested(None):
        # the replicas are forked, but on a TPU torch_xla's pool pickles fn and args even under
        # fork: fail here, as there, rather than run what a pod cannot
        spawn_targets.require_picklable(
            fn,
            args,
            why=f"torch_xla's spawn (xmp.spawn, torch_xla.launch) sends fn and args to its replica "
            f"processes by pickle, even with start_method={start_method!r}, as it does on a TPU",
            remedy="or use the shim's xmp.spawn (xrt2pjrt.shim.xla_multiprocessing) with start_method='fork', "
            "which hands them to the replicas unpickled as XRT did",
        )
        supervisor.spawn(fn, args, None, start_method)
        return None
    return torch_xla_spawn(fn, nprocs, start_method, args)


LAUNCH: tuple[Replacement, ...] = (
    Replacement("torch_xla._internal.pjrt:spawn", spawn, "one replica on CPU (xmp.spawn and torch_xla.launch call it)"),
)
