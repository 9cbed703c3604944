"""A setting torch_xla reads only to warn, outside Python (export XLA_USE_FP16=1, a Dockerfile's
ENV, a YAML env entry, a .env line, %env): reported, kept.

The text side of env-deprecated (its docstring says why: a setting the target still reads,
XLA_USE_BF16 or XLA_USE_SPMD on 2.9, is no item), and of XLA_USE_SPMD, whose Python setting
env-use-spmd rewrites: on a target that only warns of it, a script that sets it is reported
with the call that replaces it in the program. Each kind finds its settings
(text/environment.py).
"""

from __future__ import annotations

from xrt2pjrt.meanings.settings import WARNED
from xrt2pjrt.python.settings_surface import status
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.recorder import todo_line
from xrt2pjrt.text.environment import KEEP, EnvRule


class ShellDeprecatedSetting(EnvRule):
    id = "env-shell-deprecated"
    summary = "A setting torch_xla reads only to warn (XLA_USE_FP16, ...), outside Python: reported, kept"
    fix = "none"
    words = tuple(WARNED)
    variables = "|".join(WARNED)
    examples = (
        Example(
            dedent("""
                export XLA_USE_FP16=1
                python3 train.py
            """),
            todo_line(WARNED["XLA_USE_FP16"].do, "env-shell-deprecated")
            + dedent("""
                export XLA_USE_FP16=1
                python3 train.py
            """),
            manual=("computes in float32, silently",),
        ),
        Example.unchanged("XLA_USE_SPMD=1 python3 train_spmd.py\n"),  # 2.9 reads it, with a notice
        Example("export XLA_USE_FP16=1\n", "export XLA_USE_FP16=1\n", options={"target_version": (2, 3)}),
    )

    @classmethod
    def choose(cls, setting, target):
        warned = status(setting.name, target) == "warns" and setting.form != "unset"
        return KEEP, WARNED[setting.name] if warned else None
