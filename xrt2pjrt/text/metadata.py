"""The package metadata rewriter (file kind "metadata": pyproject.toml, setup.cfg): each
requirement the file lists (``dependencies = ["torch-xla==1.13"]``, an ``install_requires`` line
of setup.cfg, an extra's, a Poetry table's ``torch = "^1.5.1"`` read as the range it means) goes to
the text rules' ``word`` hook, as a requirements file's lines
do; nothing is rewritten. A library's pins install beside the program: torch_xla 1.x, or the torch
1.x it needs, cannot install beside torch_xla 2.x."""

from __future__ import annotations

import re

from xrt2pjrt.registry import Options
from xrt2pjrt.rewriters import Outcome
from xrt2pjrt.recorder import Recorder
from xrt2pjrt.text.rule import rules

# A requirement with a version: a name, its extras, an operator (`torch_xla[tpu] == 1.13`).
_REQUIREMENT = r"[A-Za-z][\w.-]*(?:\[[^\]\n]*\])?\s*(?:===?|~=|!=|<=?|>=?)\s*[\w.*+!-]+"
_QUOTED = re.compile(rf"""(["'])({_REQUIREMENT})[^"'\n]*\1""")  # pyproject.toml's arrays
_LISTED = re.compile(rf"^(?:[ \t]+|[\w.-]+[ \t]*=[ \t]*)({_REQUIREMENT})", re.M)  # setup.cfg's lines
# A Poetry dependency table and its entries (`torch = "^1.5.1"`, `torch = {version = "~1.5"}`).
_POETRY_TABLE = re.compile(r"^\[tool\.poetry\.(?:(?:dev-)?dependencies|group\.[\w-]+\.dependencies)\][^\[]*", re.M)
_POETRY_ENTRY = re.compile(r'^([A-Za-z][\w.-]*)[ \t]*=[ \t]*(?:\{[^}\n]*?version[ \t]*=[ \t]*)?"([^"\n]+)"', re.M)


def rewrite(text: str, options: Options) -> Outcome:
    rec = Recorder(text, options, lists_dependencies=True)
    hooks = rules(options)
    found = [(m.group(2), m.start(2)) for m in _QUOTED.finditer(text)]
    found += [(m.group(1), m.start(1)) for m in _LISTED.finditer(text) if not _quoted_at(text, m.start(1))]
    for table in _POETRY_TABLE.finditer(text):
        for m in _POETRY_ENTRY.finditer(text, table.start(), table.end()):
            if m.group(1) != "python" and (requirement := _poetry_requirement(m.group(1), m.group(2))):
                found.append((requirement, m.start(1)))
    for requirement, offset in sorted(found, key=lambda pair: pair[1]):
        for rule in hooks:
            rule.word(rec, re.sub(r"\s+", "", requirement), offset)
    return rec.outcome()


def _poetry_requirement(name: str, constraint: str) -> str | None:
    """A Poetry constraint as a requirement: ``^1.5.1`` (below 2) and ``~1.5`` (below 1.6) as
    compatible releases, a bare ``1.5.1`` as ``==``, an operator's as written; ``*`` as none."""
    constraint = constraint.strip()
    caret = re.fullmatch(r"\^(\d+)(?:\.(\d+))?[\w.]*", constraint)
    if caret:  # ^1.5.1 and ^1.5 admit 1.x from there; ^0.10 admits 0.10.x
        major, minor = caret.groups()
        return f"{name}~={major}.{minor or 0}" if major != "0" else f"{name}~={major}.{minor or 0}.0"
    tilde = re.fullmatch(r"~(\d+(?:\.\d+)*)", constraint)
    if tilde:
        return f"{name}~={tilde.group(1)}" + (".0" if tilde.group(1).count(".") < 2 else "")
    if re.fullmatch(r"\d[\w.]*", constraint):
        return f"{name}=={constraint}"
    return None if constraint == "*" else f"{name}{constraint.split(',')[0].replace(' ', '')}"


def _quoted_at(text: str, offset: int) -> bool:
    return offset > 0 and text[offset - 1] in "\"'"


def check(text: str) -> str | None:
    return None  # nothing is ever rewritten
