# expect: ran
# migrate: --target shim
"""--target shim: the 2022 nightlies' pjrt.using_pjrt() with the XRT-era xm calls."""
import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
from torch_xla.experimental import pjrt


def _mp_fn(index):
    if pjrt.using_pjrt():
        print("pjrt", xm.get_ordinal(), xm.xrt_world_size())
    else:
        print("xrt")
    t = torch.ones(2, device=xm.xla_device())
    xm.all_reduce('sum', [t])
    xm.mark_step()


if __name__ == '__main__':
    xmp.spawn(_mp_fn, nprocs=8)
