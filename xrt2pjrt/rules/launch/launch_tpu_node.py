"""TPU node creation (``ctpu up -tf-version=pytorch-…``, ``gcloud compute tpus create --version=pytorch-…``,
execution groups, Terraform's ``google_tpu_node``): reported.

A TPU node was a Compute Engine VM and a TPU reached over the network at port 8470, which
only XRT could drive (XRT_TPU_CONFIG="tpu_worker;0;IP:8470"); ``ctpu up`` and ``gcloud compute
tpus create`` (without ``tpu-vm``) made one, with ``-tf-version`` / ``--version`` choosing the
TPU's software (``pytorch-1.13``). PJRT runs the program on the TPU's own host, a TPU VM:
``gcloud compute tpus tpu-vm create NAME --version=tpu-ubuntu2204-base`` (every TPU
generation: the older base images hold a Python 3.8 torch_xla 2.9 does not install on), then
``pip install torch_xla[tpu]`` there. Which accelerator, zone and image to take is a person's
choice, so the line is reported, not rewritten.

Terraform made the same TPU node as a ``google_tpu_node`` resource, its ``tensorflow_version`` a
``pytorch-…`` release; its TPU VM is a ``google_tpu_v2_vm`` with that ``runtime_version``. A resource
naming PyTorch is reported, and so is a ``pytorch-…`` node release set apart from one (a variable's
default, a ``.tfvars`` value); a TPU node of TensorFlow's is left alone.
"""

from __future__ import annotations

import re

from xrt2pjrt.registry import Example
from xrt2pjrt.recorder import todo_line
from xrt2pjrt.text.rule import TextRule

DO = "create a TPU VM instead: tpu-vm create"
_ONLY_XRT = "a TPU node, a VM and a TPU reached over the network that only XRT could drive"
_MORE = (
    "{what} creates " + _ONLY_XRT + "; PJRT runs on TPU VMs: gcloud compute tpus tpu-vm create NAME --zone=ZONE "
    "--accelerator-type=TYPE --version=tpu-ubuntu2204-base, then pip install 'torch_xla[tpu]' on it"
)

# Terraform's: the item's message, what a TPU VM is there, a TPU node resource, and a TPU node's
# PyTorch release as an attribute of its own (`tensorflow_version = "pytorch-1.13"`).
_AS_TPU_VM = "make it a google_tpu_v2_vm resource"
_TERRAFORM_TPU_VM = (
    'PJRT runs on TPU VMs: a google_tpu_v2_vm resource with runtime_version = "tpu-ubuntu2204-base", then pip '
    "install 'torch_xla[tpu]' on it"
)
_TERRAFORM_NODE = re.compile(r'resource\s+"google_tpu_node"\s+"[^"]*"\s*\{')
_RELEASE = re.compile(r'\btensorflow_version[ \t]*=[ \t]*(?:"([^"]*)")?')
_NODE_RELEASE = re.compile(r'^[ \t]*\w+[ \t]*=[ \t]*"(pytorch-(?:\d+\.\d+|nightly)[^"]*)"', re.M)


def node_creation(argv: list[str]) -> str | None:
    """What TPU-node creation ``argv`` is (``ctpu up``, ``gcloud compute tpus create``), or None."""
    if len(argv) > 1 and argv[0].endswith("ctpu") and argv[1] == "up":
        return "ctpu up"
    words = [w for w in argv if w not in ("alpha", "beta")]
    if words[:3] == ["gcloud", "compute", "tpus"] and len(words) > 3:
        if words[3] == "create":
            return "gcloud compute tpus create"
        if words[3] == "execution-groups" and len(words) > 4 and words[4] == "create":
            return "gcloud compute tpus execution-groups create"
    return None


class TpuNode(TextRule):
    id = "launch-tpu-node"
    fix = "none"
    words = ("ctpu", "compute tpus", "google_tpu_node", '"pytorch-1.', '"pytorch-nightly')
    summary = "TPU node creation (ctpu up, gcloud compute tpus create --version=pytorch-…): reported"
    examples = (
        Example(
            "ctpu up -name=my-tpu -zone=us-central1-b -tpu-size=v3-8 -tf-version=pytorch-1.13\n",
            todo_line(DO, "launch-tpu-node") + "ctpu up -name=my-tpu -zone=us-central1-b -tpu-size=v3-8 "
            "-tf-version=pytorch-1.13\n",
            manual=("TPU node",),
        ),
        Example(
            "gcloud compute tpus create my-tpu --zone=europe-west4-a --network=default --version=pytorch-1.13 "
            "--accelerator-type=v3-8\n",
            todo_line(DO, "launch-tpu-node") + "gcloud compute tpus create my-tpu --zone=europe-west4-a "
            "--network=default --version=pytorch-1.13 --accelerator-type=v3-8\n",
            manual=("TPU node",),
        ),
        Example(  # a TPU VM: today's way
            "gcloud compute tpus tpu-vm create my-tpu --zone=us-central2-b --accelerator-type=v4-8 "
            "--version=tpu-ubuntu2204-base\n",
            "gcloud compute tpus tpu-vm create my-tpu --zone=us-central2-b --accelerator-type=v4-8 "
            "--version=tpu-ubuntu2204-base\n",
        ),
    )

    def command(self, rec, cmd, posix_sh):
        argv = cmd.argv()
        what = node_creation(cmd.argv_text(rec.text))
        if what is not None:
            rec.decide(self.id, argv[0].start, DO, _MORE.format(what=f"`{what}`"))

    def config(self, rec, what):
        nodes = [(m.start(), _block_end(rec.text, m.end())) for m in _TERRAFORM_NODE.finditer(rec.text)]
        for start, end in nodes:
            if _for_pytorch(rec, rec.text[start:end]):
                rec.decide(self.id, start, _AS_TPU_VM, f"`google_tpu_node` in {what}: {_ONLY_XRT}; {_TERRAFORM_TPU_VM}")
        for m in _NODE_RELEASE.finditer(rec.text):
            if not any(start <= m.start() < end for start, end in nodes):
                rec.decide(
                    self.id,
                    m.start(1),
                    _AS_TPU_VM,
                    f"`{m.group(1)}` in {what}: the PyTorch release of {_ONLY_XRT}; {_TERRAFORM_TPU_VM}",
                )


def _for_pytorch(rec, block: str) -> bool:
    """Whether a ``google_tpu_node`` block makes a TPU node for PyTorch: its release is a
    ``pytorch-…`` one, or one set elsewhere (``var.release``) in a file or project that uses it."""
    release = _RELEASE.search(block)
    if release is not None and release.group(1) is not None:
        return release.group(1).startswith("pytorch-")
    return "pytorch" in block or rec.options.torch_xla_project or rec.options.uses_torch(rec.text)


def _block_end(text: str, start: int) -> int:
    """The offset past the ``}`` that closes the block opened just before ``start``."""
    depth = 1
    for m in re.finditer(r'"(?:\\.|[^"\\\n])*"|[{}]', text[start:]):
        if m.group() in "{}":
            depth += 1 if m.group() == "{" else -1
            if depth == 0:
                return start + m.end()
    return len(text)
