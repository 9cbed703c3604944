"""What the store's tests share: the job's secret, a server on loopback and a client of it."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from xrt2pjrt.shim.store.client import StoreClient
from xrt2pjrt.shim.store.server import StoreServer, listen

ROOT = str(Path(__file__).resolve().parents[3])
SECRET = uuid.uuid4().hex.encode()


def client(port: int, secret: bytes = SECRET, timeout: float = 5) -> StoreClient:
    return StoreClient("127.0.0.1", port, secret, timeout=timeout)


@pytest.fixture
def server():
    served = StoreServer(listen("127.0.0.1", 0), SECRET)
    yield served
    served.close()
