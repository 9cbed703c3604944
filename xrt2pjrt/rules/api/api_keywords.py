"""Keywords torch_xla 2.x renamed or dropped in functions that kept their names.

Read from torch_xla 1.13 against 2.1 … 2.9 (the table is python/renames.py):
``send_cpu_data_to_device(data=)`` is ``datas=`` from 2.1, ``ParallelLoader(loader=)`` is
``cpu_loader=`` from 2.5, ``XlaFullyShardedDataParallel(mark_step_on_finalization=)`` is
``sync_on_finalization=`` from 2.8, and ``all_reduce`` lost ``cctx``, XRT's collective
context. A call that passes the old keyword fails with a TypeError on a release that renamed it.
The same value is passed under the new name, so the call does what it did (safe); ``cctx``
only tuned XRT's collectives, so it goes, and the arguments after it are passed by name to keep
their places. On a ``--target-version`` before a rename the old keyword stays.
"""

from __future__ import annotations

from xrt2pjrt.python.renames import FSDP, PL, RenameRule, XM, renames_of
from xrt2pjrt.registry import Example, dedent


class Keywords(RenameRule):
    id = "api-keywords"
    summary = "Keywords torch_xla 2.x renamed (data=, loader=, mark_step_on_finalization=) or dropped (cctx)"
    table = renames_of(
        f"{XM}.send_cpu_data_to_device",
        f"{PL}.ParallelLoader",
        f"{FSDP}.XlaFullyShardedDataParallel",
        f"{FSDP}.xla_fully_sharded_data_parallel.XlaFullyShardedDataParallel",
        f"{XM}.all_reduce",
    )
    examples = (
        Example(
            dedent("""
                import torch_xla.distributed.parallel_loader as pl

                loader = pl.ParallelLoader(loader=train_loader, devices=[device])
            """),
            dedent("""
                import torch_xla.distributed.parallel_loader as pl

                loader = pl.ParallelLoader(cpu_loader=train_loader, devices=[device])
            """),
        ),
        Example.unchanged(
            dedent("""
                import torch_xla.distributed.parallel_loader as pl

                loader = pl.ParallelLoader(loader=train_loader, devices=[device])
            """),
            options={"target_version": (2, 4)},
        ),
        Example(
            dedent("""
                import torch_xla.core.xla_model as xm

                batch = xm.send_cpu_data_to_device(data=batch, device=device)
            """),
            dedent("""
                import torch_xla.core.xla_model as xm

                batch = xm.send_cpu_data_to_device(datas=batch, device=device)
            """),
        ),
        Example(
            dedent("""
                import torch_xla.core.xla_model as xm

                cctx = make_context()
                xm.all_reduce(xm.REDUCE_SUM, grads, 1.0 / n, None, cctx, True)
            """),
            dedent("""
                import torch_xla.core.xla_model as xm

                cctx = make_context()
                xm.all_reduce(xm.REDUCE_SUM, grads, 1.0 / n, None, pin_layout=True)
            """),
        ),
    )
