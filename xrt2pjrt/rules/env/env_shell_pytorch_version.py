"""A TPU's PyTorch software version set for XRT's releases (TPU_PYTORCH_VERSION=1.13,
PYTORCH_VERSION=pytorch-1.13, in a .env file, a script, a Dockerfile, YAML): reported.

Set-ups of the XRT years kept the TPU's software version in a variable, handed to ``ctpu up
-tf-version=pytorch-$TPU_PYTORCH_VERSION``, ``gcloud compute tpus create --version=…`` or
``configure_tpu_version``: the software of a TPU node, whose torch_xla was XRT's (1.x; 2.0
still ran XRT, and nightly meant its nightly then). Migrated code cannot run there. A
value naming torch_xla 2.1 or later is left alone; which release, image and machine to take
is a person's choice, so the setting is reported, not rewritten.
"""

from __future__ import annotations

import re

from xrt2pjrt.registry import Example
from xrt2pjrt.report import Advice
from xrt2pjrt.recorder import todo_line
from xrt2pjrt.text.environment import KEEP, EnvRule

NAMES = "TPU_PYTORCH_VERSION|PYTORCH_VERSION|TORCH_XLA_VERSION|TPU_SOFTWARE_VERSION|TPU_RUNTIME_VERSION"
# A value naming an XRT-era release: 1.x, 2.0, or the nightly of those years, as pytorch-… or bare.
_XRT_ERA = re.compile(r"""^["']?(?:pytorch-)?(?:1\.\d+|2\.0(?!\d)|nightly)""")
NOTE = Advice(
    "use a TPU VM with torch_xla 2.x",
    "this names a TPU's software of torch_xla's XRT years (1.x, 2.0, their nightly), for a TPU node or "
    "an image with that torch_xla: create a TPU VM (gcloud compute tpus tpu-vm create "
    "--version=tpu-ubuntu2204-base) and pip install 'torch_xla[tpu]' of the release the code was migrated for",
)


class ShellPytorchVersion(EnvRule):
    id = "env-shell-pytorch-version"
    fix = "none"
    words = ("PYTORCH_VERSION", "TORCH_XLA_VERSION", "TPU_SOFTWARE_VERSION", "TPU_RUNTIME_VERSION")
    variables = NAMES
    summary = "A TPU software version of the XRT years set (TPU_PYTORCH_VERSION=1.13, pytorch-1.13): reported"
    examples = (
        Example(
            "TPU_PYTORCH_VERSION=pytorch-1.13 ./create_tpu.sh\n",
            todo_line(NOTE.do, "env-shell-pytorch-version") + "TPU_PYTORCH_VERSION=pytorch-1.13 ./create_tpu.sh\n",
            manual=("XRT years",),
        ),
        Example("export TPU_PYTORCH_VERSION=2.9\n", "export TPU_PYTORCH_VERSION=2.9\n"),
    )

    @classmethod
    def choose(cls, setting, target):
        return KEEP, NOTE if setting.value and _XRT_ERA.match(setting.value) else None
