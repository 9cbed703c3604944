"""The XRT-era ``xm`` and ``xmp`` APIs, with correct semantics on torch_xla's PJRT runtime.

Change two imports and nothing else::

    import xrt2pjrt.shim.xla_model as xm
    import xrt2pjrt.shim.xla_multiprocessing as xmp

Importing this package imports nothing heavy; ``xla_model``, ``xla_multiprocessing`` and
``parallel_loader`` import torch_xla; the rest import torch and torch_xla only inside the
calls that need them. The shim is the standard library, torch and torch_xla (and PyYAML,
which torch_xla requires) and nothing of the codemod: it can travel alone.

Floors, top to bottom. A module imports modules of its own floor or below, never above, and
at its top, not hidden in a function (tests/shim/test_shim_floors.py reads every import):

1. ``xla_multiprocessing``: XRT's ``xmp.spawn`` and ``run_multiprocess`` on PJRT
2. ``xla_model``, ``parallel_loader``: the XRT-era ``xm`` and ``pl`` APIs
3. ``cpu.launch``: torch_xla's own spawn starts CPU replicas under ``xrt2pjrt run``
4. ``cpu.supervisor``: a host's CPU replicas started and joined
5. ``cpu.replica``: inside a CPU replica process
6. ``cpu.world``: torch_xla's own API as one replica of the world
7. ``cpu.collectives``: the CPU mode's collectives (``xla_model``'s backend there)
8. ``cpu.transport``: a replica's store connection and gloo groups
9. ``cpu.placement``, ``cpu.host_memory``, ``cpu.replacements``, ``cpu.launch_guard``: where
   a replica runs, its tensors on the host, the replacement tables, the launching process
10. ``rendezvous``: the host rendezvous (barrier and payload exchange)
11. ``job_store``: this process's part in its job's store
12. ``job``: the job as the environment describes it, and its secret
13. ``topology``, ``collective_args``, ``spawn_targets``: a TPU slice's shape, XLA's
    collective arguments, how spawn hands ``fn`` to its replicas
14. ``store.helper``: a store in a process of its own
15. ``store.server``, ``store.client``: the store's two ends
16. ``store.secret``: the job's secret
17. ``store.protocol``: TCPStore's wire protocol, the job's key space, errors and value limit
18. ``settings``: every ``XRT2PJRT_*`` variable
"""
