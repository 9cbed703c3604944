"""The package metadata rewriter (file kind "metadata": pyproject.toml, setup.cfg): each
requirement the file lists (``dependencies = ["torch-xla==1.13"]``, an ``install_requires`` line
of setup.cfg, an extra's) goes to the text rules' ``word`` hook, as a requirements file's lines
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


def rewrite(text: str, options: Options) -> Outcome:
    rec = Recorder(text, options, lists_dependencies=True)
    hooks = rules(options)
    found = [(m.group(2), m.start(2)) for m in _QUOTED.finditer(text)]
    found += [(m.group(1), m.start(1)) for m in _LISTED.finditer(text) if not _quoted_at(text, m.start(1))]
    for requirement, offset in sorted(found, key=lambda pair: pair[1]):
        for rule in hooks:
            rule.word(rec, re.sub(r"\s+", "", requirement), offset)
    return rec.outcome()


def _quoted_at(text: str, offset: int) -> bool:
    return offset > 0 and text[offset - 1] in "\"'"


def check(text: str) -> str | None:
    return None  # nothing is ever rewritten
