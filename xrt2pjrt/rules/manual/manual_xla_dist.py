"""torch_xla.distributed.xla_dist used from Python (removed in 2.1): report
"""

from __future__ import annotations

import re

import libcst as cst

from xrt2pjrt.python.ipython_calls import is_magic_call
from xrt2pjrt.registry import Example
from xrt2pjrt.rules.manual._manual import ImportedModuleRule


class XlaDist(ImportedModuleRule):
    id = "manual-xla-dist"
    fix = "none"
    words = ("torch_xla", "xla_dist")  # also in strings: subprocess.run("python -m ...xla_dist ...")
    summary = "torch_xla.distributed.xla_dist used from Python (removed in 2.1): report"
    prefixes = ("torch_xla.distributed.xla_dist.",)
    examples = (
        Example(  # started from Python: the module is gone, the command fails
            "import subprocess\nimport torch_xla\n\n"
            "subprocess.run(['python3', '-m', 'torch_xla.distributed.xla_dist', '--tpu=p', '--', 'python3', 't.py'])\n",
            (
                "import subprocess\n"
                "import torch_xla\n"
                "\n"
                "# TODO(xrt2pjrt): launch with `xrt2pjrt launch` or gcloud [manual-xla-dist]\n"
                "subprocess.run(['python3', '-m', 'torch_xla.distributed.xla_dist', '--tpu=p', '--', 'python3', 't.py'])\n"
            ),
            manual=("this command starts xla_dist",),
        ),
        Example(
            "from torch_xla.distributed import xla_dist\n\nxla_dist.resolve_and_execute(args)\n",
            (
                "# TODO(xrt2pjrt): launch with `xrt2pjrt launch` or gcloud [manual-xla-dist]\n"
                "from torch_xla.distributed import xla_dist\n"
                "\n"
                "# TODO(xrt2pjrt): launch with `xrt2pjrt launch` or gcloud [manual-xla-dist]\n"
                "xla_dist.resolve_and_execute(args)\n"
            ),
            manual=("xla_dist is gone",),
        ),
    )

    nodes = (cst.Import, cst.ImportFrom, cst.SimpleString)

    def matches(self, module):
        return module == "torch_xla.distributed.xla_dist" or module.startswith("torch_xla.distributed.xla_dist.")

    def item(self, module):
        return _LAUNCH, f"xla_dist is gone from torch_xla 2.1: {_LAUNCH_PODS}"

    def leave(self, ctx, original, updated):
        if not isinstance(original, cst.SimpleString):
            return super().leave(ctx, original, updated)
        # a command that runs it: subprocess.run(['python', '-m', 'torch_xla.distributed.xla_dist', ...]),
        # os.system('python -m torch_xla.distributed.xla_dist ...')
        text = original.evaluated_value
        if isinstance(ctx.parent(1), cst.Expr) or is_magic_call(ctx.parent(2)):
            return updated  # a docstring, a string standing alone; a magic's, migrated as the command it is
        if isinstance(text, str) and _XLA_DIST_COMMAND.search(text):
            ctx.decide(_LAUNCH, detail=f"this command starts xla_dist, which is gone from torch_xla 2.1: {_LAUNCH_PODS}")
        return updated


_LAUNCH = "launch with `xrt2pjrt launch` or gcloud"
_LAUNCH_PODS = "launch with `gcloud compute tpus tpu-vm ssh NAME --worker=all --command=...` (or `xrt2pjrt launch`)"
_XLA_DIST_COMMAND = re.compile(r"(?<![\w.])torch_xla\.distributed\.xla_dist\b")
