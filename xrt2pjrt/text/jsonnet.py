"""Jsonnet configs (``*.jsonnet``, ``*.libsonnet``): reported, never rewritten.

XRT-era pod jobs were often generated from jsonnet (pytorch/xla's own test configs among
them), with the xla_dist command written as an array of words and the XRT variables in env
objects. What such a config produces is only known by evaluating it, so each place is
reported for a person, with what it should become: the xla_dist commands, the XRT
variables, GKE TPU-node annotations and resources, and the install lines (a pin, wheel or image of an XRT-era torch_xla, in a
string or an array of words).
"""

from __future__ import annotations

import re

from xrt2pjrt.registry import Options
from xrt2pjrt.rewriters import Outcome
from xrt2pjrt.text import environment, installs, shell, xla_dist
from xrt2pjrt.text.edits import Recorder
from xrt2pjrt.xrt_variables import GKE_TPU_NODE, TPU_NODE, XRT_ERA_PATTERN, replacement

TRIGGER = shell.TRIGGER
_VARIABLE = re.compile(rf"\b({XRT_ERA_PATTERN})\b")
# A word of a command, as written in a jsonnet string or array ('pip install x', ['pip', 'x']).
_WORD = re.compile(r"(?:[^\s'\"\[\](),;|]|\[[^\s'\"\]]*\])+")  # (with its extras: torch_xla[tpuvm]==1.13)


def rewrite(text: str, options: Options) -> Outcome:
    rec = Recorder(text, options)
    if options.on(shell.LaunchXlaDist.id):
        for m in xla_dist.MENTION.finditer(text):
            rec.ask(shell.LaunchXlaDist.id, m.start(),
                    f"xla_dist in a jsonnet config: make it {xla_dist.BY_HAND} by hand")
    for m in _VARIABLE.finditer(text):
        rule = environment.rule_here(m.group(1), rec)
        if rule is not None:
            rec.ask(rule.id, m.start(), f"{m.group(1)} in a jsonnet config: {replacement(m.group(1))}")
    for m in _WORD.finditer(text):
        installs.ask(rec, m.group(), m.start())
    if options.on(environment.XrtTpuConfig.id):
        for m in TPU_NODE.finditer(text):
            rec.ask(environment.XrtTpuConfig.id, m.start(), f"`{m.group()}` in a jsonnet config: {GKE_TPU_NODE}")
    return rec.outcome()


def check(text: str) -> str | None:
    return None  # nothing is ever rewritten
