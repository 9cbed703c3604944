# expect: ran
"""FSDP's mark_step_on_finalization= (2.8+: sync_on_finalization=)."""
import torch
import torch_xla.core.xla_model as xm
from torch_xla.distributed.fsdp import XlaFullyShardedDataParallel as FSDP

device = xm.xla_device()
model = FSDP(torch.nn.Linear(8, 4).to(device), mark_step_on_finalization=True)
loss = model(torch.ones(2, 8, device=device)).sum()
loss.backward()
xm.mark_step()
print("loss", loss.item())
