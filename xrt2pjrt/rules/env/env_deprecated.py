"""A setting torch_xla reads only to warn that it is gone (XLA_USE_FP16, XLA_DOWNCAST_FP16 on
2.5+), set or read in Python: reported, kept.

python/settings_surface.txt (read from torch_xla's source, release by release) says which
settings a release still reads with a deprecation warning, and which it reads only to warn.
The second kind is the silent one: XLA_USE_FP16=1 made torch_xla 1.x–2.4 compute in float16,
and from 2.5 it prints a warning and the program trains in float32. It has no rewrite that
does what it did (it changed every tensor's type on the device, not one model's), so each
place is reported with what to write instead (meanings/settings.py's WARNED), and left as it
is. The first kind still works (XLA_USE_BF16 on 2.9, with a notice on every run): nothing to
decide on the target, so no item; ``--inventory`` lists it as read, with its notice, and a
``--target-version`` that only warns of it reports it. XLA_USE_SPMD in Python is
env-use-spmd's.
"""

from __future__ import annotations

from xrt2pjrt.meanings.settings import WARNED
from xrt2pjrt.python.environment import KEEP, EnvRule
from xrt2pjrt.python.settings_surface import status
from xrt2pjrt.registry import Example, dedent

# XLA_USE_SPMD in Python has a rule of its own, which rewrites it.
NAMES = tuple(name for name in WARNED if name != "XLA_USE_SPMD")


class DeprecatedSetting(EnvRule):
    id = "env-deprecated"
    summary = "A setting torch_xla reads only to warn (XLA_USE_FP16, ...), in Python: reported, kept"
    fix = "none"
    words = NAMES
    examples = (
        Example(
            dedent("""
                import os
                import torch_xla

                os.environ['XLA_USE_FP16'] = '1'
            """),
            dedent("""
                import os
                import torch_xla

                # TODO(xrt2pjrt): no effect from 2.5: cast to float16 [env-deprecated]
                os.environ['XLA_USE_FP16'] = '1'
            """),
            manual=("computes in float32, silently",),
        ),
        Example(
            dedent("""
                import os

                env = dict(os.environ, XLA_DOWNCAST_FP16='1', PJRT_DEVICE='TPU')
            """),
            dedent("""
                import os

                # TODO(xrt2pjrt): no effect from 2.5: cast to float16 [env-deprecated]
                env = dict(os.environ, XLA_DOWNCAST_FP16='1', PJRT_DEVICE='TPU')
            """),
            manual=("computes in float32",),
        ),
        Example.unchanged(  # torch_xla 2.9 still stores floats as bfloat16 for it, with a notice
            dedent("""
                import os
                import torch_xla

                os.environ['XLA_USE_BF16'] = '1'
            """),
        ),
        Example.unchanged(  # torch_xla 2.3 read it without a word
            dedent("""
                import os
                import torch_xla

                os.environ['XLA_USE_FP16'] = '1'
            """),
            options={"target_version": (2, 3)},
        ),
    )

    def handles(self, variable):
        return variable in NAMES

    def write(self, variable, value, target):
        return KEEP, self.read_on(variable, target)

    def read(self, variable):
        return WARNED[variable]

    def _here(self, ctx, variable):
        return super()._here(ctx, variable) and self.read_on(variable, ctx.target_version) is not None

    @staticmethod
    def read_on(variable: str, target: tuple[int, int]):
        """The advice for ``variable`` on ``target``: None where that release still reads it."""
        return WARNED[variable] if status(variable, target) == "warns" else None
