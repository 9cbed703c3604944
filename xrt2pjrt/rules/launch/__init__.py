"""launches, and the machines they run on.

torch_xla 1.x launched pods with ``python -m torch_xla.distributed.xla_dist`` and ran XRT's
server on each worker, on TPU nodes created with ``ctpu`` or ``gcloud compute tpus create``;
all of it is gone from 2.x, which runs on TPU VMs.
"""
