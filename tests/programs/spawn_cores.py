# expect: ran
"""xmp.spawn(nprocs=flags.num_cores), ordinals and world size in the workers."""
import argparse

import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp


def _mp_fn(index, flags):
    device = xm.xla_device()
    rank, world = xm.get_ordinal(), xm.xrt_world_size()
    t = torch.full((2,), float(rank), device=device)
    gathered = xm.all_gather(t)
    xm.mark_step()
    assert gathered.shape[0] == 2 * world, gathered.shape
    if xm.is_master_ordinal():
        print("world", world, "local", xm.get_local_ordinal(defval=0))


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--num_cores', type=int, default=8)
    flags = parser.parse_args()
    xmp.spawn(_mp_fn, args=(flags,), nprocs=flags.num_cores, start_method='fork')
