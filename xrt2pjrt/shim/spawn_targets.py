"""How spawn's ``fn`` and ``args`` reach the replica processes: inherited under fork, as
XRT did, pickled otherwise.

XRT's ``xmp.spawn`` started replicas with ``torch.multiprocessing.start_processes``. With
``start_method='fork'`` each child inherited ``fn`` and ``args`` with the parent's memory:
nested functions, lambdas, locks and open files all worked. With ``'spawn'`` or
``'forkserver'`` the children got them by pickle, and the parent raised for anything pickle
refuses before any replica ran.

torch_xla 2.x's spawn (``torch_xla._internal.pjrt.run_multiprocess``) hands its call to a
``ProcessPoolExecutor``, whose call queue pickles every call even when the workers are
forked: "Can't pickle local object" for the XRT-era ``def _mp_fn`` nested in ``main()``.
So under fork the shim does not give torch_xla the values at all: :func:`handed_over`
keeps them in this process's registry and hands over a :class:`Registered` key, which
pickles as an integer. With fork the pool forks all its workers at its first ``submit``
(CPython 3.8+), which comes after the values are registered, so every worker inherits
them and finds them by key. Under any other start method :func:`require_picklable` fails
before any process starts, naming the value pickle refused.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import pickle
import sys
from collections.abc import Callable, Iterator
from multiprocessing.reduction import ForkingPickler
from typing import Any

# key -> (fn, args, kwargs); a forked child holds a copy of what was here when it forked.
_registry: dict[int, tuple[Callable, tuple, dict]] = {}
_keys = itertools.count()


class NotPicklable(pickle.PicklingError):
    """A value spawn must send to its replicas by pickle cannot be pickled."""


@dataclasses.dataclass(frozen=True)
class Registered:
    """``fn(*leading, *args, **kwargs)`` for the values registered under ``key``: what the
    process pool pickles in their place."""

    key: int

    def __call__(self, *leading: Any) -> Any:
        try:
            fn, args, kwargs = _registry[self.key]
        except KeyError:
            raise RuntimeError(
                f"spawn target {self.key} is not in process registry: it reaches only "
                "processes forked while the spawn that registered it runs"
            ) from None
        return fn(*leading, *args, **kwargs)


@contextlib.contextmanager
def handed_over(
    fn: Callable, args: tuple = (), kwargs: dict | None = None, *, start_method: str, api: str = "xmp.spawn"
) -> Iterator[tuple[Callable, tuple, dict]]:
    """``(fn, args, kwargs)`` to give a pool whose workers start with ``start_method``.

    ``'fork'``: a :class:`Registered` key with no arguments, valid in processes forked
    inside this block. Otherwise the values themselves, once :func:`require_picklable` has
    found that pickle accepts them."""
    kwargs = dict(kwargs or {})
    if start_method != "fork":
        refuse_unpicklable(fn, args, kwargs, start_method=start_method, api=api)
        yield fn, tuple(args), kwargs
        return
    key = next(_keys)
    _registry[key] = (fn, tuple(args), kwargs)
    try:
        yield Registered(key), (), {}
    finally:
        del _registry[key]


def refuse_unpicklable(
    fn: Callable, args: tuple = (), kwargs: dict | None = None, *, start_method: str, api: str = "xmp.spawn"
) -> None:
    """Under a start method other than fork, where the replicas get ``fn`` and ``args`` by
    pickle, raise :class:`NotPicklable` for a value pickle refuses, before any process starts."""
    if start_method != "fork":
        require_picklable(
            fn,
            args,
            kwargs,
            why=f"{api}(start_method={start_method!r}) sends fn and args to each replica by pickle, as XRT's spawn did",
            remedy="or use start_method='fork': then the shim hands them to the forked "
            "replicas without pickling, as XRT did",
        )


def require_picklable(
    fn: Callable, args: tuple = (), kwargs: dict | None = None, *, why: str, remedy: str = ""
) -> None:
    """Raise :class:`NotPicklable` naming the first of ``fn``, ``args[i]``, ``kwargs[name]``
    that the multiprocessing pickler refuses; ``why`` says who pickles them.

    Tensors, and what multiprocessing pickles by handle (sockets, pipes), are not
    serialised: they always pickle there, and a large tensor would be copied for nothing."""
    named = [("fn", fn)] + [(f"args[{i}]", value) for i, value in enumerate(args)]
    named += [(f"kwargs[{name!r}]", value) for name, value in (kwargs or {}).items()]
    for name, value in named:
        try:
            _Probe().dump(value)
        except Exception as error:  # noqa: BLE001 -- pickle raises PicklingError, TypeError, AttributeError...
            advice = "Define functions at module level and pass only values pickle accepts"
            advice += f", {remedy}" if remedy else ""
            raise NotPicklable(f"{why}, and {name} cannot be pickled: {error}. {advice}.") from error


class _Discard:
    def write(self, data) -> int:
        return len(data)


class _Probe(pickle.Pickler):
    """The multiprocessing pickler's verdict, with nothing written anywhere and nothing shared."""

    def __init__(self):
        super().__init__(_Discard(), protocol=pickle.HIGHEST_PROTOCOL, buffer_callback=lambda buffer: None)

    def persistent_id(self, obj: Any) -> Any:
        torch = sys.modules.get("torch")
        if type(obj) in ForkingPickler._extra_reducers or (torch is not None and isinstance(obj, torch.Tensor)):
            return id(obj)  # pickled by a handle there (a shared-memory file, a duplicated descriptor)
        return None
