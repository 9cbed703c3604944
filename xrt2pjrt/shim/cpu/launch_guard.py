"""The launching process under ``xrt2pjrt run``: until it starts its replicas, a script that is
about to run as one process is stopped at once (:func:`guard_launching_process`).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import site
import sys
import sysconfig
import traceback
import types
from collections.abc import Callable
from typing import Any


@dataclasses.dataclass(frozen=True)
class _LaunchGuard:
    stop: Callable[[str, str], Any]
    module: types.ModuleType  # torch_xla._XLAC
    originals: dict[str, Callable]  # name in it -> its function


_launch_guard: _LaunchGuard | None = None


def guard_launching_process(stop: Callable[[str, str], Any]) -> None:
    """Until this process first spawns, a script about to run as one process calls
    ``stop(what, where)``, which is expected to end it: ``what`` is "runtime" when a call
    into torch_xla (through its C++ module, which its whole Python API calls) finds the XLA
    runtime started, "one replica" at a spawn with ``nprocs=1``; ``where`` is the caller's
    file:line and source.

    Nothing that could still start replicas is stopped: torch_xla's spawn refuses a runtime
    already started in its process ("Runtime is already initialized"), and so does the
    shim's on a TPU. A script that never spawns, torchrun style, starts the runtime at its first
    device or ordinal call (2.9's ``xr.world_size()`` starts it), so it stops there, not
    after training for its whole length as one process."""
    global _launch_guard
    import torch_xla

    module = torch_xla._XLAC
    started = module._xla_runtime_is_initialized

    def guarded(original: Callable) -> Callable:
        @functools.wraps(original)
        def call(*args, **kwargs):
            result = original(*args, **kwargs)
            if _launch_guard is not None and started():
                guard = lift_launch_guard()
                if guard is not None:
                    guard.stop("runtime", caller())
            return result

        return call

    originals = {name: value for name, value in vars(module).items() if isinstance(value, types.BuiltinFunctionType)}
    for name, original in originals.items():
        setattr(module, name, guarded(original))
    _launch_guard = _LaunchGuard(stop, module, originals)


def lift_launch_guard() -> _LaunchGuard | None:
    """End the guard (the process is starting its replicas, or stopping): torch_xla's own
    functions again, so that forked replicas inherit them. Returns the guard there was."""
    global _launch_guard
    guard, _launch_guard = _launch_guard, None
    if guard is not None:
        for name, original in guard.originals.items():
            setattr(guard.module, name, original)
    return guard


def caller() -> str:
    """file:line and source of the innermost frame of the user's own code (:func:`user_frame`)."""
    frame = user_frame()
    return f"{frame.filename}:{frame.lineno}: {frame.line}" if frame else "a call inside torch_xla"


def user_frame() -> traceback.FrameSummary | None:
    """The innermost frame of the user's own code: outside the standard library, installed
    packages (torch, torch_xla, Lightning, ...) and the shim's own package (xrt2pjrt, or the
    copy carried into a project); None when the call came from none."""
    own = __name__.partition(".")[0]
    inside = [os.path.dirname(sys.modules[name].__file__) for name in ("torch", "torch_xla", own)]
    inside += [sysconfig.get_paths()["stdlib"], *site.getsitepackages(), site.getusersitepackages()]
    inside = tuple(os.path.join(folder, "") for folder in inside)
    return next(
        (
            frame
            for frame in reversed(traceback.extract_stack())
            if not frame.filename.startswith(inside) and not frame.filename.startswith("<")
        ),
        None,
    )
