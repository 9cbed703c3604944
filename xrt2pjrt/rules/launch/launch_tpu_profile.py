"""``capture_tpu_profile --tpu=NAME`` (a TPU node's profile, by its name): reported.

XRT-era PyTorch profiled a TPU node the way TensorFlow did: cloud-tpu-profiler's
``capture_tpu_profile --tpu=$TPU_NAME --logdir=...`` asked the TPU service for the node by its
name and captured from the profiler that node's XRT server ran. Under PJRT there is no node and
no server: the program runs on the TPU VM and serves its own profile once it calls
``torch_xla.debug.profiler.start_server(9012)``, and ``xp.trace('localhost:9012', LOGDIR)`` (or
TensorBoard's profile tab pointed at that port) captures it. Which port and when to capture is a
person's choice, so the line is reported. A file that does not use PyTorch (TensorFlow's TPU
guides use the same command) is left alone, and so is ``--service_addr``, an address given.
"""

from __future__ import annotations

import re

from xrt2pjrt.registry import Example
from xrt2pjrt.recorder import todo_line
from xrt2pjrt.text.rule import TextRule

DO = "profile with xp.start_server(9012)"
_WHY = (
    "capture_tpu_profile --tpu asks the TPU service for a TPU node by its name, and PJRT has no node: call "
    "torch_xla.debug.profiler.start_server(9012) in the program on the TPU VM, then capture with "
    "xp.trace('localhost:9012', LOGDIR) or TensorBoard's profile tab"
)
_BY_NAME = re.compile(r"--tpu(?:_name)?(?:=|$)")
# A training run on a TPU node, then its profile captured from another shell.
_NODE_RUN = 'export XRT_TPU_CONFIG="tpu_worker;0;$TPU_IP:8470"\npython train_mnist.py --logdir=$MODEL_DIR &\n'


class TpuProfile(TextRule):
    id = "launch-tpu-profile"
    fix = "none"
    words = ("capture_tpu_profile",)
    summary = "capture_tpu_profile --tpu=NAME (a TPU node's profiler) in a PyTorch file: reported"
    examples = (
        Example(
            _NODE_RUN + "capture_tpu_profile --tpu=$TPU_NAME --logdir=$MODEL_DIR\n",
            _NODE_RUN
            + todo_line(DO, "launch-tpu-profile")
            + "capture_tpu_profile --tpu=$TPU_NAME --logdir=$MODEL_DIR\n",
            manual=("PJRT has no node",),
        ),
        Example.unchanged("capture_tpu_profile --tpu=$TPU_NAME --logdir=$MODEL_DIR  # a TensorFlow model\n"),
        Example.unchanged("python train.py &\ncapture_tpu_profile --service_addr=localhost:9012 --logdir=/tmp/prof\n"),
    )

    def command(self, rec, cmd, posix_sh):
        argv = cmd.argv()
        words = cmd.argv_text(rec.text)
        if words[:1] == ["capture_tpu_profile"] and any(_BY_NAME.match(w) for w in words[1:]):
            if rec.options.uses_torch(rec.text):
                rec.decide(self.id, argv[0].start, DO, _WHY)
