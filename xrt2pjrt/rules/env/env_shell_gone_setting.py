"""A torch_xla setting the target reads nowhere, outside Python (export XLA_TRIM_GRAPH_SIZE=…,
ENV PJRT_ALLOCATOR_FRACTION=…, a YAML env entry, a .env line): removed.

The text side of env-gone-setting (its docstring says why): each kind finds its settings
(text/environment.py), and one the target reads nowhere goes, in the form it was written.
"""

from __future__ import annotations

from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.rules.env._gone import NAMES, gone_on, why
from xrt2pjrt.text.environment import KEEP, EnvRule


class ShellGoneSetting(EnvRule):
    id = "env-shell-gone-setting"
    summary = "A setting the target reads nowhere (XLA_TRIM_GRAPH_SIZE, ...), outside Python → removed"
    words = NAMES
    variables = "|".join(NAMES)
    examples = (
        Example(
            dedent("""
                export XLA_TRIM_GRAPH_SIZE=100000
                export PJRT_DEVICE=TPU
                python3 train.py
            """),
            dedent("""
                export PJRT_DEVICE=TPU
                python3 train.py
            """),
        ),
        Example("PJRT_ALLOCATOR_FRACTION=0.5 PJRT_DEVICE=CPU python3 train.py\n", "PJRT_DEVICE=CPU python3 train.py\n"),
        Example(
            "export XLA_TRIM_GRAPH_SIZE=100000\n",
            "export XLA_TRIM_GRAPH_SIZE=100000\n",
            options={"target_version": (2, 4)},
        ),
    )

    @classmethod
    def choose(cls, setting, target):
        return (None if gone_on(setting.name, target) else KEEP), None

    @classmethod
    def removed_because(cls, name, target):
        return why(name, target)
