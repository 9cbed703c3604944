"""The text rewriters as the tests run them: the shell rewriter with every rule and every fix
(unsafe ones too), and what the tests of every kind ask of an outcome: a second pass that
changes nothing, the text without its TODO lines, the decisions asked of a person."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from xrt2pjrt.registry import Options, all_rules
from xrt2pjrt.text import shell

ALL = frozenset(all_rules())


def rewrite_shell(text: str, **options):
    return shell.rewrite(text, Options(rules=ALL, unsafe_fixes=True, **options))  # every fix, unsafe ones too


def fixed_point(rewrite, text: str):
    """``rewrite(text)``, checked to be a fixed point: a second pass changes nothing."""
    outcome = rewrite(text)
    again = rewrite(outcome.text)
    assert again.text == outcome.text and again.changes == [], again.changes
    return outcome


def without_todos(text: str) -> str:
    """``text`` without the TODO comment lines that mark items to decide."""
    return "".join(line for line in text.splitlines(keepends=True) if not line.lstrip().startswith("# TODO(xrt2pjrt)"))


# The decisions a device setting asks, the same in every file kind (xrt_variables.device_for).
REMOTE = "run it on a TPU VM, not a TPU node"
NO_CUDA = "stay on torch_xla 2.8 for GPUs"
UNREADABLE = "set PJRT_DEVICE by the map's device"


def assert_decisions(outcome, decisions: list[tuple[str, int, str]]) -> None:
    """``outcome`` asks exactly these (rule, line, start of the message or of its detail), in
    this order."""
    assert [(f.rule, f.line) for f in outcome.manual] == [(rule, line) for rule, line, _ in decisions]
    for finding, (_, _, start) in zip(outcome.manual, decisions):
        assert finding.message.startswith(start) or finding.detail.startswith(start), finding


def migrate_tree(root: Path, tree: dict[str, str], rule: str) -> dict[str, list[str]]:
    """What the items of ``rule`` of a real `migrate` run over ``tree`` say is wrong (their
    long text, after the message), by file (its path in ``tree``)."""
    for name, text in tree.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    ran = subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", "migrate", "--output-format", "json", "."],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,
    )
    assert ran.returncode == 0, ran.stderr
    return {
        e["path"]: [i["detail"].removeprefix(f"{i['message']}: ") for i in e["manual"] if i["rule"] == rule]
        for e in json.loads(ran.stdout)["files"]
    }
