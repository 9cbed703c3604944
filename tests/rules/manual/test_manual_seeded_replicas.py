"""manual-seeded-replicas beyond its examples: on the installed torch_xla, two replicas run as
threads of one process (as on TPU v2/v3) and seeded alike draw different numbers; the seed is
reported in what the spawned function calls."""

import pytest

from python_migrate import migrate
from xla_run import run_on_cpu


@pytest.mark.slow
@pytest.mark.xla
def test_two_thread_replicas_seeded_alike_draw_different_numbers():
    ran = run_on_cpu(
        """
        import threading
        import torch
        from torch_xla._internal import pjrt

        seeded, lock, drawn = threading.Barrier(2), threading.Lock(), {}

        def replica(index):
            torch.manual_seed(0)
            seeded.wait()  # both seeded before either draws, in turn
            with lock:
                drawn[index] = torch.rand(1).item()

        pjrt.spawn_threads(replica)
        print(len(drawn), len(set(drawn.values())))
        """,
        PJRT_DEVICE="CPU",
        CPU_NUM_DEVICES="2",
    )
    assert ran.split() == ["2", "2"]  # two replicas, two different numbers after one seed


def test_a_seed_in_what_the_spawned_function_calls_is_reported():
    source = (
        "import torch\nimport torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
        "def build(device):\n    torch.manual_seed(0)\n    return Net().to(device)\n\n"
        "def _mp_fn(index):\n    model = build(xm.xla_device())\n\nxmp.spawn(_mp_fn, nprocs=8)\n"
    )
    assert "manual-seeded-replicas" in [item.rule for item in migrate(source).manual]


def test_transformers_set_seed_in_a_script_xla_spawn_runs_is_reported():
    # round 15: a fine-tuning script for transformers' xla_spawn.py seeds with set_seed, then builds
    # a classifier whose head is random
    source = (
        "from transformers import AutoModelForSequenceClassification, set_seed\n"
        "import torch_xla.core.xla_model as xm\n\n"
        "def main():\n    set_seed(42)\n"
        "    model = AutoModelForSequenceClassification.from_pretrained(NAME).to(xm.xla_device())\n\n"
        "def _mp_fn(index):\n    main()\n"
    )
    assert [item.rule for item in migrate(source).manual] == ["manual-seeded-replicas"]


def test_a_seed_outside_spawned_code_is_not():
    source = "import torch\nimport torch_xla.core.xla_model as xm\n\ntorch.manual_seed(0)\nd = xm.xla_device()\n"
    assert "manual-seeded-replicas" not in [item.rule for item in migrate(source).manual]


# The false alarm of issue 32, in a shape of its own: a seed per replica, and the models made
# equal after by a broadcast of the project's own.


@pytest.mark.parametrize(
    "seed, after, reported",
    [
        ("torch.manual_seed(cfg.seed)", "", True),
        ("torch.manual_seed(cfg.seed + xm.get_ordinal())", "", False),
        ("seed = cfg.seed + index\n    torch.manual_seed(seed)", "", False),
        ("rank = xm.get_ordinal()\n    torch.manual_seed(rank)", "", False),
        ("torch.manual_seed(cfg.seed)", "    dist_utils.broadcast_master_weights(model)\n", False),
    ],
)
def test_a_seed_per_replica_or_a_broadcast_of_the_projects_own_is_not_reported(seed, after, reported):
    source = (
        "import torch\nimport torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
        f"def _mp_fn(index, cfg):\n    {seed}\n    model = build(cfg).to(xm.xla_device())\n{after}\n"
        "xmp.spawn(_mp_fn, args=(CFG,))\n"
    )
    assert [item.rule for item in migrate(source).manual] == ["manual-seeded-replicas"] * reported


def test_the_first_parameter_of_a_helper_the_replicas_call_is_no_replica_number():
    source = (
        "import torch\nimport torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
        "def build(cfg):\n    torch.manual_seed(cfg.seed)\n    return Net().to(xm.xla_device())\n\n"
        "def _mp_fn(index, cfg):\n    model = build(cfg)\n\nxmp.spawn(_mp_fn, args=(CFG,))\n"
    )
    assert [item.rule for item in migrate(source).manual] == ["manual-seeded-replicas"]


@pytest.mark.parametrize(
    "moved, reported",
    [
        ("metrics = torchmetrics.MetricCollection({'acc': torchmetrics.Accuracy()}).to(device)", False),
        ("meter = MeanMetric()\n    meter = meter.to(device)", False),
        ("meter = MeanMetric().to(device)\n    model = Net().to(device)", True),
        # round 14: data moved after the seed (a GAN's fixed labels, a batch's item) builds no model
        ("y_fixed = Variable(y_fixed.to(device))", False),
        ("noise = torch.zeros_like(batch['img']).to(device)", False),
        ("for x, y in loader:\n        x = x.to(device)", False),
        ("head = torch.nn.Linear(8, 2).to(device)", True),
    ],
)
def test_metrics_and_data_moved_to_the_device_are_no_model_built_after_the_seed(moved, reported):
    # Metrics hold counters, alike in every replica: only a model's random weights differ.
    source = (
        "import torch\nimport torchmetrics\nfrom torchmetrics import MeanMetric\nfrom torch.autograd import Variable\n"
        "import torch_xla.core.xla_model as xm\n"
        "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
        f"def _mp_fn(index):\n    torch.manual_seed(1)\n    device = xm.xla_device()\n    {moved}\n\n"
        "xmp.spawn(_mp_fn)\n"
    )
    assert [item.rule for item in migrate(source).manual] == ["manual-seeded-replicas"] * reported


def test_an_mp_fn_the_file_calls_itself_runs_in_one_process():
    # round 13: a single-core kernel keeps the spawn as a comment and calls _mp_fn(0, FLAGS)
    body = "def _mp_fn(index, flags):\n    torch.manual_seed(1)\n    model = Net().to(xm.xla_device())\n\n"
    head = "import torch\nimport torch_xla.core.xla_model as xm\n\n"
    assert not migrate(head + body + "# xmp.spawn(_mp_fn, args=(FLAGS,), nprocs=8)\n_mp_fn(0, FLAGS)\n").manual
    assert [m.rule for m in migrate(head + body).manual] == ["manual-seeded-replicas"]  # a launcher elsewhere


@pytest.mark.parametrize(
    "source",
    [
        # round 13: the replicas seed, then move the model a notebook cell built before the spawn
        "MX = Net()\n\ndef _mp_fn(index):\n    torch.manual_seed(42)\n    model = MX.to(xm.xla_device())\n\n"
        "xmp.spawn(_mp_fn, start_method='fork')\n",
        # round 14: a script's main() builds the model, then spawns a closure that seeds and moves it
        "def main():\n    MX = Net()\n\n    def run():\n        torch.manual_seed(42)\n"
        "        model = MX.to(xm.xla_device())\n\n    def _mp_fn(index):\n        run()\n\n"
        "    xmp.spawn(_mp_fn, start_method='fork')\n",
        # round 14: main() builds the model and the spawn hands it to each replica, which seeds
        "def _mp_fn(index, flags, MX):\n    torch.manual_seed(flags['seed'])\n    MX.to(xm.xla_device())\n\n"
        "def main(flags):\n    MX = Net()\n    xmp.spawn(_mp_fn, args=(flags, MX), start_method='fork')\n",
    ],
)
def test_a_model_built_before_the_replicas_ran_is_not_one_the_seed_makes_differ(source):
    head = "import torch\nimport torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
    assert "manual-seeded-replicas" not in [m.rule for m in migrate(head + source).manual]
    built_here = source.replace("MX.to", "Net().to")
    assert "manual-seeded-replicas" in [m.rule for m in migrate(head + built_here).manual]


def test_a_model_a_call_unpacks_is_moved_where_the_item_says():
    # round 15: `model, preprocess = clip.load(...)` then `model = model.to(device)`; the item cited
    # a batch's move in the training loop below, as if the unpacked model were data
    source = (
        "import torch\nimport clip\nimport torch_xla.core.xla_model as xm\n"
        "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
        "def _mp_fn(index):\n    torch.manual_seed(42)\n    device = xm.xla_device()\n"
        "    model, preprocess = clip.load('ViT-B/32')\n    model = model.to(device)\n"
        "    for images, texts in loader:\n        texts = clip.tokenize(texts).to(device)\n\n"
        "xmp.spawn(_mp_fn)\n"
    )
    (item,) = migrate(source).manual
    assert item.rule == "manual-seeded-replicas" and [cite.line for cite in item.cites] == [10]
