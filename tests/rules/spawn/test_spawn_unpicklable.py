"""spawn-unpicklable beyond its examples: what torch_xla 2.x's spawn (and torch_xla.launch,
and the shim's spawn unless it forks) cannot pickle, found where spawn is called."""

import re

import pytest

from python_migrate import XMP as _XMP, migrate


@pytest.mark.parametrize(
    "source, refused",
    [
        # KamilPiechowiak/iatransfer: a nested _mp_fn, spawned with fork (XRT forked it unpickled)
        (
            "def train_all(flags):\n    def _mp_fn(rank):\n        print(rank, flags)\n"
            "    xmp.spawn(_mp_fn, nprocs=flags['num_cores'], start_method='fork')\n",
            "fn (`_mp_fn`, a function defined in train_all)",
        ),
        ("xmp.spawn(_mp_fn, args=(lambda r: r * 10,), nprocs=8, start_method='fork')\n", "args[0] (a lambda)"),
        (
            "import functools\n\ndef main(cfg):\n    def _mp_fn(rank, cfg):\n        pass\n"
            "    xmp.spawn(fn=functools.partial(_mp_fn, cfg=cfg), start_method='fork')\n",
            "fn (a functools.partial of `_mp_fn`, a function defined in main)",
        ),
        (
            "from functools import partial\n\ndef main():\n    transform = lambda r: r\n"
            "    xmp.spawn(partial(_mp_fn, 1), args=(cfg, transform), start_method='fork')\n",
            "args[1] (`transform`, a lambda)",
        ),
        (
            "def main():\n    class Cfg:\n        lr = 0.1\n    xmp.spawn(_mp_fn, args=(Cfg,), start_method='fork')\n",
            "args[0] (`Cfg`, a class defined in main)",
        ),
        (
            "_mp_fn = lambda index: print(index)\n\nif __name__ == '__main__':\n    xmp.spawn(_mp_fn, start_method='fork')\n",
            "fn (`_mp_fn`, a lambda)",
        ),
        # tpu-util 0.1.3: 'Lock objects should only be shared between processes through inheritance'
        (
            "WRAPPED_MODEL = xmp.MpModelWrapper(model)\n\ndef main():\n"
            "    xmp.spawn(_mp_fn, args=(WRAPPED_MODEL, opt), start_method='fork')\n",
            "args[0] (`WRAPPED_MODEL`, an xmp.MpModelWrapper, which holds a lock)",
        ),
        (
            "import threading\n\ndef main():\n    xmp.spawn(_mp_fn, args=(threading.Lock(),), start_method='fork')\n",
            "args[0] (a threading.Lock, which holds a lock)",
        ),
        # args given by a name bound to a tuple; pickle finds an instance's class by its name
        (
            "def main(cfg):\n    a = (cfg, lambda: 1)\n    xmp.spawn(_mp_fn, args=a, start_method='fork')\n",
            "args[1] (a lambda)",
        ),
        (
            "def main():\n    class Cfg:\n        lr = 0.1\n    cfg = Cfg()\n    xmp.spawn(_mp_fn, args=[cfg], start_method='fork')\n",
            "args[0] (`cfg`, an instance of `Cfg`, a class defined in main)",
        ),
        # Lightning 1.5-1.8's launchers: a result queue of a context ('SimpleQueue objects should
        # only be shared between processes through inheritance', checked on CPU)
        (
            "import multiprocessing as mp\n\ndef launch(self, method):\n    context = mp.get_context(method)\n"
            "    queue = context.SimpleQueue()\n    xmp.spawn(self._wrap, args=(queue,), start_method='fork')\n",
            "args[0] (`queue`, a multiprocessing context's SimpleQueue, which holds a lock)",
        ),
        (
            "import torch.multiprocessing as mp\n\ndef main():\n    xmp.spawn(_mp_fn, args=(mp.Value('d', 0.0),), start_method='fork')\n",
            "args[0] (a torch.multiprocessing.Value, which holds a lock)",
        ),
        # hivemind's TPUManager: a bound method takes its instance, and its locks, along
        (
            "import multiprocessing as mp\n\nclass Manager:\n    def __init__(self):\n        self.lock = mp.Lock()\n\n"
            "    def runner(self, index):\n        pass\n\n    def run(self):\n        xmp.spawn(self.runner, start_method='fork')\n",
            "fn (`self.runner`, a method: pickle takes its instance along, whose `self.lock` is a multiprocessing.Lock, "
            "which holds a lock)",
        ),
    ],
)
def test_what_spawn_cannot_pickle_is_reported_at_the_spawn(source, refused):
    # torch_xla 2.x's spawn pickles fn and args for each process even under fork ("Can't pickle local object").
    out = migrate(_XMP + source)
    (item,) = [m for m in out.manual if m.rule == "spawn-unpicklable"]
    assert item.detail.startswith(f"pickle refuses {refused}:") and "even with start_method='fork'" in item.detail
    assert item.line == _XMP.count("\n") + source[: source.index("xmp.spawn")].count("\n") + 1
    (todo,) = [line for line in out.text.splitlines() if "[spawn-unpicklable]" in line]
    # the TODO line says, whole, which arguments to move: the long text says what pickle refuses
    places = " and ".join(re.findall(r"(?:^| and )(fn|args\[\d\]) \(", refused))
    assert todo.strip() == f"# TODO(xrt2pjrt): move {places} to module level [spawn-unpicklable]"
    assert item.message == f"move {places} to module level"
    # The shim's spawn hands fn and args to forked replicas unpickled, as XRT's did.
    assert not [m for m in migrate(_XMP + source, target="shim").manual if m.rule == "spawn-unpicklable"]


@pytest.mark.parametrize(
    "imports, target",
    [
        (_XMP, "shim"),
        ("import xrt2pjrt_shim.xla_multiprocessing as xmp\n", "native"),
        ("import xrt2pjrt.shim.xla_multiprocessing as xmp\n", "native"),
    ],
)
@pytest.mark.parametrize("start", ["", ", start_method='spawn'", ", start_method=start_method"])
def test_the_shim_reports_what_it_must_pickle_unless_spawn_forks(imports, target, start):
    out = migrate(
        imports + f"def main(start_method):\n    def _mp_fn(rank):\n        pass\n    xmp.spawn(_mp_fn{start})\n",
        target=target,
    )
    (item,) = [m for m in out.manual if m.rule == "spawn-unpicklable"]
    assert "the shim's xmp.spawn pickles fn and args for each process unless start_method='fork'" in item.detail
    assert "refuses fn (`_mp_fn`, a function defined in main)" in item.detail


@pytest.mark.parametrize(
    "source",
    [
        "def _mp_fn(rank):\n    pass\n\nxmp.spawn(_mp_fn, args=(flags,), start_method='fork')\n",
        "from train import _mp_fn\n\nxmp.spawn(_mp_fn, start_method='fork')\n",
        "def launch(fn, args):\n    xmp.spawn(fn, args=(fn, args), start_method='fork')\n",  # a caller's: unknown here
        "class Xla:\n    @staticmethod\n    def _worker(i, fn):\n        fn(i)\n\n"
        "    def spawn(self, fn):\n        xmp.spawn(Xla._worker, args=(fn,))\n",
        "def _mp_fn(rank):\n    pass\n\ndef main():\n    fn = _mp_fn\n    xmp.spawn(fn, start_method='fork')\n",
        "def main():\n    def _mp_fn(rank):\n        pass\n    xmp.spawn(_mp_fn, nprocs=1)\n",  # called in this process
        "def main(flags):\n    a = (flags,)\n    xmp.spawn(_mp_fn, args=a)\n",
        "def main(flags):\n    a = (1,)\n    if flags.debug:\n        a = (lambda: 1,)\n    xmp.spawn(_mp_fn, args=a)\n",
        "class Cfg:\n    pass\n\ndef main():\n    xmp.spawn(_mp_fn, args=(Cfg(),))\n",  # pickled by its class's name
        "def main():\n    class Cfg:\n        def __reduce__(self):\n            return (dict, ())\n"
        "    xmp.spawn(_mp_fn, args=(Cfg(),))\n",
        "import torch_xla\n\ndef main():\n    torch_xla.launch(_mp_fn, args=(lambda: 1,), debug_single_process=True)\n",
        "import torch_xla\n\ndef main():\n    torch_xla.launch(_mp_fn, (flags,), 'fork')\n",
    ],
)
def test_what_spawn_can_pickle_is_not_reported(source):
    assert not [m for m in migrate(_XMP + source).manual if m.rule == "spawn-unpicklable"]


@pytest.mark.parametrize("target", ["native", "shim"])
@pytest.mark.parametrize(
    "imports, launch", [("import torch_xla\n", "torch_xla.launch"), ("from torch_xla import launch\n", "launch")]
)
def test_torch_xla_launch_pickles_as_xmp_spawn_under_either_target(imports, launch, target):
    # torch_xla 2.9's launch calls xmp.spawn itself (the shim does not replace it): checked on CPU, a
    # local class's instance in args is "Can't pickle local object 'main.<locals>.Cfg'" under fork
    out = migrate(
        imports + "\ndef main():\n    class Cfg:\n        lr = 0.1\n    def _mp_fn(rank, cfg):\n        pass\n"
        f"    {launch}(_mp_fn, args=(Cfg(),), start_method='fork')\n",
        target=target,
    )
    (item,) = [m for m in out.manual if m.rule == "spawn-unpicklable"]
    assert item.line == 8 and "torch_xla.launch pickles fn and args for each process" in item.detail
    assert (
        "refuses fn (`_mp_fn`, a function defined in main) and args[0] (an instance of `Cfg`, a class defined in main)"
    ) in item.detail


def test_an_attribute_of_an_instance_that_holds_a_lock_is_not_called_a_method():
    out = migrate(
        _XMP + "import multiprocessing as mp\n\nclass Manager:\n    def __init__(self):\n"
        "        self.lock = mp.Lock()\n\n    def runner(self, index, cfg):\n        pass\n\n"
        "    def run(self):\n        xmp.spawn(_mp_fn, args=(self.config, self.lr), start_method='fork')\n"
    )
    assert not [m for m in out.manual if m.rule == "spawn-unpicklable"]


def test_a_method_of_a_class_that_says_how_it_pickles_is_not_reported():
    out = migrate(
        _XMP + "import multiprocessing as mp\n\nclass Manager:\n    def __init__(self):\n"
        "        self.lock = mp.Lock()\n\n    def __getstate__(self):\n        return {}\n\n"
        "    def runner(self, index):\n        pass\n\n"
        "    def run(self):\n        xmp.spawn(self.runner, start_method='fork')\n"
    )
    assert not [m for m in out.manual if m.rule == "spawn-unpicklable"]
