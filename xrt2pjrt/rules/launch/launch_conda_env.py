"""The XRT-era conda env of the old TPU VM images activated (``conda activate torch-xla-1.13``),
outside an xla_dist call, or a path into those images (``/usr/share/torch-xla-1.5/...``): reported.

The TPU VM images of torch_xla 1.x (tpu-vm-pt-1.13 and its like) came with conda envs named
for their release, torch-xla-1.13, torch-xla-nightly, holding that torch_xla, XRT's. A script
that activates one runs the migrated program on it, and fails. (Inside an xla_dist call,
``--conda-env`` is launch-xla-dist's to report.) Installing torch_xla 2.x in the env, or
using another, is a person's choice. So is a command that runs a file those images shipped
(their examples and test scripts in ``/usr/share/torch-xla-1.5/``, the envs in
``/anaconda3/envs/torch-xla-1.13/``): a TPU VM of torch_xla 2.9 has none of them. An env named
through the script's variables (``CONDAENV=torch-xla-$VERSION``, then ``conda activate $CONDAENV``)
is read with the values they are assigned above.
"""

from __future__ import annotations

import re

from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.recorder import todo_line
from xrt2pjrt.text.rule import TextRule
from xrt2pjrt.text import xla_dist
from xrt2pjrt.text.words import expanded
from xrt2pjrt.text.xla_dist import XRT_ERA_CONDA_ENV

DO = "install torch_xla 2.x in this conda env"
_SHIPPED = "a file of an XRT-era image: not on 2.9's"
# The env names of the XRT-era images: torch-xla-1.13, torch-xla-nightly
_IMAGE_ENV = re.compile(r"torch-xla-(?:\d+\.\d+(?:\.\d+)?|nightly)$")
# A path into such an image: its shipped examples and tests, or its envs.
_IMAGE_PATH = re.compile(r"/(?:share|envs)/(torch-xla-(?:[01]\.\d+|nightly))/")


def _activated(argv: list[str]) -> str | None:
    """The env ``conda activate ENV`` or ``source activate ENV`` activates."""
    if (
        len(argv) > 2
        and argv[0].endswith("conda")
        and argv[1] == "activate"
        or len(argv) > 2
        and argv[0] in ("source", ".")
        and argv[1].endswith("activate")
    ):
        return argv[-1]
    return None


class CondaEnv(TextRule):
    id = "launch-conda-env"
    fix = "none"
    words = ("torch-xla-",)
    summary = "conda activate torch-xla-1.x (an XRT-era TPU VM image's env), or a file of that image: reported"
    examples = (
        Example(
            dedent("""
                conda activate torch-xla-1.13
                python3 train.py
            """),
            todo_line(DO, "launch-conda-env")
            + dedent("""
                conda activate torch-xla-1.13
                python3 train.py
            """),
            manual=("holds torch_xla 1.x",),
        ),
        Example("conda activate torch-xla-2.9\n", "conda activate torch-xla-2.9\n"),
        Example(
            'VERSION=1.13\nCONDAENV="torch-xla-$VERSION"\nconda activate $CONDAENV\n',
            'VERSION=1.13\nCONDAENV="torch-xla-$VERSION"\n'
            + todo_line(DO, "launch-conda-env")
            + "conda activate $CONDAENV\n",
            manual=("torch-xla-1.13",),
        ),
        Example(
            "python /usr/share/torch-xla-1.5/tpu-examples/deps/fairseq/train.py data-bin --tpu\n",
            todo_line(_SHIPPED, "launch-conda-env")
            + "python /usr/share/torch-xla-1.5/tpu-examples/deps/fairseq/train.py data-bin --tpu\n",
            manual=("shipped with torch-xla-1.5",),
        ),
    )

    def command(self, rec, cmd, posix_sh):
        argv = cmd.argv()
        words = cmd.argv_text(rec.text)
        # (xla_dist's own path goes with its call, which launch-xla-dist rewrites)
        shipped = next((m for w in words if not xla_dist.MENTION.search(w) and (m := _IMAGE_PATH.search(w))), None)
        if shipped:
            rec.decide(
                self.id,
                argv[0].start,
                _SHIPPED,
                f"a path shipped with {shipped.group(1)}, an XRT-era TPU image, which a TPU VM of torch_xla 2.x "
                "lacks: take the file from today's sources",
            )
        env = _activated(words)
        env = env and expanded(env, rec.text, argv[0].start)
        if env and _IMAGE_ENV.search(env) and (XRT_ERA_CONDA_ENV.search(env) or env.endswith("nightly")):
            rec.decide(
                self.id,
                argv[0].start,
                DO,
                f"`conda activate {env}`: the env of an XRT-era TPU VM image, which "
                "holds torch_xla 1.x: install torch_xla 2.x in it or use another",
            )
