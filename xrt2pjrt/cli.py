"""The command line's entry: `xrt2pjrt --version` and `xrt2pjrt --help` are answered here,
and any command is handed to xrt2pjrt.commands, which declares the commands on typer.

typer is imported only then: its import alone costs about 5x `python -c pass`, so the
two answers a user types most stay near the cost of the interpreter (bench/startup.py
measures both). The top-level help printed here is typer's own, rendered the way click
renders it; tests/test_cli.py holds the two to the same bytes.
"""

from __future__ import annotations

import sys

from xrt2pjrt.usage import EXIT_ERROR, EXIT_OK, HELP_OPTIONS, VERSION, top_help


def main(argv: list[str] | None = None) -> int:
    """Runs `xrt2pjrt ARGV` and returns its exit code (0 done, 1 pending, 2 error or usage)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--version"]:
        sys.stdout.write(VERSION + "\n")
        return EXIT_OK
    if not argv or argv[0] in HELP_OPTIONS:
        sys.stdout.write(top_help())
        return EXIT_OK if argv else EXIT_ERROR  # no command at all is a usage error
    from xrt2pjrt import commands  # typer, only now

    return commands.main(argv)
