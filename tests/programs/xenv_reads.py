# expect: marked
"""XRT variables read through torch_xla's own name table, which 2.9 still ships."""
import os

import torch_xla.core.xla_env_vars as xenv

if os.getenv(xenv.TPUVM_MODE) == '1':
    print("TPU VM")
host = int(os.environ.get(xenv.HOST_ORDINAL, '0'))
cores = int(os.environ.get(xenv.TPU_NUM_DEVICES, '8'))
master = os.environ[xenv.TPU_MESH_CTLER_ADDR]
print(host, cores, master)
