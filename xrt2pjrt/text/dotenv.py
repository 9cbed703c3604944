"""The .env rewriter (file kind "dotenv": .env, .env.*, *.env): ``KEY=VALUE`` lines, as docker
compose's ``env_file``, python-dotenv and systemd's ``EnvironmentFile`` read them.

Each line is a setting, handed to text/environment (a line that goes is removed whole, as a
Dockerfile's ENV is); each value goes to the text rules' ``word`` hook, as a requirement
does (a TPU runtime version names a release). Nothing here is shell: a value is the rest of
the line (quoted, or up to a `` #`` comment), so a line is only ever renamed or removed.
"""

from __future__ import annotations

import re

from xrt2pjrt.registry import Options
from xrt2pjrt.rewriters import Outcome
from xrt2pjrt.text import environment
from xrt2pjrt.recorder import Edit, Recorder, leave_todo_comments
from xrt2pjrt.text.environment import EnvSetting
from xrt2pjrt.text.rule import rules

_LINE = re.compile(
    r"""^[ \t]*(?:export[ \t]+)?(?P<name>[A-Za-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*"""
    r"""(?P<value>"(?:\\.|[^"\\\n])*"|'[^'\n]*'|[^#\n]*?)[ \t]*(?:[ \t]#[^\n]*)?$""",
    re.M,
)


def rewrite(text: str, options: Options) -> Outcome:
    options = options.in_file(text)
    rec = Recorder(text, options)
    hooks = rules(options)
    settings, lines = [], []
    for m in _LINE.finditer(text):
        line_end = text.find("\n", m.end())
        whole = [Edit(m.start(), len(text) if line_end < 0 else line_end + 1, "")]
        settings.append(
            EnvSetting(
                m["name"],
                m.start("name"),
                environment.replacing(m.start("name"), m.end("value"), True),
                whole,
                value=m["value"],
            )
        )
        lines.append((rec.line(m.start()), rec.line(m.start())))
        value = m["value"].strip("\"'")
        if value:
            for rule in hooks:
                rule.word(rec, value, m.start("value"))
        for rule in hooks:
            rule.dotenv(rec, m["name"], value, m.start("name"))
    environment.apply(settings, rec, lambda offset: "PJRT_DEVICE" in text[:offset])
    leave_todo_comments(rec, lines)
    return rec.outcome()


def check(text: str) -> str | None:
    return None  # a line is renamed or removed whole: nothing can break its syntax
