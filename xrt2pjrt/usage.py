"""What the command line says of itself: its commands, top-level options, exit codes and
top-level help. Shared by cli.py, which answers `--version` and `--help` without typer,
and commands.py, which declares the commands on typer; so neither imports the other's
floor for these.
"""

from __future__ import annotations

import shutil
import textwrap

from xrt2pjrt import __version__

VERSION = f"xrt2pjrt {__version__}"
DESCRIPTION = "Move PyTorch/XLA programs off XRT and onto PJRT."
# Each command's one line in the top-level help, in the order listed; also its summary atop
# its own help.
COMMANDS = {
    "migrate": "Rewrite XRT-era code, scripts and configs for PJRT.",
    "rules": "List the rules: id, file kind, fix (safe, unsafe, none), summary, examples.",
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
        return "\n".join(
            f"  {name:<{first}}" + f"\n  {'':<{first}}".join(textwrap.wrap(text, width - first - 2))
            for name, text in rows.items()
        )

    return (
        f"Usage: xrt2pjrt [OPTIONS] COMMAND [ARGS]...\n\n{paragraph(DESCRIPTION)}\n\n"
        f"Options:\n{table(OPTIONS)}\n\nCommands:\n{table(COMMANDS)}\n\n{paragraph(EPILOG)}\n"
    )
