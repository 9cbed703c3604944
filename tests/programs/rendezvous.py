# expect: ran
"""rendezvous with a str payload (PJRT takes bytes) and mesh_reduce."""
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp


def _mp_fn(index):
    replies = xm.rendezvous('init', 'hello')
    assert len(replies) == xm.xrt_world_size(), replies
    total = xm.mesh_reduce('loss', 1.5, sum)
    assert total == 1.5 * xm.xrt_world_size(), total
    xm.master_print("done", total)


if __name__ == '__main__':
    xmp.spawn(_mp_fn, args=(), nprocs=8, start_method='fork')
