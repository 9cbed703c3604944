"""spawn-nprocs-expression beyond its examples: the count it reports as also read as the world
size, where it looks for those reads, and xmp.spawn handed on as a value."""

import pytest

from python_migrate import XMP as _XMP, migrate, todo_says


def test_an_nprocs_name_used_for_other_sizes_too_is_reported():
    # pytorch/xla v1.8's embedding notebook sizes its shards by the same NUM_DEVICES.
    out = migrate(
        "import torch_xla.distributed.xla_multiprocessing as xmp\n\nNUM_DEVICES = 8\n\n"
        "def train(index):\n    return 1024 // NUM_DEVICES\n\n"
        "xmp.spawn(\n    train,\n    nprocs=NUM_DEVICES,\n)\n"
    )
    (item,) = out.manual
    assert item.rule == "spawn-nprocs-expression" and item.shown().endswith("(line 6: `return 1024 // NUM_DEVICES`)")
    alone = migrate(
        "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
        "xmp.spawn(\n    train,\n    nprocs=flags.num_cores,\n)\n"
    )
    assert not alone.manual and "nprocs=1 if flags.num_cores == 1 else None" in alone.text


def test_the_uses_of_an_nprocs_constant_are_quoted_as_the_file_reads_them():
    # bram-w/my_simclr_vit_profiling: "use xr.world_size() there (line 73)", and line 73 read
    # `xr.world_size() * tpu_cores_per_node` after --write: following it squared the world size.
    long = "x = " + " + ".join(["tpu_cores_per_node"] * 8)
    out = migrate(
        _XMP + "\ntpu_cores_per_node = 8\n\n"
        "def main(index):\n    num_dataset_instances = xm.xrt_world_size() * tpu_cores_per_node\n"
        f"    {long}\n    y = tpu_cores_per_node\n    z = tpu_cores_per_node\n\n"
        "xmp.spawn(main, nprocs=tpu_cores_per_node)\n"
    )
    (item,) = [item for item in out.manual if item.rule == "spawn-nprocs-expression"]
    assert item.shown().endswith(
        "use xr.world_size() at its reads "
        "(line 6: `num_dataset_instances = xm.xrt_world_size() * tpu_cores_per_node`; "
        f"line 7: `{long[:97]}...`; line 8: `y = tpu_cores_per_node`; and line 9)"
    )
    todo = next(line for line in out.text.splitlines() if "[spawn-nprocs-expression]" in line)
    assert "line" not in todo and "use xr.world_size() there" not in todo


@pytest.mark.parametrize(
    "source, place, line",
    [
        # the reviewer's r5: each replica's sampler sized by NUM_CORES, not by the world (half the data under 4)
        (
            "NUM_CORES = 8\n\ndef _mp_fn(rank, world_size):\n    pass\n\n"
            "if __name__ == '__main__':\n    xmp.spawn(_mp_fn, args=(NUM_CORES,), nprocs=NUM_CORES)\n",
            "passed to the spawned function (args=)",
            None,
        ),
        (
            "if __name__ == '__main__':\n    n = int(sys.argv[1])\n    xmp.spawn(_mp_fn, args=(flags, n), nprocs=n)\n",
            "passed to the spawned function (args=)",
            None,
        ),
        # fastai_xla_extensions 0.0.12 multi_core/inference.py: one file of predictions per replica, read back
        (
            "def get_preds(n_items=20, num_cores=8):\n    xmp.spawn(_run_inference, args=(n_items,), nprocs=num_cores)\n"
            "    if True:\n        return reload_pred_results(num_cores)\n",
            "used after this call",
            "(line 6: `return reload_pred_results(num_cores)`)",
        ),
        # args= by a name bound to the tuple that holds the count
        (
            "def main():\n    n = 8\n    a = (flags, n)\n    xmp.spawn(_mp_fn, args=a, nprocs=n)\n",
            "passed to the spawned function (args=)",
            None,
        ),
        # Kaggle's FLAGS dict: each replica's sampler sized by the flag, not by the world (half the data on a v4-8)
        (
            "FLAGS = {}\nFLAGS['num_cores'] = 8\n\ndef _mp_fn(rank, flags):\n"
            "    sampler = DistributedSampler(data, num_replicas=flags['num_cores'], rank=rank)\n\n"
            "xmp.spawn(_mp_fn, args=(FLAGS,), nprocs=FLAGS['num_cores'], start_method='fork')\n",
            "read elsewhere in this file (as ['num_cores'])",
            "(line 7: `sampler = DistributedSampler(data, num_replicas=flags['num_cores'], rank=rank)`)",
        ),
        (
            "def _mp_fn(index, flags):\n    lr = flags.lr * flags.num_cores\n\n"
            "xmp.spawn(_mp_fn, args=(FLAGS,), nprocs=FLAGS.num_cores)\n",
            "read elsewhere in this file (as .num_cores)",
            "(line 4: `lr = flags.lr * flags.num_cores`)",
        ),
    ],
)
def test_an_nprocs_name_passed_to_the_replicas_or_read_after_the_spawn_is_reported(source, place, line):
    out = migrate(_XMP + "\n" + source)
    (item,) = out.manual
    assert (
        item.rule == "spawn-nprocs-expression"
        and f"is also {place}, as if it were the number of processes" in item.detail
    )
    assert item.message == "use xr.world_size() at its reads"
    assert item.shown().endswith(line or "at its reads")
    assert todo_says(out.text, item)
    # and on every later run (--check after --write), where nprocs reads 1 if ... == 1 else None
    (again,) = migrate(out.text).manual
    assert again.rule == item.rule and again.shown().startswith(item.shown().partition(" (line")[0])


@pytest.mark.parametrize(
    "source",
    [
        "def launch(fn, nprocs):\n    xmp.spawn(fn, args=(), nprocs=nprocs)\n",
        # accelerate 0.12's notebook_launcher: read before the spawn, and in the other branch
        "def notebook_launcher(function, args=(), num_processes=None):\n    if tpu:\n"
        "        print(f'Launching a training on {num_processes} TPU cores.')\n"
        "        xmp.spawn(function, args=args, nprocs=num_processes, start_method='fork')\n"
        "    elif num_processes > 1:\n        start_processes(function, args=args, nprocs=num_processes)\n",
        # pytorch/xla 1.13's test_train_mp_imagenet.py: the flag is given, and read nowhere else
        "def _mp_fn(index, flags):\n    global FLAGS\n    FLAGS = flags\n    train(FLAGS.batch_size)\n\n"
        "if __name__ == '__main__':\n    xmp.spawn(_mp_fn, args=(FLAGS,), nprocs=FLAGS.num_cores)\n",
        "FLAGS['num_cores'] = 8\nxmp.spawn(_mp_fn, args=(FLAGS,), nprocs=FLAGS['num_cores'])\n",  # setting it is no read
    ],
)
def test_an_nprocs_count_read_only_before_the_spawn_in_another_branch_or_nowhere_is_not_reported(source):
    assert not migrate(_XMP + "\n" + source).manual


def test_under_the_shim_a_count_read_as_the_world_size_is_reported_and_nprocs_kept():
    # the shim's spawn takes nprocs=FLAGS['num_cores'] and runs every device: 4 processes on a
    # v4-8, while each sampler still splits the data in 8
    source = (
        "FLAGS = {'num_cores': 8}\n\ndef _mp_fn(index, flags):\n"
        "    sampler = DistributedSampler(data, num_replicas=flags['num_cores'])\n\n"
        "xmp.spawn(_mp_fn, args=(FLAGS,), nprocs=FLAGS['num_cores'], start_method='fork')\n"
    )
    out = migrate(_XMP + "\n" + source, target="shim")
    (item,) = out.manual
    assert item.rule == "spawn-nprocs-expression" and item.message == "use xm.xrt_world_size() at its reads"
    assert "nprocs=FLAGS['num_cores'], start_method='fork')" in out.text
    assert not migrate(_XMP + "\nxmp.spawn(_mp_fn, **spawn_kwargs)\n", target="shim").manual  # any nprocs will do


@pytest.mark.parametrize(
    "source, reported",
    [
        # hivemind's TPU example: the spawn started in a thread (its ValueError went to stderr, and
        # the run went on with nothing trained, status 0)
        ("import functools\n\nrun = functools.partial(xmp.spawn, _mp_fn, nprocs=8, start_method='fork')\n", True),
        ("spawn = xmp.spawn\nspawn(_mp_fn, nprocs=8)\n", True),
        ("from torch_xla.distributed.xla_multiprocessing import spawn\n\nspawn(_mp_fn, nprocs=None)\n", False),
        ("xmp.spawn(_mp_fn, nprocs=8)\n", False),  # rewritten
        ("print(xmp.spawn.__doc__)\nhelp(xmp.spawn)\nassert callable(xmp.spawn)\n", False),  # looked at, not called
    ],
)
def test_spawn_handed_on_as_a_value_is_reported_as_its_nprocs_is_not_rewritten(source, reported):
    out = migrate(_XMP + "\n" + source)
    items = [item for item in out.manual if item.rule == "spawn-nprocs-expression"]
    assert len(items) == reported
    if reported:
        assert "is handed on as a value" in items[0].detail
        assert items[0].message == "pass nprocs=None or 1 at its calls"
    assert not [
        item for item in migrate(_XMP + "\n" + source, target="shim").manual if item.rule == "spawn-nprocs-expression"
    ]


def _counts_read(source: str) -> list:
    """The spawn-nprocs-expression items of ``source`` after xmp's import."""
    return [item for item in migrate(_XMP + "\n" + source).manual if item.rule == "spawn-nprocs-expression"]


@pytest.mark.parametrize(
    "source",
    [
        # the replicas' code is in another module, which this file cannot read: no evidence that it
        # reads the flag (DLRM's TPU runner: its main parses the command line again, and never
        # reads the runner's flag; transformers' and accelerate's xla_spawn.py alike)
        "from trainer import _mp_fn\n\nxmp.spawn(_mp_fn, args=(FLAGS,), nprocs=FLAGS.num_cores)\n",
        "import trainer\n\nxmp.spawn(trainer.run, args=(cfg, 3), nprocs=cfg['num_cores'])\n",
        "from trainer import _mp_fn\n\nxmp.spawn(_mp_fn, args=(), nprocs=FLAGS.num_cores)\n",
        # defined here and not reading it (pytorch/xla 1.13's test scripts)
        "def _mp_fn(index, flags):\n    pass\n\nxmp.spawn(_mp_fn, args=(FLAGS,), nprocs=FLAGS.num_cores)\n",
        # The false alarms of issue 32, each in a shape of its own: nothing on the replicas' path
        # reads the count as the number of processes. A launcher that imports a training script and
        # tells it the count on its command line:
        "import importlib\nimport sys\n\ndef launch(opts):\n    module = importlib.import_module(opts.script)\n"
        "    sys.argv = [opts.script, *opts.rest, '--cores', str(opts.cores)]\n"
        "    print(f'spawning {opts.cores} processes')\n    xmp.spawn(module.main, args=(), nprocs=opts.cores)\n",
        # one file, a launcher per device: the GPU one sizes its processes by the same flag
        "import subprocess\n\ndef gpu_launch(opts):\n    per_node = opts.procs // opts.nodes\n"
        "    subprocess.run(['torchrun', f'--nproc_per_node={per_node}', opts.script])\n\n"
        "def tpu_launch(opts):\n    if opts.procs == 1:\n        print('one core')\n"
        "    xmp.spawn(Runner(opts.script), args=(), nprocs=opts.procs)\n",
        # a tuning project: the count only bounds a queue the replicas' producers fill
        "import torch.multiprocessing as mp\n\ndef _mp_fn(index, opts, queue):\n    pass\n\n"
        "def main(opts):\n    queue = mp.Queue(maxsize=opts.procs * opts.batch_size)\n"
        "    xmp.spawn(_mp_fn, args=(opts, queue), nprocs=opts.procs)\n",
        # round 14: a diffusion project sizes its DataLoaders' workers by the same flag
        "from torch.utils.data import DataLoader\n\ndef train(index, flags):\n"
        "    loader = DataLoader(data, batch_size=8, num_workers=flags['num_cores'])\n\n"
        "def main(flags):\n    xmp.spawn(train, args=(flags,), nprocs=flags['num_cores'], start_method='fork')\n",
    ],
)
def test_a_count_no_code_on_the_replicas_path_reads_as_a_number_is_not_reported(source):
    assert not _counts_read(source)


@pytest.mark.parametrize("gathered_after, reported", [(True, True), (False, False)])
def test_a_count_read_by_what_the_launching_process_runs_after_the_spawn_is_reported(gathered_after, reported):
    # round 11: the launcher gathers a file per replica, one for each of the flag's count, after
    # the spawn; before it, a library's check of its own flags is no read of the replicas' count
    gather = "def gather(opts):\n    return [load(f'out_{i}.pkl') for i in range(opts.procs)]\n\n"
    spawn = "    xmp.spawn(_mp_fn, args=(opts,), nprocs=opts.procs)\n"
    body = spawn + "    print(gather(opts))\n" if gathered_after else "    gather(opts)\n" + spawn
    source = "def _mp_fn(index, opts):\n    pass\n\n" + gather + "def main(opts):\n" + body
    assert bool(_counts_read(source)) is reported


def test_a_count_read_on_the_replicas_path_is_reported():
    assert _counts_read(
        "def _mp_fn(index, opts):\n    shard = len(data) // opts.procs\n\n"
        "def tpu_launch(opts):\n    xmp.spawn(_mp_fn, args=(opts,), nprocs=opts.procs)\n"
    )


@pytest.mark.parametrize(
    "spawned, reported",
    [
        # a library's spawn(fn): the count goes to its caller's function, which this file does not show
        # (issue 32: an engine handing its fixed world size on, read by none of its users)
        ("def launch(self, fn):\n    world = 8\n    xmp.spawn(fn, args=(world,), nprocs=world)\n", False),
        (
            "from .runner import run_replica\n\ndef launch():\n    world = 8\n    xmp.spawn(run_replica, args=(world,), nprocs=world)\n",
            False,
        ),
        # a function of this file that sizes its sampler by it
        (
            "def run_replica(index, world):\n    sampler = DistributedSampler(data, num_replicas=world, rank=index)\n\n"
            "def launch():\n    world = 8\n    xmp.spawn(run_replica, args=(world,), nprocs=world)\n",
            True,
        ),
    ],
)
def test_a_count_handed_to_a_function_of_another_module_is_no_read(spawned, reported):
    out = migrate(_XMP + "\n" + spawned)
    assert [m.rule for m in out.manual] == ["spawn-nprocs-expression"] * reported


@pytest.mark.parametrize(
    "call, reported",
    [
        # issue 32, a tuning project: a helper of the project's scales the learning rate by it only
        # under a flag the call leaves off; this file shows no read
        ("from utils.optim import make_optimizer\n\n    opt = make_optimizer(params, cfg, opts.procs)\n", False),
        ("from .optim import make_optimizer\n\n    opt = make_optimizer(params, opts.procs, lr=0.1)\n", False),
        # handed to a keyword that names a count, or to torch's, numpy's or Python's own calls: a read
        ("from utils.data import loader\n\n    dl = loader(ds, world_size=opts.procs)\n", True),
        ("from torch.utils.data import DistributedSampler\n\n    s = DistributedSampler(ds, opts.procs)\n", True),
        ("import numpy as np\n\n    shards = np.array_split(ds, opts.procs)\n", True),
        ("import os\n\n    files = [f'part{i}' for i in range(opts.procs)]\n", True),
        ("from utils.optim import make_optimizer\n\n    opt = make_optimizer(params, lr=0.1 * opts.procs)\n", True),
    ],
)
def test_a_count_handed_to_code_this_file_does_not_show_is_no_read(call, reported):
    head, body = call.split("\n\n")
    source = f"{head}\n\ndef _mp_fn(index, opts):\n{body}\ndef main(opts):\n    xmp.spawn(_mp_fn, args=(opts,), nprocs=opts.procs)\n"
    assert bool(_counts_read(source)) is reported, source
