"""manual-mp-model-wrapper beyond its example: on the installed torch_xla, two replicas run as
threads of one process (as on TPU v2/v3: CPU_NUM_DEVICES=2 gives one process two devices) get one
module from MpModelWrapper, its parameters on one device."""

import pytest

from python_migrate import migrate
from xla_run import run_on_cpu


@pytest.mark.slow
@pytest.mark.xla
def test_two_thread_replicas_get_one_module_on_one_device():
    ran = run_on_cpu(
        """
        import threading
        import torch
        import torch_xla
        import torch_xla.distributed.xla_multiprocessing as xmp
        from torch_xla._internal import pjrt

        WRAPPED = xmp.MpModelWrapper(torch.nn.Linear(2, 2))
        got, lock = {}, threading.Lock()

        def replica(index):
            model = WRAPPED.to(torch_xla.device())
            with lock:
                got[index] = model

        pjrt.spawn_threads(replica)
        print(len(got), len({id(model) for model in got.values()}), next(got[0].parameters()).device)
        """,
        PJRT_DEVICE="CPU",
        CPU_NUM_DEVICES="2",
    )
    replicas, modules, device = ran.split()
    assert (replicas, modules) == ("2", "1")
    assert device == "xla:1"  # replica 0's model sits on replica 1's device


def test_reported_where_the_wrapper_is_made_under_either_target():
    source = "import torch_xla.distributed.xla_multiprocessing as xmp\n\nWRAPPED = xmp.MpModelWrapper(Net())\n"
    for target in ("native", "shim"):
        assert [item.rule for item in migrate(source, target=target).manual] == ["manual-mp-model-wrapper"]


@pytest.mark.parametrize(
    "spawns, reported",
    [
        # round 11: a notebook's one-core run, its spawned closure moving the wrapper
        ("xmp.spawn(train_fn, args=(data,), nprocs=1, start_method='fork')", False),
        ("torch_xla.launch(train_fn, args=(data,), debug_single_process=True)", False),
        ("xmp.spawn(train_fn, args=(data,), start_method='fork')", True),
        ("xmp.spawn(train_fn, args=(data,), nprocs=1)\n    xmp.spawn(train_fn, args=(data,))", True),
    ],
)
def test_a_wrapper_only_one_replica_moves_is_not_reported(spawns, reported):
    source = (
        "import torch_xla\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
        "def main(model, data):\n    WRAPPED = xmp.MpModelWrapper(model)\n\n"
        "    def train_fn(index, data):\n        model = WRAPPED.to(torch_xla.device())\n\n"
        f"    {spawns}\n"
    )
    items = [item.rule for item in migrate(source).manual if item.rule == "manual-mp-model-wrapper"]
    assert items == ["manual-mp-model-wrapper"] * reported


def test_a_notebook_that_spawns_nothing_moves_its_wrapper_once():
    # a Kaggle kernel's cells: the wrapper moved and trained in this one process, no spawn
    cells = (
        "import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
        "WRAPPED = xmp.MpModelWrapper(Net())\n\n"
        "def fit(loader):\n    model = WRAPPED.to(xm.xla_device())\n\nfit(loader)\n"
    )
    assert not migrate(cells, notebook=True).manual
    # the same cells as a module that another file's spawn may run: still reported
    assert [item.rule for item in migrate(cells).manual] == ["manual-mp-model-wrapper"]
    spawned = cells.replace("fit(loader)\n", "xmp.spawn(fit, args=(loader,), start_method='fork')\n")
    assert [item.rule for item in migrate(spawned, notebook=True).manual] == ["manual-mp-model-wrapper"]


def test_a_script_that_spawns_nothing_and_moves_its_wrapper_itself_is_not_reported():
    # round 14: an inference script wraps and moves the model at module level, one process
    script = (
        "import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
        "device = xm.xla_device()\nnet = xmp.MpModelWrapper(net) if USE_TPU else net\nnet = net.to(device)\n"
        "preds = [net(x.to(device)) for x in loader]\n"
    )
    assert not migrate(script).manual
    # the upstream pattern: made at module level, moved in each replica's function
    replicas = script.replace("net = net.to(device)\n", "def _mp_fn(index):\n    model = net.to(xm.xla_device())\n")
    assert [item.rule for item in migrate(replicas).manual] == ["manual-mp-model-wrapper"]
