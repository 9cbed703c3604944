"""How the cost of one file grows with its size: a generated file dense with XRT-era code.

    python bench/sizes.py [--repeat N] [--sizes 100k,1M,5M] [--kinds python,shell,notebook,rst]

Each file is made of the XRT-era statements a training script holds (world size, ordinal,
device, mark_step, master-ordinal tests, small functions), one after another, so that
nearly every statement has a finding: the worst case for the rewriter, which folds away
only statements without one; a shell script of XRT variables and xla_dist lines; a
notebook of two-line XRT cells, each with a 20 kB image output (a Colab notebook's plots);
and reStructuredText prose with a ``::`` literal block in each paragraph, as Sphinx
documents show examples, an xla_dist line in one paragraph of ten. Measured: ``xrt2pjrt migrate FILE`` (the preview, its diff
included, to /dev/null) with the size limit raised, in a process of its own; wall and CPU
time, peak memory, and their ratios to the smallest size. Cost should grow linearly: a
ratio close to the ratio of the sizes.
"""

from __future__ import annotations

import argparse
import base64
import json
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
DOCUMENT = ("Step {i} runs this::\n\n    python3 train.py --step {i}\n\nThen the next one.\n\n",) * 9 + (
    ".. code-block:: bash\n\n    python3 -m torch_xla.distributed.xla_dist --tpu=pod -- python3 t.py\n\n",
)


def dense(size: int, header: str, pieces: tuple[str, ...]) -> str:
    rng = random.Random(0)
    out, n, i = [header], len(header), 0
    while n < size:
        statement = rng.choice(pieces).format(i=i)
        out.append(statement)
        n, i = n + len(statement), i + 1
    return "".join(out)


def notebook(size: int) -> str:
    rng = random.Random(0)
    cells, n, i = [{"cell_type": "code", "metadata": {}, "outputs": [], "source": [HEADER]}], 0, 0
    while n < size:
        image = base64.b64encode(rng.randbytes(15_000)).decode()
        source = [f"n{i} = xm.xrt_world_size()\n", f"print(n{i})\n"]
        cells.append(
            {
                "cell_type": "code",
                "metadata": {},
                "source": source,
                "outputs": [{"data": {"image/png": image}, "metadata": {}, "output_type": "display_data"}],
            }
        )
        n, i = n + len(image), i + 1
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)


KINDS = {
    "python": (".py", lambda size: dense(size, HEADER, STATEMENTS)),
    "shell": (".sh", lambda size: dense(size, SHELL_HEADER, COMMANDS)),
    "notebook": (".ipynb", notebook),
    "rst": (".rst", lambda size: dense(size, "", DOCUMENT)),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="runs per size; the fastest counts")
    parser.add_argument("--sizes", default="100k,1M", help="comma-separated sizes (bytes, k, M)")
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated file kinds")
    args = parser.parse_args()
    sizes = [parse_size(s) for s in args.sizes.split(",")]

    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.kinds.split(","):
            suffix, build = KINDS[kind]
            print(
                f"\n{kind}\n{'size':>9} {'wall':>8} {'cpu':>8} {'peak':>8} {'cpu/MB':>8} "
                f"{'size x':>7} {'cpu x':>6} {'peak x':>7}"
            )
            base = None
            for size in sizes:
                path = Path(tmp, f"dense_{size}{suffix}")
                path.write_text(build(size))
                m = measure(
                    [sys.executable, "-m", "xrt2pjrt", "migrate", "--max-file-size", str(2 * size), str(path)],
                    args.repeat,
                )
                base = base or (size, m)
                print(
                    f"{size / 1e3:>7.0f}kB {m.wall:>7.2f}s {m.cpu:>7.2f}s {m.peak_mb:>6.0f}MB "
                    f"{m.cpu / (size / 1e6):>7.1f}s {size / base[0]:>6.1f}x {m.cpu / base[1].cpu:>5.1f}x "
                    f"{m.peak_mb / base[1].peak_mb:>6.1f}x"
                )


if __name__ == "__main__":
    main()
