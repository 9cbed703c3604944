"""xrt2pjrt.shim.cpu.placement: whether the CPU replica mode is asked for, and where a replica runs."""

from __future__ import annotations

import pytest

from xrt2pjrt.shim import settings
from xrt2pjrt.shim.cpu import placement


def test_requested_only_on_cpu_for_several_replicas(monkeypatch):
    monkeypatch.delenv(settings.CPU_REPLICAS.name, raising=False)
    monkeypatch.delenv("XRT2PJRT_CPU_REPLICA", raising=False)
    monkeypatch.setenv("PJRT_DEVICE", "CPU")
    assert placement.requested(8) and placement.requested(2)
    assert not placement.requested(1)
    assert not placement.requested(None)  # upstream's behaviour: one replica
    monkeypatch.setenv(settings.CPU_REPLICAS.name, "4")
    assert placement.requested(None)
    monkeypatch.setenv("PJRT_DEVICE", "TPU")
    assert not placement.requested(8)
    monkeypatch.setenv("PJRT_DEVICE", "CPU")
    monkeypatch.setenv(settings.CPU_REPLICAS.name, "many")
    with pytest.raises(ValueError, match="XRT2PJRT_CPU_REPLICAS"):
        placement.requested(None)


def test_outside_a_replica_the_xrt_defaults_hold(monkeypatch):
    monkeypatch.delenv("XRT2PJRT_CPU_REPLICA", raising=False)
    assert not placement.active()
    assert (placement.get_ordinal(5), placement.xrt_world_size(3), placement.get_local_ordinal(2)) == (5, 3, 2)


def test_the_cpu_modes_store_address_avoids_the_port_torch_distributed_uses(monkeypatch):
    for name in (settings.RENDEZVOUS_ADDR.name, settings.RENDEZVOUS_PORT.name, "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    assert placement.store_address() == ("127.0.0.1", 12356)
    monkeypatch.setenv("MASTER_ADDR", "10.0.0.7")
    monkeypatch.setenv("MASTER_PORT", "29500")
    assert placement.store_address() == ("10.0.0.7", 29501)
    monkeypatch.setenv(settings.RENDEZVOUS_ADDR.name, "[::1]:4000")
    assert placement.store_address() == ("::1", 4000)
