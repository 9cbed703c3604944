# expect: ran
"""The 2022 nightlies' torch_xla.experimental.pjrt: xla_device(0, 'TPU'), world_size, ordinals."""
import torch
from torch_xla.experimental import pjrt

device = pjrt.xla_device(0, 'TPU')
other = pjrt.xla_device(n=0, devkind='TPU')
assert device == other
t = torch.arange(4, device=device) * (pjrt.global_ordinal() + 1)
print(pjrt.world_size(), pjrt.local_ordinal(), t.cpu().tolist())
