"""xla_dist launches.

torch_xla 1.x launched pods with ``python -m torch_xla.distributed.xla_dist`` and ran XRT's
server on each worker; both are gone from 2.x.
"""
