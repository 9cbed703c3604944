"""spawn-join-daemon beyond its example: reported on evidence that join or daemon is not the
value 2.9's spawn behaves as anyway."""

import pytest

from python_migrate import XMP, migrate


@pytest.mark.parametrize(
    "source, reported",
    [
        ("xmp.spawn(fn, join=False)\n", ["join"]),
        ("xmp.spawn(fn, nprocs=8, daemon=True)\n", ["daemon"]),
        ("BACKGROUND = False\nxmp.spawn(fn, join=BACKGROUND)\n", ["join"]),
        ("def launch(fn, join=False):\n    return xmp.spawn(fn, join=join)\n", ["join"]),
        # The false alarm of issue 32, in a shape of its own: a launcher passing on its own
        # parameters, whose defaults ask for what 2.9's spawn does anyway (it accepts and ignores them)
        (
            "def start(fn, args=(), join: bool = True, daemon: bool = False):\n"
            "    return xmp.spawn(fn, args=args, join=join, daemon=daemon)\n",
            [],
        ),
        ("def start(fn, opts):\n    xmp.spawn(fn, join=opts.join)\n", []),  # nothing shown
    ],
)
def test_join_or_daemon_is_reported_when_the_file_shows_the_other_value(source, reported):
    out = migrate(XMP + "\n" + source)
    assert [
        item.message.split("=")[0].removeprefix("remove ") for item in out.manual if item.rule == "spawn-join-daemon"
    ] == reported
