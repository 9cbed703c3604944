"""Imports of torch_xla modules (and names) that torch_xla 2.9 no longer has: the import
itself fails there, whether or not anything uses what it brings.

The table is data, checked against the installed torch_xla by tests/test_gone_modules.py:
every entry fails to import there, and every replacement it names imports. An import that
nothing uses once the other rules are done is removed; one still used is reported with
what to use instead.
"""

from __future__ import annotations

import libcst as cst

from xrt2pjrt.registry import Example, register
from xrt2pjrt.rules import imports
from xrt2pjrt.rules.base import PythonRule

# dotted module or name -> what to use instead (read from pytorch/xla v1.13 and v2.0
# against the installed 2.9)
GONE = {
    "torch_xla.experimental.pjrt": "use torch_xla.runtime (the pjrt-* rules rewrite the calls they know)",
    "torch_xla.experimental.xla_sharding": "use torch_xla.distributed.spmd (import torch_xla.distributed.spmd as xs)",
    "torch_xla.experimental.xla_sharded_tensor": "use torch_xla.distributed.spmd.xla_sharded_tensor",
    "torch_xla.experimental.tpu": "nothing public replaces it; torch_xla.runtime has the device and process counts",
    "torch_xla.experimental.gpu": "nothing replaces it: torch_xla 2.9 has no GPU device",
    "torch_xla.amp.GradScaler": "nothing replaces it (it served XLA:GPU): autocast to bfloat16 on TPU needs no scaler",
    "torch_xla.amp.grad_scaler": "nothing replaces it (it served XLA:GPU): autocast to bfloat16 on TPU needs no scaler",
    "torch_xla.utils.gcsfs": "use a GCS client of your own (google-cloud-storage, gcsfs, fsspec)",
    "torch_xla.utils.cached_dataset": "use a cache of your own (e.g. torch.save shards, or the datasets library)",
    "torch_xla.utils.tf_record_reader": "use a TFRecord reader of your own (e.g. tfrecord, tf.data)",
    "torch_xla.distributed.cluster": "nothing replaces it: it resolved XRT's TPU-node cluster",
    "torch_xla.distributed.worker": "nothing replaces it: it described XRT's TPU-node workers",
    "torch_xla.distributed.xrt_init": "nothing replaces it: PJRT needs no runtime set-up",
    "torch_xla.core.xrt_run_server": "nothing replaces it: PJRT runs no XRT server",
}


def gone(dotted: str) -> str | None:
    """The entry of GONE that ``dotted`` (a module or a name in one) is, or is inside of."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        key = ".".join(parts[:end])
        if key in GONE:
            return key
    return None


@register
class ImportGoneModule(PythonRule):
    id = "import-gone-module"
    summary = ("imports of torch_xla modules 2.9 no longer has (experimental.pjrt, experimental.xla_sharding, "
               "utils.gcsfs, amp.GradScaler, ...): removed when nothing uses them once the other rules are done, "
               "else reported with what to use instead")
    nodes = (cst.Import, cst.ImportFrom)
    examples = (
        Example(
            "import os\nfrom torch_xla.experimental import pjrt\nfrom torch_xla.experimental.pjrt import "
            "world_size\n\nprint(os.getpid())\n",
            "import os\n\nprint(os.getpid())\n",
        ),
        Example(
            "import torch_xla.utils.gcsfs as gcs\n\nblob = gcs.read('gs://bucket/x')\n",
            "import torch_xla.utils.gcsfs as gcs\n\nblob = gcs.read('gs://bucket/x')\n",
            manual=("a GCS client of your own",),
        ),
        Example(
            "from torch_xla.amp import GradScaler, autocast\n\nscaler = GradScaler()\n",
            "from torch_xla.amp import GradScaler, autocast\n\nscaler = GradScaler()\n",
            manual=("needs no scaler",),
        ),
    )

    def leave(self, ctx, original, updated):
        for local, target, alias in imports.import_bindings(updated):
            spelled = imports.dotted(alias.name) if isinstance(updated, cst.Import) else target
            entry = gone(spelled)
            if entry is not None:
                why = f"{entry} is not in torch_xla 2.9, where importing it fails"
                ctx.drop_import_if_unused(local, f"import of {spelled} removed: {why}, and nothing uses it",
                                          f"{local} is still used, and {why}: {GONE[entry]}")
        return updated
