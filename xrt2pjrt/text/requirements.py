"""The requirements rewriter (file kind "requirements": requirements*.txt, constraints*.txt,
requirements*.in): XRT-era torch_xla releases are reported (text/installs.py), nothing is
rewritten."""

from __future__ import annotations

import re

from xrt2pjrt.registry import Options
from xrt2pjrt.rewriters import Outcome
from xrt2pjrt.text import installs
from xrt2pjrt.text.edits import Recorder

TRIGGER = re.compile(installs.WORDS)
_LINE = re.compile(r"^[ \t]*([^#\n]*?)[ \t]*(?:(?<=[ \t])#.*)?$", re.M)


def rewrite(text: str, options: Options) -> Outcome:
    rec = Recorder(text, options)
    for line in _LINE.finditer(text):
        content, at = line.group(1), line.start(1)
        if content.startswith("-"):  # -f URL, --find-links URL, -e URL, -r FILE
            for word in re.finditer(r"\S+", content):
                installs.ask(rec, word.group(), at + word.start())
        elif content:  # a requirement: `torch_xla[tpu] == 1.13 ; python_version < "3.9"`
            installs.ask(rec, re.sub(r"\s+", "", content.split(";")[0]), at)
    return rec.outcome()


def check(text: str) -> str | None:
    return None  # nothing is ever rewritten
