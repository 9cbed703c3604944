import pytest

from xrt2pjrt.shim.store.server import StoreServer, listen

from ._serving import SECRET


@pytest.fixture
def server():
    served = StoreServer(listen("127.0.0.1", 0), SECRET)
    yield served
    served.close()
