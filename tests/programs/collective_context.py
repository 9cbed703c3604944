# expect: marked
"""XRT's CollectiveContext and all_reduce(cctx=...), under xmp.spawn."""
import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp


def _mp_fn(index):
    device = xm.xla_device()
    cctx = xm.CollectiveContext()
    t = torch.ones(2, device=device) * (xm.get_ordinal() + 1)
    xm.all_reduce(xm.REDUCE_SUM, [t], cctx=cctx)
    xm.mark_step()
    world = xm.xrt_world_size()
    assert t.cpu().tolist() == [world * (world + 1) / 2] * 2, t


if __name__ == '__main__':
    xmp.spawn(_mp_fn, nprocs=8, start_method='fork')
