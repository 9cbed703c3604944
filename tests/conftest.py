"""Shared test conventions.

Tests that need torch_xla carry ``@pytest.mark.xla``; without torch_xla installed they are
skipped with a reason that says how to get it, so a contributor with only the core extras
still gets a green run.
"""

import importlib.util

import pytest

HAS_XLA = importlib.util.find_spec("torch_xla") is not None


def pytest_collection_modifyitems(config, items):
    if HAS_XLA:
        return
    skip = pytest.mark.skip(reason="needs torch_xla: pip install -e '.[xla]'")
    for item in items:
        if "xla" in item.keywords:
            item.add_marker(skip)
