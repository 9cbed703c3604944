"""A torch_xla setting the target reads nowhere, set in Python (XLA_TRIM_GRAPH_SIZE,
PJRT_ALLOCATOR_FRACTION, XLA_USE_IFRT, ...): removed; reads reported.

python/settings_surface.txt lists the variables each torch_xla release reads, from its
source. Some that a 2.x release read are read by no later one: the XRT client's (their own
rules say what replaces them), and others dropped along the way: XLA_TRIM_GRAPH_SIZE went
with the trim of the IR graph in 2.5, the GPU allocator's PJRT_ALLOCATOR_* with CUDA in 2.9,
XLA_USE_IFRT after 2.5. Setting one does nothing on the target, so the setting goes, which
changes nothing the program does (safe); a write the file also reads stays until those reads
go, and a read is reported: nothing sets it for the program. Not a read with a fallback of its
own (``os.environ.get(K, default)``, ``xu.getenv_as(K, int, 900)``): the program's own setting,
which runs unset as before (a project's copy of torch_xla 1.x's xla_dist.py reads its heartbeat
settings so).
"""

from __future__ import annotations

from xrt2pjrt.python.environment import EnvRule
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.rules.env._gone import NAMES, gone_on, read_advice, why


class GoneSetting(EnvRule):
    id = "env-gone-setting"
    summary = "A setting the target reads nowhere (XLA_TRIM_GRAPH_SIZE, ...), set in Python → removed"
    words = NAMES
    asks_reads_with_a_default = False
    examples = (
        Example(
            dedent("""
                import os

                os.environ['XLA_TRIM_GRAPH_SIZE'] = '100000'
                os.environ['XLA_USE_BF16'] = '1'
            """),
            dedent("""
                import os

                os.environ['XLA_USE_BF16'] = '1'
            """),
        ),
        Example(
            dedent("""
                import os

                fraction = float(os.environ['PJRT_ALLOCATOR_FRACTION'])
            """),
            dedent("""
                import os

                # TODO(xrt2pjrt): drop it: torch_xla 2.9 ignores it [env-gone-setting]
                fraction = float(os.environ['PJRT_ALLOCATOR_FRACTION'])
            """),
            manual=("last read by 2.8",),
        ),
        Example.unchanged(  # a fallback of its own: the same whether it is set or not
            dedent("""
                import os

                fraction = float(os.environ.get('PJRT_ALLOCATOR_FRACTION', '0.75'))
            """),
        ),
        Example.unchanged(  # torch_xla 2.4 still trimmed the graph
            dedent("""
                import os

                os.environ['XLA_TRIM_GRAPH_SIZE'] = '100000'
            """),
            options={"target_version": (2, 4)},
        ),
    )

    def handles(self, variable):
        return variable in NAMES

    def _here(self, ctx, variable):
        return super()._here(ctx, variable) and gone_on(variable, ctx.target_version)

    def write(self, variable, value, target):
        return None, None

    def read(self, variable):
        return read_advice(variable, self.target_version)

    def removed_because(self, variable, target):
        return why(variable, target)
