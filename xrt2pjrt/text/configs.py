"""Configs that are reported, never rewritten: jsonnet and Terraform.

XRT-era pod jobs were often generated from jsonnet (pytorch/xla's own test configs among
them), with the xla_dist command written as an array of words and the XRT variables in env
objects; their TPUs were often made by Terraform: a TPU node (``google_tpu_node``, which only
XRT could drive) or a TPU VM of an XRT-era image, with a startup script that set the XRT
variables. What such a config produces is only known by evaluating it (or planning it), so
each place is reported for a person, with what it should become: the text rules' ``config``
hook reports the xla_dist commands, the TPU nodes (GKE's annotations and resources,
Terraform's resources), the env rules the XRT variables, and the ``word`` hook the install
lines (a pin, wheel or image of an XRT-era torch_xla, in a string or an array of words).
"""

from __future__ import annotations

import re

from xrt2pjrt.registry import Options
from xrt2pjrt.rewriters import Outcome
from xrt2pjrt.text import environment
from xrt2pjrt.recorder import Recorder
from xrt2pjrt.text.rule import rules

# A word of a command, as written in a string or array ('pip install x', ['pip', 'x']).
_WORD = re.compile(r"(?:[^\s'\"\[\](),;|]|\[[^\s'\"\]]*\])+")  # (with its extras: torch_xla[tpuvm]==1.13)


def report(text: str, options: Options, what: str) -> Outcome:
    """The items of the config ``text``; ``what`` names its kind in them ("a jsonnet config")."""
    rec = Recorder(text, options)
    hooks = rules(options)
    for rule in hooks:
        rule.config(rec, what)
    environment.ask_about_mentions(rec, f"in {what}")
    for m in _WORD.finditer(text):
        for rule in hooks:
            rule.word(rec, m.group(), m.start())
    return rec.outcome()


def check(text: str) -> str | None:
    return None  # nothing is ever rewritten
