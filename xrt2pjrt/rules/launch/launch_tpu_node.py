"""TPU node creation (``ctpu up -tf-version=pytorch-…``, ``gcloud compute tpus create --version=pytorch-…``,
execution groups): reported.

A TPU node was a Compute Engine VM and a TPU reached over the network at port 8470, which
only XRT could drive (XRT_TPU_CONFIG="tpu_worker;0;IP:8470"); ``ctpu up`` and ``gcloud compute
tpus create`` (without ``tpu-vm``) made one, with ``-tf-version`` / ``--version`` choosing the
TPU's software (``pytorch-1.13``). PJRT runs the program on the TPU's own host, a TPU VM:
``gcloud compute tpus tpu-vm create NAME --version=tpu-ubuntu2204-base`` (every TPU
generation: the older base images hold a Python 3.8 torch_xla 2.9 does not install on), then
``pip install torch_xla[tpu]`` there. Which accelerator, zone and image to take is a person's
choice, so the line is reported, not rewritten.
"""

from __future__ import annotations

from xrt2pjrt.registry import Example
from xrt2pjrt.recorder import todo_line
from xrt2pjrt.text.rule import TextRule

DO = "create a TPU VM instead: tpu-vm create"
_MORE = (
    "{what} creates a TPU node, a VM and a TPU reached over the network that only XRT could drive; PJRT "
    "runs on TPU VMs: gcloud compute tpus tpu-vm create NAME --zone=ZONE --accelerator-type=TYPE "
    "--version=tpu-ubuntu2204-base, then pip install 'torch_xla[tpu]' on it"
)


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
    words = ("ctpu", "compute tpus")
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
        what = node_creation([w.value or w.source(rec.text) for w in argv])
        if what is not None:
            rec.decide(self.id, argv[0].start, DO, _MORE.format(what=f"`{what}`"))
