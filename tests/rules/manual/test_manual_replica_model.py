"""manual-replica-model beyond its examples: a fresh interpreter seeds torch at random (so
replicas spawned the default way differed under XRT too), and the shapes in which XRT's
replicas drew alike, or the model is made or kept equal, as found on projects of issue 32."""

import subprocess
import sys

import pytest

from python_migrate import migrate

_HEAD = "import torch\nimport torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n"


def test_fresh_interpreters_draw_different_numbers_unseeded():
    """Why a default spawn (XRT's too: start_method='spawn') with no seed is no item."""
    draw = [sys.executable, "-c", "import torch; print(torch.rand(1).item())"]
    assert len({subprocess.run(draw, capture_output=True, text=True, check=True).stdout for _ in range(2)}) == 2


def _reported(body: str, tail: str = "xmp.spawn(_mp_fn)\n", head: str = "") -> bool:
    source = f"{_HEAD}{head}\ndef _mp_fn(index):\n{body}\n{tail}"
    return "manual-replica-model" in [item.rule for item in migrate(source).manual]


_TRAINED = "    model = Net().to(xm.xla_device())\n    opt = torch.optim.Adam(model.parameters())\n"


@pytest.mark.parametrize(
    "head, body, tail, reported",
    [
        # a research script: a seed at module level, which every spawned process runs
        ("torch.manual_seed(1)\n", _TRAINED, "xmp.spawn(_mp_fn)\n", True),
        # the same seed under the main guard runs in the launching process only
        ("", _TRAINED, "if __name__ == '__main__':\n    torch.manual_seed(1)\n    xmp.spawn(_mp_fn)\n", False),
        # a seed helper of the project's, alike in each replica, or of the replica's number
        ("", "    seed_everything(42)\n" + _TRAINED, "xmp.spawn(_mp_fn)\n", True),
        ("", "    seed_everything(42 + index)\n" + _TRAINED, "xmp.spawn(_mp_fn)\n", False),
        ("", "    seed_everything(seed=index)\n" + _TRAINED, "xmp.spawn(_mp_fn)\n", False),
        # numpy's or random's seed leaves torch's generator as it was: a default spawn differed
        ("import numpy as np\n", "    np.random.seed(0)\n" + _TRAINED, "xmp.spawn(_mp_fn)\n", False),
        # torch.manual_seed in the replica: manual-seeded-replicas' item
        ("", "    torch.manual_seed(42)\n" + _TRAINED, "xmp.spawn(_mp_fn)\n", False),
        # a fork, the model moved under its own name
        (
            "",
            "    model = Net()\n    model = model.to(xm.xla_device())\n    opt = torch.optim.Adam(model.parameters())\n"
            "    sched = torch.optim.lr_scheduler.StepLR(opt, 10)\n",
            "xmp.spawn(_mp_fn, nprocs=8, start_method='fork')\n",
            True,
        ),
        # a notebook's fork, with the optimizer given parameter groups
        (
            "",
            "    model = Net().to(xm.xla_device())\n"
            "    groups = [{'params': [p for n, p in model.named_parameters() if 'bias' not in n]}]\n"
            "    opt = torch.optim.AdamW(groups, lr=1e-3)\n",
            "xmp.spawn(_mp_fn, nprocs=8, start_method='fork')\n",
            True,
        ),
    ],
)
def test_reported_where_xrt_replicas_drew_alike(head, body, tail, reported):
    source = f"{_HEAD}{head}\ndef _mp_fn(index):\n{body}\n{tail}"
    items = [item for item in migrate(source).manual if item.rule == "manual-replica-model"]
    assert len(items) == reported  # one, at the optimizer: not again at its scheduler


_FORK = "xmp.spawn(_mp_fn, nprocs=8, start_method='fork')\n"


@pytest.mark.parametrize(
    "head, body",
    [
        # DDP broadcasts rank 0's parameters; FSDP keeps one shard per replica
        (
            "from torch.nn.parallel import DistributedDataParallel as DDP\n",
            "    model = DDP(Net().to(xm.xla_device()))\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
        ),
        (
            "from torch_xla.distributed.fsdp import XlaFullyShardedDataParallel as FSDP\n\n"
            "def build():\n    return FSDP(Net())\n",
            "    model = build()\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
        ),
        # weights loaded: from a helper that builds a pretrained model, or a checkpoint
        (
            "import timm\n\ndef build():\n    return timm.create_model('resnet50', pretrained=True)\n",
            "    model = build().to(xm.xla_device())\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
        ),
        ("", _TRAINED.replace("    opt", "    model.load_state_dict(torch.load('w.pt'))\n    opt")),
        ("", _TRAINED.replace("    opt", "    model.module.load_state_dict(state)\n    opt")),
        (
            "import torchvision\n",
            "    model = torchvision.models.resnet50(weights='IMAGENET1K_V2').to(xm.xla_device())\n"
            "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
        ),
        # a class of the file around a pretrained model (sentence embeddings: no new head)
        (
            "import torch.nn as nn\nfrom transformers import AutoModel\n\nclass Embedder(nn.Module):\n"
            "    def __init__(self, name):\n        super().__init__()\n        self.model = AutoModel.from_pretrained(name)\n",
            "    model = Embedder('bert').to(xm.xla_device())\n    opt = torch.optim.AdamW(model.parameters())\n",
        ),
        # a copy of one module, or the wrapper's: the same weights in each
        (
            "import copy\n\nBASE = Net()\n",
            "    model = copy.deepcopy(BASE).to(xm.xla_device())\n    opt = torch.optim.SGD(model.parameters())\n",
        ),
        (
            "WRAPPED = xmp.MpModelWrapper(Net())\n",
            "    model = WRAPPED.to(xm.xla_device())\n    opt = torch.optim.SGD(model.parameters())\n",
        ),
        # a broadcast of the project's own after the build
        ("", _TRAINED.replace("    opt", "    broadcast_weights(model)\n    opt")),
    ],
)
def test_not_reported_where_the_replicas_models_are_made_or_kept_equal(head, body):
    assert not _reported(body, _FORK, head)


_FORK = "xmp.spawn(_mp_fn, start_method='fork')\n"


@pytest.mark.parametrize(
    "body, reported",
    [
        # round 14: research scripts that build several models at once and train each in turn
        (
            "    nets = [Net().to(xm.xla_device()) for _ in range(3)]\n    for k in range(3):\n        model = nets[k]\n"
            "        opt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
            True,
        ),
        # a checkpoint loaded only when there is one: a run that starts afresh trains what it drew
        (
            _TRAINED + "    if os.path.exists('last.pt'):\n        model.load_state_dict(torch.load('last.pt'))\n",
            True,
        ),
        (_TRAINED + "    model.load_state_dict(torch.load('init.pt'))\n", False),
        (_TRAINED + "    with open('init.pt', 'rb') as f:\n        model.load_state_dict(torch.load(f))\n", False),
    ],
)
def test_a_model_taken_from_a_list_or_resumed_only_sometimes_is_reported(body, reported):
    assert _reported(body, _FORK, "import os\n") is reported
