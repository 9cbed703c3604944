# expect: marked
"""A preemption handler set in the spawned function: XRT ran it in the replica's main thread;
torch_xla 2.9 runs it in a thread of the replica process, where signal.signal raises."""
import signal
import sys

import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp


def _save_and_exit(signum, frame):
    sys.exit(0)


def _mp_fn(index):
    signal.signal(signal.SIGTERM, _save_and_exit)
    xm.master_print("handler set on", xm.get_ordinal())


if __name__ == '__main__':
    xmp.spawn(_mp_fn, nprocs=8, start_method='fork')
