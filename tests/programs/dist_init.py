# expect: ran
"""torch.distributed over XLA with the runtime's own rank and world size and env://."""
import os

import torch
import torch.distributed as dist
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_backend  # noqa: F401
import torch_xla.distributed.xla_multiprocessing as xmp


def _mp_fn(index):
    os.environ['MASTER_ADDR'] = 'localhost'
    os.environ['MASTER_PORT'] = '12355'
    dist.init_process_group('xla', rank=xm.get_ordinal(), world_size=xm.xrt_world_size())
    t = torch.ones(2, device=xm.xla_device())
    dist.all_reduce(t)
    xm.mark_step()
    print("all_reduce", t.cpu().tolist())


if __name__ == '__main__':
    xmp.spawn(_mp_fn, nprocs=8)
