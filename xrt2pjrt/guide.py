"""The rules section of docs/MIGRATION.md, generated from the rules' own examples.

``python -m xrt2pjrt.guide docs/MIGRATION.md`` rewrites the part between the
``<!-- rules:start -->`` and ``<!-- rules:end -->`` markers; tests/test_guide.py fails when
the committed guide differs from what this module renders, so the guide cannot drift.
"""

from __future__ import annotations

import sys
from pathlib import Path

from xrt2pjrt.registry import all_rules

START, END = "<!-- rules:start -->", "<!-- rules:end -->"

# How each file kind's examples are fenced.
_FENCE = {"python": "python", "notebook": "python", "shell": "bash", "dockerfile": "dockerfile",
          "yaml": "yaml", "markdown": "markdown"}


def _flag_value(value) -> str:
    # Options hold versions as tuples; the command line spells them 2.5.
    return ".".join(map(str, value)) if isinstance(value, tuple) else str(value)


def render_rules() -> str:
    parts = []
    for rule in all_rules().values():
        safety = "safe" if rule.safe else "unsafe: review the change"
        parts.append(f"### `{rule.id}`\n\n{rule.summary} *({rule.kind}, {safety})*\n")
        fence = _FENCE.get(rule.kind, "")
        for example in rule.examples:
            flags = " ".join(f"--{key.replace('_', '-')} {_flag_value(value)}" for key, value in example.options.items())
            if flags:
                parts.append(f"With `{flags}`:\n")
            if example.before == example.after:
                parts.append(f"Left as is:\n\n```{fence}\n{example.before.rstrip()}\n```\n")
            else:
                parts.append(f"Before:\n\n```{fence}\n{example.before.rstrip()}\n```\n")
                parts.append(f"After:\n\n```{fence}\n{example.after.rstrip()}\n```\n")
            if example.manual:
                items = "; ".join(example.manual)
                parts.append(f"Left to a person: {items}.\n")
    return "\n".join(parts)


def splice(document: str) -> str:
    head, found_start, rest = document.partition(START)
    _, found_end, tail = rest.partition(END)
    if not (found_start and found_end):
        raise ValueError(f"the guide must contain {START} … {END}")
    return f"{head}{START}\n{render_rules()}{END}{tail}"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m xrt2pjrt.guide docs/MIGRATION.md", file=sys.stderr)
        return 2
    path = Path(argv[0])
    document = path.read_text(encoding="utf-8")
    updated = splice(document)
    if updated != document:
        path.write_text(updated, encoding="utf-8")
        print(f"{path}: rules section updated")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
