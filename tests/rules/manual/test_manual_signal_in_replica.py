"""manual-signal-in-replica beyond its examples: timeouts that signal, in the replicas' code."""

import pytest

from python_migrate import migrate

_HEAD = "import signal\nimport timeout_decorator\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"


@pytest.mark.parametrize(
    "timeout, reported",
    [
        ("@timeout_decorator.timeout(30)", True),
        ("@timeout_decorator.timeout(30, use_signals=False)", False),  # a process of its own: no signal
    ],
)
def test_a_signalling_timeout_on_what_the_replicas_call_is_reported(timeout, reported):
    source = _HEAD + (
        f"{timeout}\ndef find_device():\n    return probe()\n\n"
        "def _mp_fn(index):\n    find_device()\n\nxmp.spawn(_mp_fn, nprocs=8)\n"
    )
    assert [m.message for m in migrate(source).manual] == ["pass use_signals=False"] * reported


def test_a_handler_set_where_no_replica_runs_is_not_reported():
    # a function the launching process runs, and one spawn of one process (torch_xla calls fn in place)
    source = _HEAD + (
        "def setup():\n    signal.signal(signal.SIGINT, stop)\n\n"
        "def _mp_fn(index):\n    signal.signal(signal.SIGTERM, save)\n\nsetup()\nxmp.spawn(_mp_fn, nprocs=1)\n"
    )
    assert migrate(source).manual == []
