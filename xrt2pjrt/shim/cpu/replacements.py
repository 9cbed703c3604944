"""Replacement tables: torch_xla names answered by other functions in this process, applied in one place.

A :class:`Replacement` names a target -- a module attribute ("module:attribute",
"module:Class.method", "module:mapping['key']") or the XLA kernel of a torch operator
("kernel:namespace::operator") -- and what answers in its place. :func:`apply` sets every
target of a table at once (all are found, or nothing changes) and modifies no file: it sets
attributes of this process. A name written into some module before the table was applied
(``from torch_xla.runtime import world_size`` at the top of a user's module) is a binding of
its own, so apply rebinds every module-level binding of a replaced function in every loaded
module. A target the installed torch_xla does not have fails loudly (:class:`MissingTarget`).
The tables are the CPU replica mode's: ``world`` (inside a replica) and ``launch`` (in the
process ``xrt2pjrt run`` starts).
"""

from __future__ import annotations

import dataclasses
import importlib
import re
import sys
import types
from collections.abc import Callable
from typing import Any


class MissingTarget(LookupError):
    """A name the table replaces is not in the installed torch_xla (renamed or removed)."""


@dataclasses.dataclass(frozen=True)
class Replacement:
    """``target`` answers with ``replica`` once the table is applied. A target is a module
    attribute ("module:attribute", "module:Class.method", "module:mapping['key']") or the
    XLA kernel of a torch operator ("kernel:namespace::operator")."""

    target: str
    replica: Callable
    why: str  # what the torch_xla name does in a one-replica world
    # False: torch.compile calls it (a graph break) rather than trace it, since it talks to
    # the other replicas. True for the ordinals, which are constants of the process.
    traceable: bool = False

    def applied(self) -> Callable:
        if self.traceable or self.target.startswith("kernel:"):  # kernels: see _not_in_a_graph
            return self.replica
        import torch._dynamo

        return torch._dynamo.disable(self.replica)

    def slot(self) -> _Slot | _Kernel:
        module_name, _, path = self.target.partition(":")
        if module_name == "kernel":
            return _Kernel.of(path, self.target)
        try:
            owner: Any = importlib.import_module(module_name)
        except ImportError as error:
            raise MissingTarget(f"{self.target}: cannot import {module_name} ({error})") from error
        *parents, last = path.split(".")
        for name in parents:
            owner = _attribute(owner, name, self.target)
        keyed = re.fullmatch(r"(\w+)\['(\w+)'\]", last)
        if keyed:
            mapping = _attribute(owner, keyed.group(1), self.target)
            if keyed.group(2) not in mapping:
                raise MissingTarget(f"{self.target}: {keyed.group(1)} has no entry {keyed.group(2)!r}")
            return _Slot(mapping, keyed.group(2), item=True)
        _attribute(owner, last, self.target)
        return _Slot(owner, last, item=False)


def _attribute(owner: Any, name: str, target: str) -> Any:
    try:
        return getattr(owner, name)
    except AttributeError:
        raise MissingTarget(f"{target}: {owner!r} has no attribute {name!r}") from None


@dataclasses.dataclass(frozen=True)
class _Slot:
    owner: Any
    name: str
    item: bool

    def get(self) -> Any:
        return self.owner[self.name] if self.item else getattr(self.owner, self.name)

    def set(self, value: Any) -> None:
        if self.item:
            self.owner[self.name] = value
        else:
            setattr(self.owner, self.name, value)


@dataclasses.dataclass(frozen=True)
class _Kernel:
    """The XLA kernel of a torch operator; torch.library takes a Python one in its place."""

    namespace: str
    operator: str

    @classmethod
    def of(cls, name: str, target: str) -> _Kernel:
        import torch

        namespace, _, operator = name.partition("::")
        if not torch._C._dispatch_has_kernel_for_dispatch_key(name, "XLA"):
            raise MissingTarget(f"{target}: torch_xla registers no XLA kernel for {name}")
        return cls(namespace, operator)

    def schema(self):
        import torch

        return getattr(getattr(torch.ops, self.namespace), self.operator).default._schema

    def get(self) -> None:
        return None  # a C++ kernel: nothing in Python is bound to it

    def set(self, value: Callable) -> None:
        import warnings

        import torch

        library = _libraries.setdefault(self.namespace, torch.library.Library(self.namespace, "IMPL"))
        with warnings.catch_warnings():  # "Overriding a previously registered kernel": the point
            warnings.simplefilter("ignore", UserWarning)
            library.impl(self.operator, value, "XLA")


_libraries: dict[str, Any] = {}  # kept alive: a torch.library.Library unregisters when collected


# table name -> {id(original): (original, replacement)}; the originals are kept alive so
# that their ids stay theirs.
_applied: dict[str, dict[int, tuple[Any, Callable]]] = {}
originals: dict[str, Any] = {}  # target -> what it was before a table replaced it


def apply(name: str, table: tuple[Replacement, ...]) -> None:
    """Replace every target of ``table`` in this process (once), then rebind early bindings."""
    if name in _applied:
        return
    slots = [(replacement, replacement.slot()) for replacement in table]  # all found, or nothing changes
    replaced: dict[int, tuple[Any, Callable]] = {}
    for replacement, slot in slots:
        original, value = slot.get(), replacement.applied()
        if original is not None:
            replaced[id(original)] = (original, value)
            originals.setdefault(replacement.target, original)
        slot.set(value)
    _applied[name] = replaced
    _rebind(replaced)


def _rebind(replaced: dict[int, tuple[Any, Callable]]) -> None:
    """Every module-level name bound to a replaced function now names its replacement."""
    tables = f"{__package__}."  # the modules that hold the tables' functions, which a table may replace
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if (
            not isinstance(module, types.ModuleType)
            or not isinstance(namespace, dict)
            or getattr(module, "__name__", "").startswith(tables)
        ):
            continue
        for key, value in list(namespace.items()):
            if id(value) in replaced and replaced[id(value)][0] is value:
                namespace[key] = replaced[id(value)][1]
