"""What the store's tests share: the job's secret, a client of a server on loopback."""

from __future__ import annotations

import uuid
from pathlib import Path

from xrt2pjrt.shim.store.client import StoreClient

ROOT = str(Path(__file__).resolve().parents[3])
SECRET = uuid.uuid4().hex.encode()


def client(port: int, secret: bytes = SECRET, timeout: float = 5) -> StoreClient:
    return StoreClient("127.0.0.1", port, secret, timeout=timeout)
