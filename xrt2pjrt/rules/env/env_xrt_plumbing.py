"""XRT's server and mesh variables set in Python → removed; reads reported.

XRT ran a server on each host and a mesh between them, and its launchers set
XRT_MESH_SERVICE_ADDRESS, XRT_LOCAL_WORKER, XRT_START_LOCAL_SERVER, XRT_TORCH_DIST_* and the
like for them. PJRT has neither server nor mesh: torch_xla 2.1+ reads none of these, so a
setting does nothing and goes (safe). A read gets its default, and a test of it
(``os.environ.get(...) is not None``) is always False now: it is reported, and a read of
XRT_TORCH_DIST_* (catalyst asked it whether torch.distributed ran over XLA) with the 2.x way to ask.
"""

from __future__ import annotations

from xrt2pjrt.python.environment import EnvRule
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.report import Advice
from xrt2pjrt.xrt_variables import is_plumbing


class Plumbing(EnvRule):
    id = "env-xrt-plumbing"
    summary = "XRT server and mesh variables (XRT_MESH_*, XRT_LOCAL_WORKER, ...) set → removed; reads reported"
    examples = (
        Example(
            dedent("""
                import os

                os.environ['XRT_MESH_SERVICE_ADDRESS'] = 'localhost:53627'
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

                if flags.local:
                    os.environ['XRT_START_LOCAL_SERVER'] = '1'
            """),
            dedent("""
                import os

                if flags.local:
                    pass
            """),
        ),
        Example(
            dedent("""
                import os

                env = {
                    'XRT_MESH_SERVICE_ADDRESS': 'localhost:53627',
                }
            """),
            dedent("""
                import os

                env = {}
            """),
        ),
    )

    def handles(self, variable):
        return is_plumbing(variable)

    def write(self, variable, value, target):
        return None, None

    def read(self, variable):
        answer = (
            f"{variable} belonged to the XRT server; PJRT neither sets nor reads it, so a read gets its default "
            "and a test of it (os.environ.get(...) is not None, in os.environ) is now always False"
        )
        if variable.startswith("XRT_TORCH_DIST"):
            # catalyst asked it whether torch.distributed ran over XLA: now rank -1, world 1
            answer += (
                "; to ask whether this is a distributed XLA run, use xr.world_size() > 1 (torch_xla.runtime), "
                "or torch.distributed.is_initialized() for an 'xla' process group"
            )
        return Advice("drop this read: PJRT never sets it", answer)
