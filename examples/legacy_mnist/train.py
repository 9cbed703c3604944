"""Train a small MNIST-shaped classifier the way XRT-era PyTorch/XLA code did (torch_xla 1.x).

This is the file a new user migrates first: it uses the APIs that XRT-era training scripts
used most (xmp.spawn with nprocs=8 and fork, xm.get_ordinal, xm.xrt_world_size,
xm.rendezvous, xm.optimizer_step, pl.MpDeviceLoader, XRT_TPU_CONFIG). On torch_xla 2.9 it
fails before migration; after `xrt2pjrt migrate --write` it trains (PJRT_DEVICE=CPU works).

The data is fake and MNIST-shaped: labels come from a fixed random projection of the
images, so a model can learn them and the loss falls within a few epochs on a CPU.
"""

import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_multiprocessing as xmp

# The TPU VM's local XRT server, as the Cloud TPU guides of the time told users to set it.
os.environ.setdefault('XRT_TPU_CONFIG', 'localservice;0;localhost:51011')


def parse_flags(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--epochs', type=int, default=3)
    parser.add_argument('--batch-size', type=int, default=32)
    parser.add_argument('--batches', type=int, default=16, help='batches per epoch and replica')
    parser.add_argument('--lr', type=float, default=0.05)
    parser.add_argument('--checkpoint', default=None, help='save the trained weights here')
    return parser.parse_args(argv)


def fake_mnist(samples, seed):
    """Images and learnable labels; every replica builds the same projection."""
    projection = torch.Generator().manual_seed(1234)
    weights = torch.randn(28 * 28, 10, generator=projection)
    images = torch.randn(samples, 1, 28, 28, generator=torch.Generator().manual_seed(seed))
    labels = (images.flatten(1) @ weights).argmax(dim=1)
    return torch.utils.data.TensorDataset(images, labels)


class Net(nn.Module):

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, kernel_size=5, stride=2)
        self.fc1 = nn.Linear(8 * 12 * 12, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.conv(x))
        x = F.relu(self.fc1(x.flatten(1)))
        return F.log_softmax(self.fc2(x), dim=1)


def train(flags):
    rank = xm.get_ordinal()
    world = xm.xrt_world_size()
    torch.manual_seed(1)
    dataset = fake_mnist(flags.batch_size * flags.batches * world, seed=0)
    sampler = torch.utils.data.distributed.DistributedSampler(
        dataset, num_replicas=world, rank=rank, shuffle=True)
    loader = torch.utils.data.DataLoader(dataset, batch_size=flags.batch_size, sampler=sampler, drop_last=True)

    device = xm.xla_device()
    model = Net().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=flags.lr, momentum=0.9)
    device_loader = pl.MpDeviceLoader(loader, device)

    xm.rendezvous('start_training')
    for epoch in range(1, flags.epochs + 1):
        sampler.set_epoch(epoch)
        total = torch.zeros((), device=device)
        for images, labels in device_loader:
            optimizer.zero_grad()
            loss = F.nll_loss(model(images), labels)
            loss.backward()
            xm.optimizer_step(optimizer)
            total += loss.detach()
        mean = xm.mesh_reduce('epoch_loss', total.item() / flags.batches, lambda losses: sum(losses) / len(losses))
        xm.master_print(f'epoch {epoch} loss {mean:.4f}', flush=True)

    if flags.checkpoint:
        xm.save(model.state_dict(), flags.checkpoint)


def _mp_fn(index, flags):
    train(flags)


if __name__ == '__main__':
    xmp.spawn(_mp_fn, args=(parse_flags(),), nprocs=8, start_method='fork')
