"""xrt2pjrt.shim.store.secret: where the job's secret comes from."""

from __future__ import annotations

import pytest

from xrt2pjrt.shim import settings
from xrt2pjrt.shim.store.protocol import StoreError
from xrt2pjrt.shim.store.secret import job_secret


def test_the_secret_comes_from_the_environment_or_a_private_file(tmp_path):
    assert job_secret({}) is None
    assert job_secret({settings.JOB_SECRET.name: "x" * 16}) == b"x" * 16
    with pytest.raises(StoreError, match="has 5 characters; use at least 16"):
        job_secret({settings.JOB_SECRET.name: "short"})
    path = tmp_path / "secret"
    path.write_text("s" * 32 + "\n")
    path.chmod(0o644)
    with pytest.raises(StoreError, match="mode 0644; others could read the job secret: chmod 600"):
        job_secret({settings.JOB_SECRET_FILE.name: str(path)})
    path.chmod(0o600)
    assert job_secret({settings.JOB_SECRET_FILE.name: str(path)}) == b"s" * 32
    with pytest.raises(StoreError, match="cannot read the job secret"):
        job_secret({settings.JOB_SECRET_FILE.name: str(tmp_path / "missing")})
