"""``python xla_spawn.py --num_cores 8 train.py`` (transformers' launcher): reported.

transformers' examples launched a training script on a TPU with xla_spawn.py, which imports
the script and calls ``xmp.spawn(mod._mp_fn, args=(), nprocs=args.num_cores)``: the README's
``--num_cores 8`` becomes ``nprocs=8``, which torch_xla 2.6+ refuses (ValueError: Unsupported
nprocs (8)) and PJRT never needed (it spawns one process per chip by itself; 1 is the
default of --num_cores, and runs on one device only). The script is another project's, so the
line is reported: launch the training script itself, whose ``_mp_fn`` runs under
``xmp.spawn(_mp_fn)`` or ``torch_xla.launch(_mp_fn)`` (or a copy of xla_spawn.py passing
nprocs=None, which spawn-nprocs-expression then migrates). A project whose own copy of
xla_spawn.py is in the run gets no item: the run migrates that copy's spawn, and its launch
lines then spawn on every device.
"""

from __future__ import annotations

import re

from xrt2pjrt.registry import Example
from xrt2pjrt.recorder import todo_line
from xrt2pjrt.text.rule import TextRule

DO = "spawn with nprocs=None, not --num_cores"
_NUM_CORES = re.compile(r"--num_cores(?:=(\S+))?$")


class XlaSpawn(TextRule):
    id = "launch-xla-spawn"
    fix = "none"
    words = ("xla_spawn",)
    summary = "xla_spawn.py --num_cores N (transformers' launcher; nprocs=N is refused from 2.6): reported"
    examples = (
        Example(
            "python examples/pytorch/xla_spawn.py --num_cores 8 examples/pytorch/text-classification/run_glue.py "
            "--model_name_or_path bert-base-cased\n",
            todo_line(DO, "launch-xla-spawn") + "python examples/pytorch/xla_spawn.py --num_cores 8 "
            "examples/pytorch/text-classification/run_glue.py --model_name_or_path bert-base-cased\n",
            manual=("nprocs=8",),
        ),
        Example("python xla_spawn.py --num_cores 1 run_glue.py\n", "python xla_spawn.py --num_cores 1 run_glue.py\n"),
    )

    def command(self, rec, cmd, posix_sh):
        if rec.options.own_xla_spawn:
            return  # the project's copy, whose spawn the run migrates (code_trees.py)
        argv = cmd.argv()
        words = cmd.argv_text(rec.text)
        spawn = next((k for k, word in enumerate(words) if word.endswith("xla_spawn.py")), None)
        if spawn is None:
            return
        for k in range(spawn + 1, len(words)):
            found = _NUM_CORES.match(words[k])
            if found:
                cores = found.group(1) or (words[k + 1] if k + 1 < len(words) else "")
                if cores != "1":
                    rec.decide(
                        self.id,
                        argv[spawn].start,
                        DO,
                        f"xla_spawn.py passes --num_cores {cores} to xmp.spawn as nprocs={cores}, which torch_xla "
                        "2.6+ refuses (nprocs may only be 1 or None) and PJRT never needed: run the script's "
                        "_mp_fn under xmp.spawn(_mp_fn) or torch_xla.launch(_mp_fn), which use every chip",
                    )
                return
            if not words[k].startswith("-"):
                return  # the training script: its own flags follow
