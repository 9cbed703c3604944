# expect: ran
"""pjrt.rendezvous(tag, payload, ordinals): 2.x's xm.xla_rendezvous takes (payload, ordinals, tag)."""
import torch_xla.distributed.xla_multiprocessing as xmp
from torch_xla.experimental import pjrt


def _mp_fn(index):
    replies = pjrt.rendezvous('ready', b'x', [0])
    print("replies", replies)


if __name__ == '__main__':
    xmp.spawn(_mp_fn)
