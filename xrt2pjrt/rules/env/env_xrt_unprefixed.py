"""TPU_NUM_DEVICES / TPUVM_MODE / COLAB_TPU_ADDR and XRT's client settings (XRT-era, no XRT_
prefix) set → removed; reads reported, and TPU_NUM_DEVICES settings, with what to do under PJRT.

XRT's client read settings of its own outside ``XRT_*``: XLA_TENSOR_ALLOCATOR_MAXSIZE,
XLA_HANDLE_RELEASE_THREADS, ... (meanings/settings.py lists them from torch_xla 1.13's
sources). torch_xla 2.x reads none of them, so a setting does nothing and goes; a read of
one gets nothing that torch_xla set.
"""

from __future__ import annotations

from xrt2pjrt.python.environment import EnvRule
from xrt2pjrt.registry import Example
from xrt2pjrt.report import Advice
from xrt2pjrt.xrt_variables import UNPREFIXED


class Unprefixed(EnvRule):
    id = "env-xrt-unprefixed"
    summary = "XRT-era variables without the XRT_ prefix (TPU_NUM_DEVICES, ...) set → removed; reads reported"
    examples = (
        Example(
            "import os\n\nos.environ['TPUVM_MODE'] = '1'\nos.environ['TPU_NUM_DEVICES'] = '1'\ntrain()\n",
            "import os\n\ntrain()\n",
            manual=("TPU_PROCESS_BOUNDS",),
        ),
        Example(
            "import os\n\nos.environ['XLA_TENSOR_ALLOCATOR_MAXSIZE'] = '100000000'\nos.environ['XLA_USE_BF16'] = '1'\n",
            "import os\n\nos.environ['XLA_USE_BF16'] = '1'\n",
        ),
        Example(
            "import os\n\ncores = int(os.environ.get('TPU_NUM_DEVICES', 8))\n",
            (
                "import os\n"
                "\n"
                "# TODO(xrt2pjrt): set TPU_VISIBLE_CHIPS for fewer chips [env-xrt-unprefixed]\n"
                "cores = int(os.environ.get('TPU_NUM_DEVICES', 8))\n"
            ),
            manual=("one process per chip",),
        ),
        Example(
            "import os\nimport torch\nassert os.environ['COLAB_TPU_ADDR'], 'Make sure to select TPU'\n",
            (
                "import os\n"
                "import torch\n"
                "# TODO(xrt2pjrt): test xr.device_type() == 'TPU' instead [env-xrt-unprefixed]\n"
                "assert os.environ['COLAB_TPU_ADDR'], 'Make sure to select TPU'\n"
            ),
            manual=("xr.device_type() == 'TPU'",),
        ),
        Example(  # TensorFlow's Colab notebooks found their TPU node there too: not PyTorch's to report
            "import os\nimport tensorflow as tf\n\n"
            "tpu = tf.distribute.cluster_resolver.TPUClusterResolver('grpc://' + os.environ['COLAB_TPU_ADDR'])\n",
            "import os\nimport tensorflow as tf\n\n"
            "tpu = tf.distribute.cluster_resolver.TPUClusterResolver('grpc://' + os.environ['COLAB_TPU_ADDR'])\n",
        ),
        Example(  # torch_xla 2.9 still names it, and never sets it
            "import os\nimport torch_xla.core.xla_env_vars as xenv\n\nmaster = os.environ[xenv.TPU_MESH_CTLER_ADDR]\n",
            (
                "import os\n"
                "import torch_xla.core.xla_env_vars as xenv\n"
                "\n"
                "# TODO(xrt2pjrt): take host 0's address from your launcher [env-xrt-unprefixed]\n"
                "master = os.environ[xenv.TPU_MESH_CTLER_ADDR]\n"
            ),
            manual=("a read is a KeyError",),
        ),
    )

    def handles(self, variable):
        return variable in UNPREFIXED

    def write(self, variable, value, target):
        return None, (self.read(variable) if variable == "TPU_NUM_DEVICES" else None)

    def read(self, variable):
        return Advice(UNPREFIXED[variable].do, f"{variable} is XRT-era: {UNPREFIXED[variable].more}")
