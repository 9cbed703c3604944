# expect: ran
"""TPU probes: on a CPU host they answered False under XRT, and must still."""
import sys

import torch_xla.core.xla_model as xm


def tpu_device_exists(kind='TPU'):
    return len(xm.get_xla_supported_devices(devkind=kind)) > 0


has_tpu = bool(xm.get_xla_supported_devices('TPU'))
if has_tpu or tpu_device_exists():
    sys.exit("probed a TPU on a CPU host")
if xm.get_xla_supported_devices('TPU') is not None:
    sys.exit("probed a TPU on a CPU host")
devices = xm.get_xla_supported_devices('CPU', 8)
print("devices", devices)
