"""GPU_NUM_DEVICES set in a shell command, for torch_xla 2.9: reported, kept.

The shell side of env-gpu-num-devices (its docstring says why): ``GPU_NUM_DEVICES=4
python train.py`` or ``export GPU_NUM_DEVICES=4`` trained on GPUs under XRT and on
torch_xla 2.1–2.8, and trains on CPU under 2.9, silently. Only files that use PyTorch are
reported: the name is not torch_xla's alone. Nor is a setting for a command that torch's own
launcher runs (``torchrun``, ``python -m torch.distributed.launch``): XRT's GPU runs were
spawned by torch_xla, and torch_xla's recipes under torchrun set PJRT_DEVICE=CUDA (v2.5
docs/pjrt.md, docs/kubernetes.md), which env-shell-pjrt-device-gpu reports; the one such
XRT-era command counted (issue 32's twelfth round) ran native torch DDP beside its torch_xla runs.
"""

from __future__ import annotations

from xrt2pjrt.meanings.settings import ADVICE, SHORT
from xrt2pjrt.registry import Example
from xrt2pjrt.recorder import todo_line
from xrt2pjrt.text.rule import TextRule

NAME = "GPU_NUM_DEVICES"
_TORCH_LAUNCHERS = ("torch.distributed.launch", "torch.distributed.run")


class ShellGpuNumDevices(TextRule):
    id = "env-shell-gpu-num-devices"
    summary = "GPU_NUM_DEVICES set in a shell command (torch_xla 2.9 ignores it and runs on CPU): reported"
    fix = "none"
    words = (NAME,)
    min_version = (2, 9)
    examples = (
        Example(
            "GPU_NUM_DEVICES=4 python3 train_torch.py\n",
            todo_line(SHORT[NAME], "env-shell-gpu-num-devices") + "GPU_NUM_DEVICES=4 python3 train_torch.py\n",
            manual=("runs on CPU",),
        ),
        Example.unchanged("GPU_NUM_DEVICES=2 python -m torch.distributed.launch --nproc_per_node=2 train.py --ddp\n"),
    )

    def command(self, rec, cmd, posix_sh):
        if not rec.options.uses_torch(rec.text):  # another framework's variable of the same name
            return
        argv = [w.value or w.source(rec.text) for w in cmd.argv() if w.assignment() is None]
        if argv[:1] == ["torchrun"] or (len(argv) > 2 and argv[1] == "-m" and argv[2] in _TORCH_LAUNCHERS):
            return  # torch's launcher: see the docstring
        for word in cmd.words:
            assignment = word.assignment()
            if assignment is not None and assignment[0] == NAME:
                rec.decide(self.id, word.start, SHORT[NAME], detail=ADVICE[NAME])
