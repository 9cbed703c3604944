"""XRT_TPU_CONFIG outside Python → PJRT_DEVICE=TPU, in the form the file set it in.

XRT_TPU_CONFIG (``localservice;0;localhost:51011``) told torch_xla 1.x where XRT's TPU
server listened; torch_xla 2.1+ ignores it. Unset, PJRT_DEVICE is guessed: TPU where libtpu
finds chips, else a silent fall back to CPU; set, a machine without a TPU fails at once.
Each setting becomes PJRT_DEVICE=TPU in the same form: ``export``, a command's prefix,
``unset``, ``docker -e``, a Dockerfile ``ENV``, a YAML ``env:`` entry, a notebook's ``%env``.
A value naming a remote TPU node (``tpu_worker;0;10.0.0.2:8470``, Colab's old runtime, GKE's
TPU nodes) is reported as well: only XRT could drive those, and PJRT needs the program on
the TPU VM itself. So is a GKE TPU-node annotation or resource (cloud-tpus.google.com) in
YAML and jsonnet, and a Dockerfile exec form that names the variable.
"""

from __future__ import annotations

from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.text import xla_dist
from xrt2pjrt.recorder import todo_line
from xrt2pjrt.text.environment import DeviceRule
from xrt2pjrt.xrt_variables import GKE_TPU_NODE, REMOTE_TPU, TPU_NODE


_TO_TPU_VMS = "move it to a TPU VM node pool"


class XrtTpuConfig(DeviceRule):
    id = "env-shell-xrt-tpu-config"
    summary = "XRT_TPU_CONFIG outside Python → PJRT_DEVICE=TPU in the same form; remote TPU nodes reported"
    variables = "XRT_TPU_CONFIG"
    replacement = ("PJRT_DEVICE", "TPU")
    examples = (
        Example(
            dedent("""
                export XRT_TPU_CONFIG="localservice;0;localhost:51011"
                python3 train.py
            """),
            dedent("""
                export PJRT_DEVICE=TPU
                python3 train.py
            """),
        ),
        Example(
            "XRT_TPU_CONFIG='tpu_worker;0;10.0.0.2:8470' python3 train.py\n",
            todo_line(REMOTE_TPU.do, "env-shell-xrt-tpu-config") + "PJRT_DEVICE=TPU python3 train.py\n",
            manual=("remote TPU node",),
        ),
        Example(
            'export XRT_TPU_CONFIG="tpu_worker;0;${KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS#grpc://}"\n',
            todo_line(REMOTE_TPU.do, "env-shell-xrt-tpu-config") + "export PJRT_DEVICE=TPU\n",
            manual=("remote TPU node",),
        ),
        Example(
            "docker run -e XRT_TPU_CONFIG=localservice\\;0\\;localhost:51011 img python3 train.py\n",
            "docker run -e PJRT_DEVICE=TPU img python3 train.py\n",
        ),
        Example("unset XRT_TPU_CONFIG\n", "unset PJRT_DEVICE\n"),
    )

    def exec_form(self, rec, offset, keyword, body):
        if not xla_dist.MENTION.search(body):  # (one that runs xla_dist is launch-xla-dist's)
            rec.decide(
                self.id,
                offset,
                "use the shell form, then rerun",
                f"{keyword} in exec form (a JSON array) mentions XRT or xla_dist: rewrite it by hand, or use the "
                "shell form and run xrt2pjrt again",
            )

    def yaml_key(self, rec, name, offset):
        if TPU_NODE.match(name):
            rec.decide(self.id, offset, _TO_TPU_VMS, f"`{name}`: {GKE_TPU_NODE}")

    def config(self, rec, what):
        for m in TPU_NODE.finditer(rec.text):
            rec.decide(self.id, m.start(), _TO_TPU_VMS, f"`{m.group()}` in {what}: {GKE_TPU_NODE}")
