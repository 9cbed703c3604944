"""The command line's entry: `xrt2pjrt --version` and `xrt2pjrt --help` are answered here,
and any command is handed to xrt2pjrt.commands, which declares the commands on typer.

typer is imported only then: its import alone costs about 5x `python -c pass`, so the
two answers a user types most stay near the cost of the interpreter (bench/startup.py
measures both). The top-level help printed here is typer's own, rendered the way click
renders it; tests/test_cli.py holds the two to the same bytes.
"""

from __future__ import annotations

import shutil
import sys
import textwrap

from xrt2pjrt import __version__

VERSION = f"xrt2pjrt {__version__}"
DESCRIPTION = "Move PyTorch/XLA programs off XRT and onto PJRT."
# Each command's one line in the top-level help, in the order listed; also its summary atop
# its own help.
COMMANDS = {
    "migrate": "Rewrite XRT-era code, scripts and configs for PJRT.",
    "rules": "List the rules: id, file kind, safe or unsafe, summary and examples.",
    "guide": "Print the migration guide (docs/MIGRATION.md), as installed.",
    "launch": "Run a command on every worker of a TPU pod with PJRT_DEVICE=TPU.",
    "doctor": "Read this environment and say what to fix.",
    "verify": "Check ordinals, collectives and rendezvous on every replica here.",
    "run": "Run a torch_xla program on N CPU replicas that form one world.",
}
EPILOG = "`xrt2pjrt COMMAND --help` tells more; the guide: `xrt2pjrt guide`."
# The top-level options, as typer lists them (--help last).
OPTIONS = {"--version": "print the version and exit", "-h, --help": "show this help and exit"}
HELP_OPTIONS = ["-h", "--help"]
# Exit codes shared by every command that checks or rewrites files; 2 is also a usage error.
EXIT_OK, EXIT_PENDING, EXIT_ERROR = 0, 1, 2


def top_help() -> str:
    """What typer prints for `xrt2pjrt --help`, as click lays it out: as wide as the
    terminal less 2 columns, 78 at most, 50 at least (narrow enough to wrap only the
    longer lines)."""
    width = max(min(shutil.get_terminal_size().columns, 80) - 2, 50)

    def paragraph(text: str) -> str:
        return textwrap.fill(text, width, initial_indent="  ", subsequent_indent="  ")

    def table(rows: dict[str, str]) -> str:
        first = max(map(len, rows)) + 2  # click's first column, for names shorter than 30
        return "\n".join(f"  {name:<{first}}" + f"\n  {'':<{first}}".join(textwrap.wrap(text, width - first - 2))
                         for name, text in rows.items())

    return (f"Usage: xrt2pjrt [OPTIONS] COMMAND [ARGS]...\n\n{paragraph(DESCRIPTION)}\n\n"
            f"Options:\n{table(OPTIONS)}\n\nCommands:\n{table(COMMANDS)}\n\n{paragraph(EPILOG)}\n")


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
