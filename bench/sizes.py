"""How the cost of one file grows with its size: a generated file dense with XRT-era code.

    python bench/sizes.py [--repeat N] [--sizes 100k,1M,5M]

Each file is made of the XRT-era statements a training script holds (world size, ordinal,
device, mark_step, master-ordinal tests, small functions), one after another, so that
nearly every statement has a finding: the worst case for the rewriter, which folds away
only statements without one; and a shell script of XRT variables and xla_dist lines. Measured: ``xrt2pjrt migrate FILE`` (the preview, its diff
included, to /dev/null) with the size limit raised, in a process of its own; wall and CPU
time, peak memory, and their ratios to the smallest size. Cost should grow linearly: a
ratio close to the ratio of the sizes.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from _measure import machine, measure  # noqa: E402

from xrt2pjrt.files import parse_size  # noqa: E402

HEADER = "import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
STATEMENTS = (
    "n{i} = xm.xrt_world_size()\n",
    "r{i} = xm.get_ordinal()\n",
    "d{i} = xm.xla_device()\n",
    "xm.mark_step()\n",
    "if xm.is_master_ordinal():\n    print(xm.get_local_ordinal(), {i})\n",
    "def f{i}(index):\n    return xm.xrt_world_size() * index\n",
)


SHELL_HEADER = "#!/bin/bash\nset -e\n"
COMMANDS = (
    'export XRT_TPU_CONFIG="localservice;0;localhost:{i}"\n',
    "echo step {i}\n",
    "python3 -m torch_xla.distributed.xla_dist --tpu=pod-{i} --env XLA_USE_BF16=1 -- python3 train.py --lr {i}\n",
    "XRT_SHARD_ORDINAL={i} python3 eval.py\n",
)
KINDS = {"python": (".py", HEADER, STATEMENTS), "shell": (".sh", SHELL_HEADER, COMMANDS)}


def dense(size: int, kind: str = "python") -> str:
    _, header, pieces = KINDS[kind]
    rng = random.Random(0)
    out, n, i = [header], len(header), 0
    while n < size:
        statement = rng.choice(pieces).format(i=i)
        out.append(statement)
        n, i = n + len(statement), i + 1
    return "".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="runs per size; the fastest counts")
    parser.add_argument("--sizes", default="100k,1M", help="comma-separated sizes (bytes, k, M)")
    args = parser.parse_args()
    sizes = [parse_size(s) for s in args.sizes.split(",")]

    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory() as tmp:
        for kind, (suffix, _, _) in KINDS.items():
            print(f"\n{kind}\n{'size':>9} {'wall':>8} {'cpu':>8} {'peak':>8} {'cpu/MB':>8} "
                  f"{'size x':>7} {'cpu x':>6} {'peak x':>7}")
            base = None
            for size in sizes:
                path = Path(tmp, f"dense_{size}{suffix}")
                path.write_text(dense(size, kind))
                m = measure([sys.executable, "-m", "xrt2pjrt", "migrate", "--max-file-size", str(2 * size),
                             str(path)], args.repeat)
                base = base or (size, m)
                print(f"{size / 1e3:>7.0f}kB {m.wall:>7.2f}s {m.cpu:>7.2f}s {m.peak_mb:>6.0f}MB "
                      f"{m.cpu / (size / 1e6):>7.1f}s {size / base[0]:>6.1f}x {m.cpu / base[1].cpu:>5.1f}x "
                      f"{m.peak_mb / base[1].peak_mb:>6.1f}x")


if __name__ == "__main__":
    main()
