# expect: ran
"""The DataLoader behind a device loader, read through ParallelLoader's private `_loader`
(`_cpu_loader` from 2.5): a length patched onto PerDeviceLoader, a sampler's set_epoch."""
import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl


def _len(self):
    return len(self._loader._loader)


pl.PerDeviceLoader.__len__ = _len

device = xm.xla_device()
data = torch.utils.data.TensorDataset(torch.randn(16, 4), torch.randn(16, 1))
sampler = torch.utils.data.distributed.DistributedSampler(data, num_replicas=1, rank=0)
train_loader = torch.utils.data.DataLoader(data, batch_size=4, sampler=sampler)
para_loader = pl.ParallelLoader(train_loader, [device])
para_loader._loader.sampler.set_epoch(1)
loader = para_loader.per_device_loader(device)
assert len(loader) == 4, len(loader)
print("batches", sum(1 for _ in loader))
