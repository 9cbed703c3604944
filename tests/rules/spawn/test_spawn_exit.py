"""spawn-exit beyond its examples: each way a replica's code exits, what it does under each
target, and the exits that are not a replica's."""

import pytest

from python_migrate import XMP as _XMP, migrate


@pytest.mark.parametrize(
    "source, target, reported",
    [
        # checked on CPU with torch_xla 2.9: the launcher exits 0 at the spawn, and what follows never runs
        (
            "def stop_early():\n    sys.exit(0)\n\ndef _mp_fn(index):\n    stop_early()\n\n"
            "xmp.spawn(_mp_fn)\nupload()\n",
            "native",
            "sys.exit(0) ends the launcher with status 0",
        ),
        (
            "from sys import exit\n\ndef _mp_fn(index):\n    exit(3)\n\nxmp.spawn(_mp_fn)\nupload()\n",
            "native",
            "SystemExit",
        ),
        ("def _mp_fn(index):\n    os._exit(0)\n\nxmp.spawn(_mp_fn)\n", "native", "BrokenProcessPool"),
        (
            "def _mp_fn(index):\n    raise SystemExit(0)\n\ndef main():\n    xmp.spawn(_mp_fn)\n\nmain()\nupload()\n",
            "native",
            "SystemExit",
        ),
        (
            "def _mp_fn(index):\n    exit(0)\n\nif __name__ == '__main__':\n    xmp.spawn(_mp_fn)\n    print('done')\n",
            "native",
            "SystemExit",
        ),
        ("def _mp_fn(index):\n    raise SystemExit\n\nxmp.spawn(_mp_fn)\n", "shim", None),
        # the shim's spawn ends only that replica on sys.exit (as XRT did), but cannot catch os._exit
        ("def _mp_fn(index):\n    sys.exit(0)\n\nxmp.spawn(_mp_fn)\n", "shim", None),
        ("def _mp_fn(index):\n    os._exit(0)\n\nxmp.spawn(_mp_fn)\n", "shim", "BrokenProcessPool"),
        # one process: fn runs in the launcher, under XRT too; and the launcher's own exit
        ("def _mp_fn(index):\n    sys.exit(0)\n\nxmp.spawn(_mp_fn, nprocs=1)\n", "native", None),
        ("def main():\n    xmp.spawn(_mp_fn)\n    sys.exit(0)\n", "native", None),
    ],
)
def test_an_exit_in_the_replicas_code_is_reported(source, target, reported):
    out = migrate("import os\nimport sys\n" + _XMP + "\n" + source, target=target)
    items = [item for item in out.manual if item.rule == "spawn-exit"]
    assert len(items) == bool(reported)
    if reported:
        assert reported in items[0].detail


@pytest.mark.parametrize(
    "source",
    [
        # The false alarm of issue 32, in a shape of its own: a replica that fails the run below a
        # target, and nothing after the spawn for the SystemExit to skip: the run ends as under XRT
        "def _mp_fn(index, flags):\n    if evaluate() < flags.target:\n        sys.exit(3)\n\n"
        "if __name__ == '__main__':\n    xmp.spawn(_mp_fn, args=(FLAGS,))\n",
        "def _mp_fn(index):\n    sys.exit(0)\n\ndef main():\n    xmp.spawn(_mp_fn)\n\nif __name__ == '__main__':\n    main()\n",
    ],
)
def test_an_exit_in_the_replicas_code_with_nothing_after_the_spawn_is_not_reported(source):
    assert not [item for item in migrate("import sys\n" + _XMP + "\n" + source).manual if item.rule == "spawn-exit"]
