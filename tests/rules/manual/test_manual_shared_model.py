"""manual-shared-model beyond its examples: which module-level models the replicas share."""

import pytest

from python_migrate import migrate

_HEAD = (
    "import copy\nimport timm\nimport torch.nn as nn\nimport torch_xla.core.xla_model as xm\n"
    "import torch_xla.distributed.xla_multiprocessing as xmp\nfrom transformers import AutoTokenizer, T5ForConditionalGeneration\n\n"
    "class Net(nn.Module):\n    pass\n\n"
)


@pytest.mark.parametrize(
    "built, replica, spawn, reported",
    [
        ("MODEL = Net()", "run(MODEL)", "xmp.spawn(_mp_fn, nprocs=8)", True),  # handed on in the replica
        ("MODEL = timm.create_model('resnet50', pretrained=True)", "out = MODEL(x)", "xmp.spawn(_mp_fn)", True),
        ("MODEL = Net().to('cpu')", "pass", "xmp.spawn(_mp_fn, args=(MODEL,))", True),  # in the spawn's args
        (
            "MODEL = T5ForConditionalGeneration.from_pretrained('t5-small')",
            "trainer = Trainer(model=MODEL)",
            "xmp.spawn(_mp_fn)",
            True,
        ),
        # not shared: one process, a copy, the weights only, the replica's own model, no model at all
        ("MODEL = Net()", "run(MODEL)", "xmp.spawn(_mp_fn, nprocs=1)", False),
        ("MODEL = Net()", "run(copy.deepcopy(MODEL))", "xmp.spawn(_mp_fn)", False),
        ("MODEL = Net()", "net = Net()\n    net.load_state_dict(MODEL.state_dict())", "xmp.spawn(_mp_fn)", False),
        ("MODEL = Net()", "MODEL = Net()\n    run(MODEL)", "xmp.spawn(_mp_fn)", False),
        ("MODEL = AutoTokenizer.from_pretrained('t5-small')", "run(MODEL)", "xmp.spawn(_mp_fn)", False),
        ("MODEL = Net()\nif small:\n    MODEL = None", "run(MODEL)", "xmp.spawn(_mp_fn)", False),
    ],
)
def test_a_model_built_before_the_spawn_is_reported_where_the_replicas_use_it(built, replica, spawn, reported):
    source = _HEAD + f"{built}\n\ndef _mp_fn(index):\n    {replica}\n\nif __name__ == '__main__':\n    {spawn}\n"
    items = [m for m in migrate(source).manual if m.rule == "manual-shared-model"]
    assert len(items) == reported
    if reported:
        (item,) = items
        assert item.line == source.count("\n") and item.shown().endswith(f"`{built.splitlines()[0]}`)")


def test_a_model_used_by_what_the_spawned_function_calls_is_reported():
    source = _HEAD + (
        "model = Net()\n\ndef train(device):\n    return model.to(device)\n\n"
        "def _mp_fn(index):\n    train(xm.xla_device())\n\nxmp.spawn(_mp_fn)\n"
    )
    assert [m.rule for m in migrate(source).manual if m.rule == "manual-shared-model"] == ["manual-shared-model"]


@pytest.mark.parametrize(
    "declared, reported",
    [
        # round 14: a notebook's earlier section binds a module-level model of the same name; the
        # replica's loop functions read the model their enclosing function builds
        ("", False),
        ("    global model\n", True),  # the enclosing function's model is the module's
    ],
)
def test_a_closure_reads_the_model_of_its_enclosing_function(declared, reported):
    source = _HEAD + (
        "model = Net()\n\ndef train(device):\n" + declared + "    model = Net().to(device)\n\n"
        "    def loop(batch):\n        model.train()\n\n    loop(None)\n\n"
        "def _mp_fn(index):\n    train(xm.xla_device())\n\nxmp.spawn(_mp_fn)\n"
    )
    items = [m.rule for m in migrate(source).manual if m.rule == "manual-shared-model"]
    assert items == ["manual-shared-model"] * reported


@pytest.mark.parametrize(
    "outer, replica, reported",
    [
        # a helper of the project's: its caller's model, moved in place by the nested replica function
        ("def pretrain(model, data, cores=8):", "model.train()\n        model.to(xm.xla_device())", True),
        ("def pretrain(data, cores=8):\n    model = Net()", "opt = make_optimizer(model.parameters())", True),
        # a tensor's .to is a copy; a model the replica builds, or its own copy, is its own
        ("def pretrain(batch, cores=8):", "x = batch.to(xm.xla_device())", False),
        ("def pretrain(trainer, cores=8):", "trainer.train()", False),  # no model: a trainer trains
        ("def pretrain(data, cores=8):", "model = Net()\n        model.to(xm.xla_device())", False),
        ("def pretrain(model, cores=8):", "net = copy.deepcopy(model)\n        net.to(xm.xla_device())", False),
    ],
)
def test_a_model_the_spawning_function_holds_for_its_nested_replica_function(outer, replica, reported):
    source = (
        _HEAD + f"{outer}\n    def _mp_fn(index):\n        {replica}\n\n"
        "    xmp.spawn(_mp_fn, nprocs=cores, start_method='fork')\n"
    )
    items = [m for m in migrate(source).manual if m.rule == "manual-shared-model"]
    assert len(items) == reported, source
