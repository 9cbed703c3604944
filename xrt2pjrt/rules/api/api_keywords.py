"""keywords torch_xla 2.x renamed or dropped: send_cpu_data_to_device(data=) → datas=,
ParallelLoader(loader=) → cpu_loader= (2.5+), FSDP(mark_step_on_finalization=) →
sync_on_finalization= (2.8+), all_reduce(cctx=) dropped
"""

from __future__ import annotations

from xrt2pjrt.python.renames import FSDP, PL, RenameRule, XM, renames_of
from xrt2pjrt.registry import Example


class Keywords(RenameRule):
    id = "api-keywords"
    summary = ("keywords torch_xla 2.x renamed or dropped: send_cpu_data_to_device(data=) → datas=, "
               "ParallelLoader(loader=) → cpu_loader= (2.5+), FSDP(mark_step_on_finalization=) → "
               "sync_on_finalization= (2.8+), all_reduce(cctx=) dropped")
    table = renames_of(f"{XM}.send_cpu_data_to_device", f"{PL}.ParallelLoader", f"{FSDP}.XlaFullyShardedDataParallel",
                   f"{FSDP}.xla_fully_sharded_data_parallel.XlaFullyShardedDataParallel", f"{XM}.all_reduce")
    examples = (
        Example(
            "import torch_xla.distributed.parallel_loader as pl\n\n"
            "loader = pl.ParallelLoader(loader=train_loader, devices=[device])\n",
            "import torch_xla.distributed.parallel_loader as pl\n\n"
            "loader = pl.ParallelLoader(cpu_loader=train_loader, devices=[device])\n",
        ),
        Example(
            "import torch_xla.distributed.parallel_loader as pl\n\n"
            "loader = pl.ParallelLoader(loader=train_loader, devices=[device])\n",
            "import torch_xla.distributed.parallel_loader as pl\n\n"
            "loader = pl.ParallelLoader(loader=train_loader, devices=[device])\n",
            options={"target_version": (2, 4)},
        ),
        Example(
            "import torch_xla.core.xla_model as xm\n\nbatch = xm.send_cpu_data_to_device(data=batch, device=device)\n",
            "import torch_xla.core.xla_model as xm\n\nbatch = xm.send_cpu_data_to_device(datas=batch, device=device)\n",
        ),
        Example(
            "import torch_xla.core.xla_model as xm\n\n"
            "cctx = make_context()\nxm.all_reduce(xm.REDUCE_SUM, grads, 1.0 / n, None, cctx, True)\n",
            "import torch_xla.core.xla_model as xm\n\n"
            "cctx = make_context()\nxm.all_reduce(xm.REDUCE_SUM, grads, 1.0 / n, None, pin_layout=True)\n",
        ),
    )
