# expect: ran
"""pjrt._run_multiprocess(fn, *args): fn takes the args alone (no process index)."""
import torch
import torch_xla.core.xla_model as xm
from torch_xla.experimental import pjrt


def _check(scale):
    t = torch.ones(2, device=xm.xla_device()) * scale
    xm.mark_step()
    assert t.cpu().tolist() == [scale, scale]
    print("checked", scale)


if __name__ == '__main__':
    pjrt._run_multiprocess(_check, 3.0)
    results = pjrt.run_multiprocess(_check, 2.0)
    print(results)
