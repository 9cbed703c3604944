"""xmp.spawn's arguments, and what runs before it.

PJRT starts one process per chip and uses every device; from torch_xla 2.6 ``nprocs``
other than None or 1 raises ``ValueError``, and the spawned function runs in a thread of a
pool worker process, where XRT ran it in a process of its own.
"""
