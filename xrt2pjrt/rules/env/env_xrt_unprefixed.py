"""TPU_NUM_DEVICES / TPUVM_MODE / COLAB_TPU_ADDR and XRT's client settings (XRT-era, no XRT_
prefix) set → removed; reads reported, and TPU_NUM_DEVICES settings, with what to do under PJRT.

XRT's client read settings of its own outside ``XRT_*``: XLA_TENSOR_ALLOCATOR_MAXSIZE,
XLA_HANDLE_RELEASE_THREADS, ... (meanings/settings.py lists them from torch_xla 1.13's
sources). torch_xla 2.x reads none of them, so a setting does nothing and goes; a read of
one gets nothing that torch_xla set. COLAB_TPU_ADDR, which only the old Colab TPU runtime set,
is not asked about in a notebook saved for a GPU runtime (its metadata's accelerator): a read of
it failed there under XRT as well. A TPU_NUM_DEVICES of a whole host goes unasked, as PJRT opens
every device unasked: 8, every core of a v2-8 or v3-8, and 4, every chip of a v4 host (what real
XRT-era scripts that set 4 ran on: a v3-8 run on fewer cores said nprocs=1).
"""

from __future__ import annotations

from xrt2pjrt.python.environment import EnvRule
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.report import Advice
from xrt2pjrt.xrt_variables import UNPREFIXED, asks_fewer_cores


class Unprefixed(EnvRule):
    id = "env-xrt-unprefixed"
    summary = "XRT-era variables without the XRT_ prefix (TPU_NUM_DEVICES, ...) set → removed; reads reported"
    examples = (
        Example(
            dedent("""
                import os

                os.environ['TPUVM_MODE'] = '1'
                os.environ['TPU_NUM_DEVICES'] = '1'
                train()
            """),
            dedent("""
                import os

                # TODO(xrt2pjrt): set TPU_VISIBLE_CHIPS for fewer chips [env-xrt-unprefixed]
                train()
            """),
            manual=("TPU_PROCESS_BOUNDS",),
        ),
        Example(
            dedent("""
                import os

                os.environ['XLA_TENSOR_ALLOCATOR_MAXSIZE'] = '100000000'
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

                cores = int(os.environ.get('TPU_NUM_DEVICES', 8))
            """),
            dedent("""
                import os

                # TODO(xrt2pjrt): set TPU_VISIBLE_CHIPS for fewer chips [env-xrt-unprefixed]
                cores = int(os.environ.get('TPU_NUM_DEVICES', 8))
            """),
            manual=("one process per chip",),
        ),
        Example(
            dedent("""
                import os
                import torch
                assert os.environ['COLAB_TPU_ADDR'], 'Make sure to select TPU'
            """),
            dedent("""
                import os
                import torch
                # TODO(xrt2pjrt): test xr.device_type() == 'TPU' instead [env-xrt-unprefixed]
                assert os.environ['COLAB_TPU_ADDR'], 'Make sure to select TPU'
            """),
            manual=("xr.device_type() == 'TPU'",),
        ),
        Example.unchanged(  # TensorFlow's Colab notebooks found their TPU node there too: not PyTorch's to report
            dedent("""
                import os
                import tensorflow as tf

                tpu = tf.distribute.cluster_resolver.TPUClusterResolver('grpc://' + os.environ['COLAB_TPU_ADDR'])
            """),
        ),
        Example(  # torch_xla 2.9 still names it, and never sets it
            dedent("""
                import os
                import torch_xla.core.xla_env_vars as xenv

                master = os.environ[xenv.TPU_MESH_CTLER_ADDR]
            """),
            dedent("""
                import os
                import torch_xla.core.xla_env_vars as xenv

                # TODO(xrt2pjrt): take host 0's address from your launcher [env-xrt-unprefixed]
                master = os.environ[xenv.TPU_MESH_CTLER_ADDR]
            """),
            manual=("a read is a KeyError",),
        ),
    )

    def handles(self, variable):
        return variable in UNPREFIXED

    def write(self, variable, value, target):
        return None, (self.read(variable) if asks_fewer_cores(variable, value) else None)

    def read(self, variable):
        return Advice(UNPREFIXED[variable].do, f"{variable} is XRT-era: {UNPREFIXED[variable].more}")
