"""spawn-signal-handler beyond its examples: a handler set in the replicas' code, reached
through a call, and not the launcher's own or a spawn of one process."""

import pytest

from python_migrate import XMP as _XMP, migrate


@pytest.mark.parametrize(
    "source, reported",
    [
        (
            "def handler_setup():\n    signal.signal(signal.SIGTERM, stop)\n\n"
            "def _mp_fn(index):\n    handler_setup()\n\nxmp.spawn(_mp_fn)\n",
            True,
        ),  # reached through a call
        ("def _mp_fn(index):\n    signal.signal(signal.SIGTERM, stop)\n\nxmp.spawn(_mp_fn, nprocs=1)\n", False),
        ("def main():\n    signal.signal(signal.SIGTERM, stop)\n    xmp.spawn(_mp_fn)\n", False),  # the launcher's
    ],
)
def test_a_signal_handler_set_in_the_replicas_code_is_reported(source, reported):
    out = migrate("import signal\n" + _XMP + "\n" + source)
    assert [item.rule for item in out.manual] == ["spawn-signal-handler"] * reported


_TIMEOUT_HEAD = "import signal\nimport timeout_decorator\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"


@pytest.mark.parametrize(
    "timeout, reported",
    [
        ("@timeout_decorator.timeout(30)", True),
        ("@timeout_decorator.timeout(30, use_signals=False)", False),  # a process of its own: no signal
    ],
)
def test_a_signalling_timeout_on_what_the_replicas_call_is_reported(timeout, reported):
    source = _TIMEOUT_HEAD + (
        f"{timeout}\ndef find_device():\n    return probe()\n\n"
        "def _mp_fn(index):\n    find_device()\n\nxmp.spawn(_mp_fn, nprocs=8)\n"
    )
    assert [m.message for m in migrate(source).manual] == ["pass use_signals=False"] * reported
