"""XRT_SHARD_* / XRT_HOST_* read → reported with the torch_xla.runtime call that answers.

XRT's launcher set XRT_SHARD_WORLD_SIZE, XRT_SHARD_ORDINAL, XRT_SHARD_LOCAL_ORDINAL,
XRT_HOST_ORDINAL and XRT_HOST_WORLD_SIZE in each replica's process, and code read its rank and
world from them. PJRT sets none of them, so a read gets nothing, or its default. Each read is
reported with the call to use (``xr.world_size()``, ``xr.global_ordinal()``,
``xr.local_ordinal()``, ``xr.host_index()``, ...), not rewritten: the read's default and the
parsing of its text are the code's. A setting is a launcher doing xmp.spawn's work by hand: it
does nothing under PJRT and goes (safe), with an item, as the launcher itself must go.
"""

from __future__ import annotations

from xrt2pjrt.python.environment import EnvRule
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.report import Advice
from xrt2pjrt.xrt_variables import RUNTIME_READS


class ReplicaVariables(EnvRule):
    id = "env-xrt-replica-vars"
    summary = "XRT_SHARD_* / XRT_HOST_* read → reported with the xr.* call to use; writes removed"
    examples = (
        Example(
            dedent("""
                import os
                import torch_xla.core.xla_env_vars as xenv

                hosts = int(os.environ.get(xenv.HOST_WORLD_SIZE, '1'))
            """),
            dedent("""
                import os

                # TODO(xrt2pjrt): use the number of hosts from xr [env-xrt-replica-vars]
                hosts = int(os.environ.get('XRT_HOST_WORLD_SIZE', '1'))
            """),
            manual=("xr.local_process_count()",),
        ),
        Example(
            dedent("""
                import os

                rank = int(os.getenv('XRT_SHARD_ORDINAL', 0))  # torch_xla
            """),
            dedent("""
                import os

                # TODO(xrt2pjrt): use xr.global_ordinal() [env-xrt-replica-vars]
                rank = int(os.getenv('XRT_SHARD_ORDINAL', 0))  # torch_xla
            """),
            manual=("xr.global_ordinal()",),
        ),
        Example(
            dedent("""
                import os

                child_env = dict(os.environ)
                child_env.update({'XRT_SHARD_ORDINAL': str(i), 'XRT_SHARD_WORLD_SIZE': str(n), 'RANK': str(i)})
            """),
            dedent("""
                import os

                child_env = dict(os.environ)
                # TODO(xrt2pjrt): use xmp.spawn or torch_xla.launch [env-xrt-replica-vars]
                child_env.update({'RANK': str(i)})
            """),
            manual=("launcher",),
        ),
        Example(  # a test's mock: rewritten, it would no longer match the test's asserts
            dedent("""
                import os
                from unittest import mock

                @mock.patch.dict(os.environ, {'XRT_SHARD_ORDINAL': '1'})
                def check_rank():
                    assert rank() == 1
            """),
            dedent("""
                import os
                from unittest import mock

                # TODO(xrt2pjrt): update this once its code is migrated [env-xrt-replica-vars]
                @mock.patch.dict(os.environ, {'XRT_SHARD_ORDINAL': '1'})
                def check_rank():
                    assert rank() == 1
            """),
            manual=("set for a test here",),
        ),
    )

    def handles(self, variable):
        return variable in RUNTIME_READS

    def write(self, variable, value, target):
        return None, Advice(
            "use xmp.spawn or torch_xla.launch",
            "a launcher that sets XRT_SHARD_* per process must go: use xmp.spawn or torch_xla.launch",
        )

    def read(self, variable):
        read = RUNTIME_READS[variable]
        return Advice(
            read.do,
            f"{read.more}: {variable} is never set under PJRT" if read.more else f"{variable} is never set under PJRT",
        )
