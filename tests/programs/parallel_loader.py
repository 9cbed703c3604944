# expect: ran
"""ParallelLoader(loader=...) (2.5+: cpu_loader=) and MpDeviceLoader."""
import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl

device = xm.xla_device()
data = torch.utils.data.TensorDataset(torch.randn(16, 4), torch.randn(16, 1))
train_loader = torch.utils.data.DataLoader(data, batch_size=4)
loader = pl.ParallelLoader(loader=train_loader, devices=[device]).per_device_loader(device)
seen = sum(1 for _ in loader)
assert seen == 4, seen
for x, y in pl.MpDeviceLoader(train_loader, device):
    assert x.shape == (4, 4)
print("batches", seen)
