"""A setting torch_xla warns about, outside Python (export XLA_USE_FP16=1, a Dockerfile's ENV
XLA_USE_BF16=1, a YAML env entry, a .env line, %env): reported, kept.

The text side of env-deprecated (its docstring says why), and of XLA_USE_SPMD, whose
Python setting env-use-spmd rewrites: a script that sets it for a program is reported with
the call that replaces it in the program. Each kind finds its settings (text/environment.py);
on a ``--target-version`` that reads one without a warning it is left alone.
"""

from __future__ import annotations

from xrt2pjrt.meanings.settings import WARNED
from xrt2pjrt.python.settings_surface import status
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.recorder import todo_line
from xrt2pjrt.text.environment import KEEP, EnvRule


class ShellDeprecatedSetting(EnvRule):
    id = "env-shell-deprecated"
    summary = "A setting torch_xla warns about (XLA_USE_FP16, XLA_USE_BF16, ...), outside Python: reported, kept"
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
        Example(
            "XLA_USE_SPMD=1 python3 train_spmd.py\n",
            todo_line(WARNED["XLA_USE_SPMD"].do, "env-shell-deprecated") + "XLA_USE_SPMD=1 python3 train_spmd.py\n",
            manual=("torch_xla.runtime.use_spmd()",),
        ),
        Example("export XLA_USE_FP16=1\n", "export XLA_USE_FP16=1\n", options={"target_version": (2, 3)}),
    )

    @classmethod
    def choose(cls, setting, target):
        warned = status(setting.name, target) in ("deprecated", "warns") and setting.form != "unset"
        return KEEP, WARNED[setting.name] if warned else None
