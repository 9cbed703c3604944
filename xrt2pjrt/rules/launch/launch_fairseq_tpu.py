"""``fairseq-train --tpu --distributed-world-size 8`` (fairseq's TPU training): reported.

fairseq trains on TPUs through its own launcher: with ``--tpu`` and a world size above 1,
``call_main`` runs ``xmp.spawn(distributed_main, nprocs=8)`` (later ``min(world_size, 8)``), and
``distributed_init`` asks ``xm.xrt_world_size()`` and ``xm.get_ordinal()`` (fairseq/distributed_utils.py,
later fairseq/distributed/utils.py: every release that has ``--tpu``, to 0.12.2, and its main
branch). torch_xla 2.6 refuses that nprocs
(ValueError: Unsupported nprocs) and 2.7 removed both calls, so no fairseq release trains on TPUs
with torch_xla 2.9. The code is fairseq's, not the project's: the launch line is reported, for
a person to patch fairseq's launcher (``nprocs=None``, ``xr.world_size()``,
``xr.global_ordinal()``) or keep the run on torch_xla 2.5, the last that accepts both. A fairseq
command without ``--tpu``, or on one core, is left alone.
"""

from __future__ import annotations

import re

from xrt2pjrt.registry import Example
from xrt2pjrt.recorder import todo_line
from xrt2pjrt.text.rule import TextRule

DO = "fairseq's --tpu launch fails on 2.6+"
_WHY = (
    "fairseq's --tpu launch (every release: its distributed utils) runs xmp.spawn(nprocs=min(world size, 8)), "
    "which torch_xla 2.6+ refuses (nprocs may only be 1 or None), then calls xm.xrt_world_size() and "
    "xm.get_ordinal(), which 2.7 removed: patch fairseq's launcher (nprocs=None, xr.world_size(), "
    "xr.global_ordinal()) or keep this run on torch_xla 2.5"
)
_ENTRY = re.compile(r"(?:^|/)fairseq-(?:hydra-)?train$|fairseq[^\s]*/train\.py$")
_TPU = re.compile(r"--tpu$|common\.tpu=(?:true|True|1)$")
_WORLD = re.compile(r"--distributed-world-size(?:=(\S+))?$|distributed_training\.distributed_world_size=(\S+)$")


class FairseqTpu(TextRule):
    id = "launch-fairseq-tpu"
    fix = "none"
    words = ("fairseq",)
    summary = "fairseq-train --tpu on more than one core (spawns nprocs=8, calls xm.xrt_world_size): reported"
    examples = (
        Example(
            "fairseq-train $DATA --arch transformer_vaswani_wmt_en_de_big --tpu --distributed-world-size 8 "
            "--num-batch-buckets 8\n",
            todo_line(DO, "launch-fairseq-tpu") + "fairseq-train $DATA --arch transformer_vaswani_wmt_en_de_big "
            "--tpu --distributed-world-size 8 --num-batch-buckets 8\n",
            manual=("nprocs=min(world size, 8)",),
        ),
        Example(
            "fairseq-hydra-train task.data=$DATA common.tpu=true distributed_training.distributed_world_size=$CORES "
            "--config-name base\n",
            todo_line(DO, "launch-fairseq-tpu") + "fairseq-hydra-train task.data=$DATA common.tpu=true "
            "distributed_training.distributed_world_size=$CORES --config-name base\n",
            manual=("xm.xrt_world_size()",),
        ),
        Example.unchanged("fairseq-train $DATA --arch transformer --tpu --distributed-world-size 1\n"),
        Example.unchanged("fairseq-train $DATA --arch transformer --distributed-world-size 8\n"),  # GPUs
    )

    def command(self, rec, cmd, posix_sh):
        argv = cmd.argv()
        words = cmd.argv_text(rec.text)
        entry = next((k for k, word in enumerate(words) if _ENTRY.search(word)), None)
        if entry is None or not any(_TPU.match(word) for word in words[entry + 1 :]):
            return
        if _world_size(words[entry + 1 :]) not in (None, "1"):
            rec.decide(self.id, argv[entry].start, DO, _WHY)


def _world_size(words: list[str]) -> str | None:
    """The world size the fairseq command sets (a number or an expansion), None where unset:
    fairseq then takes the GPUs' count, none on a TPU VM, and runs one process."""
    for k, word in enumerate(words):
        found = _WORLD.match(word)
        if found:
            return found.group(1) or found.group(2) or (words[k + 1] if k + 1 < len(words) else None)
    return None
