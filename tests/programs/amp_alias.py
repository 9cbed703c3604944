# expect: marked
"""torch_xla.amp through a module alias: GradScaler (XLA:GPU's) is gone from 2.9."""
import torch
import torch_xla.amp as xa
import torch_xla.core.xla_model as xm

device = xm.xla_device()
model = torch.nn.Linear(4, 2).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = xa.GradScaler()
with xa.autocast(device):
    loss = model(torch.ones(3, 4, device=device)).sum()
scaler.scale(loss).backward()
scaler.step(optimizer)
scaler.update()
xm.mark_step()
print("loss", loss.item())
