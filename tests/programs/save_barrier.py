# expect: ran
"""xm.save, then every replica reads the checkpoint."""
import os
import tempfile

import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp


def _mp_fn(index, path):
    model = torch.nn.Linear(2, 2).to(xm.xla_device())
    xm.save(model.state_dict(), path)
    state = torch.load(path)
    assert set(state) == {'weight', 'bias'}
    xm.master_print("loaded", sorted(state))


if __name__ == '__main__':
    xmp.spawn(_mp_fn, args=(os.path.join(tempfile.mkdtemp(), 'model.pt'),), nprocs=8, start_method='fork')
