# expect: marked
"""xm.parse_xla_device (gone in 2.7), beside xm.xla_real_devices and the replication API."""
import torch_xla.core.xla_model as xm

device = xm.xla_device()
kind, index = xm.parse_xla_device(xm.xla_real_devices([str(device)])[0])
print(kind, index)
