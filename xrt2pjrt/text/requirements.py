"""The requirements rewriter (file kind "requirements": requirements*.txt, constraints*.txt,
requirements*.in): each requirement goes to the text rules' ``word`` hook, which reports an
XRT-era torch_xla (rules/install/); nothing is rewritten."""

from __future__ import annotations

import re

from xrt2pjrt.registry import Options
from xrt2pjrt.rewriters import Outcome
from xrt2pjrt.recorder import Recorder
from xrt2pjrt.text.rule import rules

_LINE = re.compile(r"^[ \t]*([^#\n]*?)[ \t]*(?:(?<=[ \t])#.*)?$", re.M)


def rewrite(text: str, options: Options) -> Outcome:
    rec = Recorder(text, options, lists_dependencies=True)
    hooks = rules(options)
    for line in _LINE.finditer(text):
        content, at = line.group(1), line.start(1)
        if content.startswith("-"):  # -f URL, --find-links URL, -e URL, -r FILE
            words = [(word.group(), at + word.start()) for word in re.finditer(r"\S+", content)]
        else:  # a requirement: `torch_xla[tpu] == 1.13 ; python_version < "3.9"`
            words = [(re.sub(r"\s+", "", content.split(";")[0]), at)] if content else []
        for word, offset in words:
            for rule in hooks:
                rule.word(rec, word, offset)
    return rec.outcome()


def check(text: str) -> str | None:
    return None  # nothing is ever rewritten
