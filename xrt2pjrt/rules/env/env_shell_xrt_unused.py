"""Every other XRT-era variable outside Python is removed: torch_xla 2.1+ reads none of them.

XRT's server and mesh settings (XRT_MESH_*, XRT_START_LOCAL_SERVER, ...), the per-replica
XRT_SHARD_* / XRT_HOST_* it set for each process, TPU_NUM_DEVICES, TPUVM_MODE and the
settings only XRT's client read (XLA_TENSOR_ALLOCATOR_MAXSIZE, ...): their
settings go, and a read of one (``$XRT_SHARD_ORDINAL``) is reported with what to read
instead, as nothing sets them under PJRT. So is a TPU_NUM_DEVICES of fewer devices than
the whole host PJRT opens unasked, as on the Python side (env-xrt-unprefixed). An ``echo`` or
``printf`` that only shows one on the terminal is not: it prints an empty value, and nothing
else changes.
"""

from __future__ import annotations

from xrt2pjrt.recorder import todo_line
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.text.environment import EnvRule
from xrt2pjrt.xrt_variables import UNPREFIXED, XRT_ERA_PATTERN, asks_fewer_cores


class XrtUnused(EnvRule):
    id = "env-shell-xrt-unused"
    summary = "Every other XRT-era variable (XRT_*, TPU_NUM_DEVICES, ...) outside Python → removed; reads reported"
    variables = XRT_ERA_PATTERN
    catch_all = True
    replacement = None
    examples = (
        Example(
            dedent(r"""
                export XRT_TPU_CONFIG=localservice\;0\;localhost:51011
                export XRT_START_LOCAL_SERVER=1
                python3 train.py
            """),
            dedent(r"""
                export XRT_TPU_CONFIG=localservice\;0\;localhost:51011
                python3 train.py
            """),
        ),
        Example(
            "XRT_SHARD_ORDINAL=0 XRT_SHARD_WORLD_SIZE=1 TPU_NUM_DEVICES=8 python3 train.py\n", "python3 train.py\n"
        ),
        Example(
            'python3 eval.py --rank "$XRT_SHARD_ORDINAL"\n',
            dedent("""
                    # TODO(xrt2pjrt): use xr.global_ordinal() [env-shell-xrt-unused]
                    python3 eval.py --rank "$XRT_SHARD_ORDINAL"
                """),
            manual=("XRT_SHARD_ORDINAL is read here",),
        ),
        Example.unchanged('echo "ordinal $XRT_SHARD_ORDINAL"\n'),
        Example(
            "export TPU_NUM_DEVICES=1\npython3 train.py\n",
            todo_line(UNPREFIXED["TPU_NUM_DEVICES"].do, "env-shell-xrt-unused") + "python3 train.py\n",
            manual=("TPU_VISIBLE_CHIPS",),
        ),
    )

    @classmethod
    def choose(cls, setting, target):
        asked = setting.form != "unset" and asks_fewer_cores(setting.name, setting.value)
        return None, UNPREFIXED[setting.name] if asked else None
