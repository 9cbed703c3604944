"""Shared test conventions.

Tests that need torch_xla carry ``@pytest.mark.xla``; without torch_xla installed they are
skipped with a reason that says how to get it, so a contributor with only the core extras
still gets a green run. Tests of file modes run the tool as a user the modes bind
(``unprivileged``, in a ``shared_folder``): root reads and writes whatever the modes say.
"""

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

HAS_XLA = importlib.util.find_spec("torch_xla") is not None

# No results cache in the tests (tests/test_cache.py turns it on where it is the subject):
# a test that replaces a rewriter's function would get the rewrite of another test back, and
# none should write into the user's cache folder. The tool's subprocesses inherit this.
os.environ["XRT2PJRT_NO_CACHE"] = "1"


def pytest_collection_modifyitems(config, items):
    if HAS_XLA:
        return
    skip = pytest.mark.skip(reason="needs torch_xla: pip install -e '.[xla]'")
    for item in items:
        if "xla" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def unprivileged():
    """A command prefix that runs the tool as a user without root's override of file modes."""
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    prefix = (setpriv, "--reuid=65534", "--regid=65534", "--clear-groups") if setpriv else None
    if prefix is None or subprocess.run([*prefix, sys.executable, "-c", "import xrt2pjrt"]).returncode != 0:
        pytest.skip("needs setpriv and an install an unprivileged user can read, to run xrt2pjrt as one")
    return prefix


@pytest.fixture
def shared_folder():
    """A folder an unprivileged user can reach (pytest's tmp_path is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="xrt2pjrt-perm-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        for path in folder.rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        shutil.rmtree(folder)
