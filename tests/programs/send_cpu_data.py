# expect: ran
"""send_cpu_data_to_device(data=...) (2.x: datas=)."""
import torch
import torch_xla.core.xla_model as xm

device = xm.xla_device()
batch = {'x': torch.ones(2, 3), 'y': [torch.zeros(1)]}
moved = xm.send_cpu_data_to_device(data=batch, device=device)
assert str(moved['x'].device).startswith('xla'), moved['x'].device
print(moved['x'].sum().item())
