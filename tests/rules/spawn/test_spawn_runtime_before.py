"""spawn-runtime-before beyond its examples: what starts the XLA runtime in the launching
process, and which launches it is reported before."""

import pytest

from python_migrate import XM as _XM, XMP as _XMP, migrate


def test_a_runtime_started_before_spawn_is_reported_once_per_file():
    # Found in pytorch/xla v1.13's tests: one item above each of three spawns; only the first runs.
    out = migrate(
        "import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
        "if __name__ == '__main__':\n    n = len(xm.get_xla_supported_devices())\n"
        "    xmp.spawn(fn, args=())\n    xmp.spawn(fn, nprocs=4)\n"
    )
    (item,) = [m for m in out.manual if m.rule == "spawn-runtime-before"]
    assert item.line == 6 and "(line 5)" in item.shown() and "at module level" in item.detail
    assert out.text.count("[spawn-runtime-before]") == 1


@pytest.mark.parametrize(
    "spawn", ["xmp.spawn(_mp_fn, nprocs=1)", "torch_xla.launch(_mp_fn, debug_single_process=True)"]
)
def test_a_runtime_started_before_a_spawn_of_one_process_is_not_reported(spawn):
    # torch_xla calls fn in this process then, and checks nothing
    source = (
        _XM + "import torch_xla\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
        f"DEVICE = xm.xla_device()\n{spawn}\n"
    )
    assert not [m for m in migrate(source).manual if m.rule == "spawn-runtime-before"]


@pytest.mark.parametrize(
    "source, launcher",
    [
        # the reviewer's r3: the project's own launcher module spawns
        (
            "from launcher import launch\n\ndef fn(i, n):\n    print(xm.get_ordinal(), n)\n\n"
            "if __name__ == '__main__':\n    n = xm.xrt_world_size()\n    launch(fn, n)\n",
            "`launch(...)`, given fn, a function of this file that uses it,",
        ),
        # dinhanhx/VisualRoBERTa exp/run_pretrain.py: Lightning spawns in trainer.fit
        (
            "from pytorch_lightning import Trainer\n\nif __name__ == '__main__':\n    trainer = Trainer(accelerator='tpu', devices=8)\n"
            "    sampler = DistributedSampler(data, num_replicas=xm.xrt_world_size(), rank=xm.get_ordinal())\n"
            "    trainer.fit(wrapper, DataLoader(data, sampler=sampler))\n",
            "Lightning's `Trainer(accelerator='tpu')`",
        ),
        # the count of TPU cores from a flag: a TPU run spawns as many replicas
        (
            "from pytorch_lightning import Trainer\n\nif __name__ == '__main__':\n    if args.use_tpu:\n"
            "        world = xm.xrt_world_size()\n    trainer = Trainer(tpu_cores=args.tpu_cores)\n    trainer.fit(model)\n",
            "Lightning's `Trainer(tpu_cores=args.tpu_cores)`",
        ),
        (
            "from accelerate import notebook_launcher\n\ndevice = xm.xla_device()\nnotebook_launcher(train, num_processes=8)\n",
            "accelerate's notebook_launcher",
        ),
    ],
)
def test_a_runtime_started_before_a_launch_that_spawns_for_the_file_is_reported(source, launcher):
    out = migrate(_XM + source)
    items = [m for m in out.manual if m.rule == "spawn-runtime-before"]
    assert items and all(f"before {launcher} starts the replicas" in m.detail for m in items)
    assert {m.line for m in items} == {
        k + 1
        for k, line in enumerate((_XM + source).splitlines())
        if "xm.xrt_world_size()" in line or "xm.xla_device()" in line
    }
    assert out.text.count("[spawn-runtime-before]") == 1


def test_a_function_another_spawn_runs_is_not_blamed_on_the_launching_process():
    out = migrate(
        "import torch_xla.core.xla_model as xm\n" + _XMP + "\ndef _train(index):\n    pass\n\n"
        "def _eval(index):\n    device = xm.xla_device()\n\n"
        "if __name__ == '__main__':\n    xmp.spawn(_train)\n    xmp.spawn(_eval)\n"
    )
    assert not out.manual


def test_a_metrics_report_on_import_starts_the_runtime_before_the_spawn():
    # checked on CPU: print(met.metrics_report()) at module level, then 'Runtime is already initialized'
    out = migrate(
        "import torch_xla.debug.metrics as met\n" + _XMP + "\nprint(met.metrics_report())\n\n"
        "if __name__ == '__main__':\n    xmp.spawn(_mp_fn)\n"
    )
    (item,) = out.manual
    assert item.rule == "spawn-runtime-before" and item.shown().endswith("(line 4)")


@pytest.mark.parametrize(
    "line, reported",
    [
        ("WEIGHTS = torch.zeros(2).to('xla')\n", True),
        ("ONES = torch.ones(2, device=\"xla:0\")\n", True),
        ("CPU = torch.zeros(2).to('cpu')\n", False),
        ("NAME = 'xla'\n", False),
    ],
)
def test_a_tensor_put_on_the_xla_device_by_name_on_import_is_reported_before_the_spawn(line, reported):
    # checked on CPU: torch.zeros(2).to('xla') at module level, then 'Runtime is already initialized'
    out = migrate("import torch\n" + _XMP + "\n" + line + "\nif __name__ == '__main__':\n    xmp.spawn(_mp_fn)\n")
    assert [item.rule for item in out.manual] == ["spawn-runtime-before"] * reported


@pytest.mark.parametrize(
    "call",
    [
        "xm.is_master_ordinal()",
        "xm.master_print('ready')",
        "xm.set_rng_state(0)",
        "xm.get_rng_state()",
        "xm.wait_device_ops()",
        "xm.xla_device_hw('xla:0')",
    ],
)
def test_a_call_that_starts_the_runtime_before_the_spawn_is_reported(call):
    # checked on CPU with torch_xla 2.9: each starts the runtime, and the spawn then raises
    # 'Runtime is already initialized' (XRT's read a variable, or an idle server)
    out = migrate(
        "import logging\nimport torch_xla.core.xla_model as xm\n"
        + _XMP
        + f"\nlevel = {call}\n\nif __name__ == '__main__':\n    xmp.spawn(_mp_fn)\n"
    )
    assert [item.rule for item in out.manual] == ["spawn-runtime-before"]


@pytest.mark.parametrize(
    "source, lines",
    [
        # the reviewer's r4: a class body and a default value run on import, in the launching process
        (
            "class Cfg:\n    world = xm.xrt_world_size()\n\ndef log(msg, rank=xm.get_ordinal()):\n    print(rank, msg)\n",
            "5, 7",
        ),
        ("class Trainer:\n    class Defaults:\n        device = xm.xla_device()\n", "6"),
        ("@functools.lru_cache(maxsize=xm.xrt_world_size())\ndef shard(i):\n    pass\n", "4"),
        ("log = lambda msg, rank=xm.get_ordinal(): print(rank, msg)\n", "4"),
        (
            "def main():\n    def log(msg, rank=xm.get_ordinal()):\n        pass\n    class C:\n        w = xm.xrt_world_size()\n"
            "    return log, C\n\nhelpers = main()\n",
            None,
        ),  # when main runs, before the spawn: "in main"
    ],
)
def test_a_runtime_started_on_import_in_a_class_body_or_default_value_is_reported(source, lines):
    out = migrate(
        "import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
        f"{source}\nif __name__ == '__main__':\n    xmp.spawn(_mp_fn)\n"
    )
    (item,) = [m for m in out.manual if m.rule == "spawn-runtime-before"]
    if lines:
        assert "at module level" in item.detail and item.shown().endswith(f"(line {lines})")
    else:
        assert item.message.endswith("(in main)")
    assert out.text.count("[spawn-runtime-before]") == 1


@pytest.mark.parametrize(
    "imports, launch", [("import torch_xla\n", "torch_xla.launch"), ("from torch_xla import launch\n", "launch")]
)
def test_a_runtime_started_before_torch_xla_launch_is_reported_at_the_launch(imports, launch):
    # torch_xla 2.9's launch calls xmp.spawn: 'Runtime is already initialized' (checked on CPU)
    out = migrate(_XM + imports + f"\nDEVICE = xm.xla_device()\n\nif __name__ == '__main__':\n    {launch}(_mp_fn)\n")
    (item,) = [m for m in out.manual if m.rule == "spawn-runtime-before"]
    assert item.line == 7 and item.shown().endswith("(line 4)")
    assert "before torch_xla.launch, which then raises 'Runtime is already initialized'" in item.detail


@pytest.mark.parametrize(
    "source",
    [
        "n = xm.xrt_world_size()\nprint(n)\n",  # no launch: one process
        "from pytorch_lightning import Trainer\n\nTrainer(accelerator='tpu', devices=1).fit(model)\nn = xm.xrt_world_size()\n",
        "from pytorch_lightning import Trainer\n\nn = xm.xrt_world_size()\nTrainer(accelerator='tpu', devices=1).fit(model)\n",
        "from pytorch_lightning import Trainer\n\nTrainer(tpu_cores=8).fit(model)\nif xm.get_ordinal() == 0:\n    save()\n",
        "from pytorch_lightning import Trainer\n\nn = xm.xrt_world_size()\nTrainer(tpu_cores=None, gpus=2).fit(model)\n",
        # a function of the file given to torch_xla's own API, to a builtin, or to a runner of one process
        "def fn(i):\n    return xm.get_ordinal()\n\nn = xm.xrt_world_size()\nxm.do_on_ordinals(fn, (), (0,))\n",
        "def fn(i):\n    return xm.get_ordinal()\n\nn = xm.xrt_world_size()\nranks = list(map(fn, range(n)))\n",
        "from absl import app\n\ndef main(argv):\n    print(xm.get_ordinal())\n\nn = xm.xrt_world_size()\napp.run(main)\n",
        # a main() that asks for its device only is one process's, not a replica's
        "from launcher import launch\n\ndef main():\n    device = xm.xla_device()\n\nn = xm.xrt_world_size()\nlaunch(main)\n",
    ],
)
def test_a_runtime_started_with_no_launch_before_it_is_not_reported(source):
    assert not [m for m in migrate(_XM + source).manual if m.rule == "spawn-runtime-before"]


@pytest.mark.parametrize(
    "source, reported",
    [
        # the launching process calls a helper that starts the runtime, through the file's functions
        (
            "def rank():\n    return xm.get_ordinal()\n\ndef setup_logging():\n    logging.basicConfig(level=rank())\n\n"
            "if __name__ == '__main__':\n    setup_logging()\n    xmp.spawn(_mp_fn)\n",
            "(in rank)",
        ),
        (
            "def device():\n    return xm.xla_device()\n\nclass Runner:\n    def __init__(self):\n        self.device = device()\n\n"
            "def launch():\n    runner = Runner()\n    xmp.spawn(_mp_fn, args=(runner,))\n\nlaunch()\n",
            "(in device)",
        ),
        # round 15: the function that spawns takes the device itself first (checked on 2.9's CPU:
        # the spawn raised 'Runtime is already initialized'), in an if of its own or not
        (
            "def main(args):\n    if args.tpu:\n        device = xm.xla_device()\n    trainer = Trainer(device)\n"
            "    if args.tpu:\n        xmp.spawn(_mp_fn, args=(trainer,))\n\nif __name__ == '__main__':\n    main(ARGS)\n",
            "(in main)",
        ),
        # a class whose __init__ starts it, made at module level: by the class's name, or its base's
        (
            "class Logger:\n    def __init__(self):\n        xm.master_print('ready')\n\nLOG = Logger()\n\n"
            "if __name__ == '__main__':\n    xmp.spawn(_mp_fn)\n",
            "(in Logger)",
        ),
        (
            "class Base:\n    def __init__(self):\n        self.device = xm.xla_device()\n\n"
            "class Net(Base):\n    def __init__(self):\n        super(Net, self).__init__()\n\nNET = Net()\n\n"
            "if __name__ == '__main__':\n    xmp.spawn(_mp_fn)\n",
            "(in Base)",
        ),
        # The false alarms of issue 32, each in a shape of its own: the launching process touches no
        # XLA before the spawn. A model's super().__init__() is no call of another class's __init__
        # that starts it, made only in the replicas:
        (
            "class Net(nn.Module):\n    def __init__(self):\n        super(Net, self).__init__()\n\n"
            "class Predictor:\n    def __init__(self, model):\n        xm.master_print('ready')\n\n"
            "NET = Net()\n\ndef _mp_fn(index):\n    Predictor(NET)\n\n"
            "if __name__ == '__main__':\n    xmp.spawn(_mp_fn)\n",
            None,
        ),
        # A one-core branch beside the spawn's, in the module's main block or in the function that spawns:
        (
            "def main(flags):\n    if flags.cores == 1:\n        device = xm.xla_device()\n    else:\n"
            "        xmp.spawn(_mp_fn, args=(flags,))\n\nmain(FLAGS)\n",
            None,
        ),
        (
            "def single(flags):\n    device = xm.xla_device()\n\nif __name__ == '__main__':\n    if FLAGS.cores == 1:\n"
            "        single(FLAGS)\n    else:\n        xmp.spawn(_mp_fn, args=(FLAGS,))\n",
            None,
        ),
        # helpers the replicas reach through objects the file does not follow, and one called after the spawn
        (
            "def device():\n    return xm.xla_device()\n\ndef report():\n    print(xm.get_ordinal())\n\n"
            "def _mp_fn(index):\n    Trainer(callbacks=[Hook()]).fit()\n\n"
            "if __name__ == '__main__':\n    xmp.spawn(_mp_fn)\n    report()\n",
            None,
        ),
    ],
)
def test_a_function_starting_the_runtime_is_reported_when_the_launching_process_calls_it_first(source, reported):
    out = migrate("import logging\nimport torch_xla.core.xla_model as xm\n" + _XMP + "\n" + source)
    items = [m for m in out.manual if m.rule == "spawn-runtime-before"]
    assert [m.message for m in items] == ([f"keep XLA out of the launching process {reported}"] if reported else [])


@pytest.mark.parametrize(
    "handed, reported",
    [
        # a runner object handed to the replicas, which call its XLA methods there: the launching
        # process only makes it and asks it to spawn (issue 32: a benchmark suite's TPU backend)
        ("args=(self.options, self)", None),
        ("args=[self]", None),
        # the object stays in the launching process: its users may ask it for the rank first
        ("args=(self.options,)", "(in replica_count)"),
    ],
)
def test_a_spawning_object_handed_to_its_replicas_is_not_the_launching_process(handed, reported):
    source = (
        "class TpuRunner:\n    def __init__(self, options):\n        self.options = options\n\n"
        "    def replica_count(self):\n        return xm.xrt_world_size()\n\n"
        f"    def start(self):\n        xmp.spawn(self.options.entry, {handed})\n"
    )
    out = migrate("import torch_xla.core.xla_model as xm\n" + _XMP + "\n" + source)
    items = [m for m in out.manual if m.rule == "spawn-runtime-before"]
    assert [m.message for m in items] == ([f"keep XLA out of the launching process {reported}"] if reported else [])


@pytest.mark.parametrize(
    "in_the_replica, reported",
    [
        ("model.train()", False),  # the module's train, not the trainer's: no caller of the spawning method
        ("self.train()", True),  # the trainer's own: the replicas' code calls the launcher, which asks first
    ],
)
def test_a_method_named_like_the_spawning_one_on_another_object_is_no_call_of_it(in_the_replica, reported):
    out = migrate(
        "import torch_xla.core.xla_model as xm\n" + _XMP + "\nclass Trainer:\n"
        "    def train(self):\n        xmp.spawn(self._mp_fn, nprocs=8)\n\n"
        f"    def _mp_fn(self, index):\n        model = self.data()\n        {in_the_replica}\n\n"
        "    def data(self):\n        return xm.get_ordinal()\n"
    )
    assert ("spawn-runtime-before" in [m.rule for m in out.manual]) is reported


def test_the_constructor_of_the_class_whose_method_spawns_runs_in_the_launching_process():
    # round 14: a trainer class scales its learning rate by the world size in __init__, then a
    # method spawns; renamed to xr.world_size(), that call starts the runtime and the spawn raises
    source = (
        "class Policy:\n    def __init__(self, flags):\n        self.max_lr = flags['lr'] * xm.xrt_world_size()\n\n"
        "    def _mp_fn(self, rank):\n        device = xm.xla_device()\n\n"
        "    def train(self):\n        xmp.spawn(self._mp_fn, nprocs=self.flags['num_cores'], start_method='fork')\n"
    )
    out = migrate("import torch_xla.core.xla_model as xm\n" + _XMP + "\n" + source)
    items = [m.message for m in out.manual if m.rule == "spawn-runtime-before"]
    assert items == ["keep XLA out of the launching process (in Policy)"]
