"""How a CPU replica reaches the others: its store connection and one gloo group per replica group.

Made on first use in each replica process (:func:`current`). The store is the one the
supervisor serves; the gloo groups connect over it, every member of a group at once, and
what gloo's C++ prints on stdout while it connects goes to stderr, so a replica's stdout
holds only what the program printed.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import sys
import threading
from collections.abc import Sequence
from typing import Any

from xrt2pjrt.shim import settings
from xrt2pjrt.shim.cpu.host_memory import as_bytes, fresh
from xrt2pjrt.shim.cpu.placement import Placement, placement
from xrt2pjrt.shim.store import client as store_client


class Transport:
    """This process's connection to the store and its gloo groups (made lazily)."""

    def __init__(self, where: Placement):
        from torch.distributed import PrefixStore

        self.placement = where
        self.timeout = settings.RENDEZVOUS_TIMEOUT.read()
        self.store = store_client.for_this_job(where.store_host, where.store_port, timeout=self.timeout)
        self._pg_store = PrefixStore("xrt2pjrt/cpu_replicas/gloo", store_client.c10d_store(self.store.clone()))
        self._groups: dict[tuple[int, ...], Any] = {}
        self._scratch = None

    def exchange(self, members: Sequence[int], messages, tag: int) -> None:
        """Send and receive at once: ``messages`` are (peer's position in ``members``,
        tensor to send it, tensor to receive its message into)."""
        group, wait = self.group(members), datetime.timedelta(seconds=self.timeout)
        works = [group.recv([as_bytes(into)], peer, tag) for peer, _, into in messages]
        works += [group.send([as_bytes(out)], peer, tag) for peer, out, _ in messages]
        for work in works:
            work.wait(wait)

    def scratch(self, like):
        """A buffer shaped like ``like`` for this call only, reused across calls (a fresh one
        would cost a page fault per 4 KB)."""
        import torch

        needed = like.numel() * like.element_size()
        if self._scratch is None or self._scratch.numel() < needed:
            self._scratch = fresh(needed, torch.uint8)
        return self._scratch[:needed].view(like.dtype).view(like.shape)

    def group(self, members: Sequence[int]):
        """The gloo process group of ``members``; every member creates it on first use."""
        key = tuple(members)
        if key not in self._groups:
            from torch.distributed import PrefixStore, ProcessGroupGloo

            options = ProcessGroupGloo._Options()
            options._timeout = datetime.timedelta(seconds=self.timeout)
            # Connect the whole group up front: with lazy connections gloo's constructor
            # prints "Rank r is NOT connected to: [...]" on stdout, which reads as a failure.
            options._devices = [ProcessGroupGloo.create_device(hostname=self.placement.gloo_addr)]
            store = PrefixStore(",".join(map(str, key)), self._pg_store)
            # Every member first arrives, so that the constructor only connects (milliseconds):
            # it prints "[Gloo] Rank r is connected to k peer ranks..." on stdout, which
            # goes to stderr meanwhile, and so does what another thread writes to fd 1 then.
            if store.add("xrt2pjrt/arrived", 1) == len(key):
                store.set("xrt2pjrt/all arrived", b"")
            store.get("xrt2pjrt/all arrived")
            with _stdout_into_stderr():
                self._groups[key] = ProcessGroupGloo(store, key.index(self.placement.ordinal), len(key), options)
        return self._groups[key]


_redirect_lock = threading.Lock()
_redirects = 0  # threads inside _stdout_into_stderr
_real_stdout: int | None = None  # a duplicate of fd 1 while it is fd 2


@contextlib.contextmanager
def _stdout_into_stderr():
    """fd 1 is fd 2 inside (and fd 1 again after, however the block ends): a replica's stdout
    holds what the program prints, not what gloo's C++ prints there. Threads may nest it."""
    global _redirects, _real_stdout
    with _redirect_lock:
        if _redirects == 0:
            _flush_stdout()  # what was printed so far goes to stdout, in order
            try:
                _real_stdout = os.dup(1)
                os.dup2(2, 1)
            except OSError:  # no fd 1 or 2: nothing to keep clean, or nowhere else to write
                if _real_stdout is not None:
                    os.close(_real_stdout)
                _real_stdout = None
        _redirects += 1
    try:
        yield
    finally:
        with _redirect_lock:
            _redirects -= 1
            if _redirects == 0 and _real_stdout is not None:
                _flush_stdout(python=False)  # C's buffer, written meanwhile, goes to stderr
                os.dup2(_real_stdout, 1)
                os.close(_real_stdout)
                _real_stdout = None


def _flush_stdout(python: bool = True) -> None:
    if python and sys.stdout is not None:
        try:
            sys.stdout.flush()
        except (OSError, ValueError):  # closed or broken: nothing of it can reach fd 1 anyway
            pass
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)  # C's stdio (and C++'s std::cout, synced with it)
    except (OSError, AttributeError):
        pass


_transport: Transport | None = None
_transport_lock = threading.Lock()


def current() -> Transport:
    """This replica's transport (one per process, made on first use)."""
    global _transport
    with _transport_lock:
        if _transport is None or _transport.placement != placement():
            _transport = Transport(placement())
        return _transport


def store():
    """A connection of this thread's own to the replica mode's store (torch.distributed's
    ``xla://`` init method uses it instead of serving a store of its own)."""
    return store_client.c10d_store(current().store.clone())
