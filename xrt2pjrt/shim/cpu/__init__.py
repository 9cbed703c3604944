"""CPU multi-replica mode: an N-replica XLA program on CPU, one process per replica.

torch_xla 2.9 cannot run two replicas on CPU (with ``CPU_NUM_DEVICES>=2`` every
collective aborts in XLA's CPU rendezvous, and several ``PJRT_DEVICE=CPU`` processes are
several worlds of size 1). This mode lets the distributed logic of a TPU program --
sharding by ordinal, gradient all-reduce, rendezvous, mesh_reduce -- run on a laptop or
in CI, with the results a TPU pod gives:

* ``supervisor.spawn`` starts N processes, each a real single-device PJRT CPU replica
  (``PJRT_DEVICE=CPU CPU_NUM_DEVICES=1``), and calls ``fn(ordinal, *args)`` in each;
* the XRT-era functions of ``collectives`` (the backend of the shim's ``xla_model``) span
  the N processes: ordinals and world size come from this mode (``placement``), and every
  collective moves its inputs to the host, exchanges them with torch.distributed's gloo
  backend over the key-value store the parent serves (``transport``; only the job's
  processes get in), computes XLA's result for this replica, and moves it back to the XLA
  device;
* torch_xla's own API answers from the same world inside every replica (``world``,
  applied before ``fn`` runs).

How to ask for it: ``xmp.spawn(fn, nprocs=N)`` with ``PJRT_DEVICE=CPU`` and N > 1; or,
for XRT-era programs that pass ``nprocs=None``, ``XRT2PJRT_CPU_REPLICAS=N``; or, for any
torch_xla program, ``xrt2pjrt run --nprocs N SCRIPT`` (``launch`` and ``launch_guard``
serve it).

Several "hosts" (as on a pod, each runs the same program): set ``XRT2PJRT_CPU_HOSTS``
(host count) and ``XRT2PJRT_CPU_HOST_INDEX`` (this host) on every host, and point every
host at host 0 with ``MASTER_ADDR`` (the rendezvous store's address; the port is the
job's: ``XRT2PJRT_RENDEZVOUS_PORT`` or ``MASTER_PORT + 1``), and give every host the same
``XRT2PJRT_JOB_SECRET`` (only its holders get in). Host h's local replica i has ordinal
``h * nprocs + i``, as torch_xla numbers a pod's processes. ``XRT2PJRT_CPU_HOST_ADDR``
names this host's address for gloo when the route to ``MASTER_ADDR`` does not pick the
right one.

The rooms, top to bottom: ``launch``, ``supervisor`` (the parent), ``replica`` (inside a
replica process), ``world``, ``collectives``, ``transport``, and below them
``host_memory``, ``replacements``, ``launch_guard``, ``placement``. Importing this package
imports none of them.
"""
