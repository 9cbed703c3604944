"""A generated tree of XRT-era TPU kernels: the dense case, where nearly every file uses torch_xla.

    python bench/_dense_tree.py FOLDER [--kernels N] [--seed S]

Written for these benchmarks, in the shapes public Kaggle and Colab TPU kernels of 2020-2022
take (no kernel's text is copied): a notebook exported to .py by nbconvert (``# In[ ]:``
cells, IPython's magics as ``get_ipython()`` calls, the training cell under ``%%time``), the
same as jupytext writes it (``# %%`` cells, ``# !pip`` lines), a plain training script, and
a few notebooks (.ipynb). Each kernel installs torch_xla with the env-setup script or a
wheel, may set XRT_TPU_CONFIG, defines a dataset, a model and helpers in plain PyTorch, a
training and an evaluation loop with xm calls, and the replica function ``xmp.spawn``
starts. Choices (import forms, names, sizes, which calls) are drawn per kernel from a seeded
random generator, so every file differs (a cache keyed by content gets no free hits across
copies) and the tree is the same for the same seed.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

INSTALLS = (
    [
        "curl https://raw.githubusercontent.com/pytorch/xla/master/contrib/scripts/env-setup.py -o pytorch-xla-env-setup.py",
        "python pytorch-xla-env-setup.py --version {version} --apt-packages libomp5 libopenblas-dev",
    ],
    [
        "pip install -q cloud-tpu-client==0.10 https://storage.googleapis.com/tpu-pytorch/wheels/"
        "torch_xla-{version}-cp37-cp37m-linux_x86_64.whl"
    ],
    ["pip install -q transformers==4.{minor}.0", "pip install -q timm"],
)
VERSIONS = ("1.7", "1.8", "1.8.1", "1.9", "nightly")

IMPORTS = (
    "import torch_xla\nimport torch_xla.core.xla_model as xm\nimport torch_xla.distributed.parallel_loader as pl\n"
    "import torch_xla.distributed.xla_multiprocessing as xmp\n",
    "import torch_xla.core.xla_model as xm\nimport torch_xla.debug.metrics as met\n"
    "from torch_xla.distributed import parallel_loader as pl\nfrom torch_xla.distributed import xla_multiprocessing as xmp\n",
    "import torch_xla\nimport torch_xla.core.xla_model as xm\nimport torch_xla.distributed.parallel_loader as pl\n"
    "import torch_xla.distributed.xla_multiprocessing as xmp\nimport torch_xla.utils.serialization as xser\n",
)
COMMON = (
    "import os\nimport gc\nimport time\nimport random\nimport numpy as np\nimport pandas as pd\nimport torch\n"
    "import torch.nn as nn\nimport torch.nn.functional as F\nfrom torch.utils.data import Dataset, DataLoader\n"
    "from torch.utils.data.distributed import DistributedSampler\nfrom sklearn import metrics, model_selection\n"
)


def config(rng: random.Random, name: str) -> str:
    fields = [
        "TRAIN_BATCH_SIZE",
        "VALID_BATCH_SIZE",
        "EPOCHS",
        "LR",
        "MAX_LEN",
        "SEED",
        "NUM_WORKERS",
        "IMG_SIZE",
        "WEIGHT_DECAY",
        "WARMUP",
        "FOLD",
        "HIDDEN",
        "DROPOUT",
        "ACCUM_STEPS",
        "PATIENCE",
    ]
    rng.shuffle(fields)
    lines = "".join(
        f"    {f} = {rng.choice(['1e-4', '3e-5', '16', '32', '64', '0.1', '2', '224', '8', '42'])}\n"
        for f in fields[: rng.randint(8, 15)]
    )
    return f"class {name}:\n    DATA = '/kaggle/input/{name.lower()}-data'\n{lines}\n\n"


def dataset(rng: random.Random, name: str) -> str:
    transform = rng.choice(["image = image / 255.0", "image = (image - 0.5) / 0.25", "image = np.clip(image, 0, 1)"])
    return (
        f"class {name}(Dataset):\n"
        "    def __init__(self, frame, targets=None, augment=False, size=224):\n"
        "        self.paths = frame['path'].values\n        self.targets = targets\n"
        "        self.augment = augment\n        self.size = size\n\n"
        "    def __len__(self):\n        return len(self.paths)\n\n"
        "    def load(self, index):\n"
        "        image = np.load(self.paths[index]).astype(np.float32)\n"
        f"        {transform}\n"
        "        if self.augment and random.random() > 0.5:\n            image = image[:, ::-1].copy()\n"
        "        return image\n\n"
        "    def __getitem__(self, index):\n"
        "        image = torch.tensor(self.load(index)).permute(2, 0, 1)\n"
        "        if self.targets is None:\n            return {'image': image}\n"
        "        return {'image': image, 'target': torch.tensor(self.targets[index], dtype=torch.float)}\n\n\n"
    )


def model(rng: random.Random, name: str) -> str:
    width = rng.choice([64, 128, 256])
    layers = "".join(
        f"        self.block{k} = nn.Sequential(nn.Conv2d({width if k else 3}, {width}, 3, padding=1), "
        f"nn.BatchNorm2d({width}), nn.ReLU(inplace=True), nn.MaxPool2d(2))\n"
        for k in range(rng.randint(3, 6))
    )
    calls = "".join(f"        x = self.block{k}(x)\n" for k in range(layers.count("self.block")))
    return (
        f"class {name}(nn.Module):\n"
        f"    def __init__(self, classes=1, dropout={rng.choice(['0.1', '0.2', '0.3'])}):\n"
        f"        super().__init__()\n{layers}"
        f"        self.pool = nn.AdaptiveAvgPool2d(1)\n        self.drop = nn.Dropout(dropout)\n"
        f"        self.head = nn.Linear({width}, classes)\n\n"
        f"    def forward(self, x):\n{calls}"
        "        x = self.pool(x).flatten(1)\n        return self.head(self.drop(x))\n\n\n"
    )


HELPERS = (
    "class AverageMeter:\n    def __init__(self):\n        self.reset()\n\n    def reset(self):\n"
    "        self.val = 0\n        self.avg = 0\n        self.sum = 0\n        self.count = 0\n\n"
    "    def update(self, val, n=1):\n        self.val = val\n        self.sum += val * n\n"
    "        self.count += n\n        self.avg = self.sum / self.count\n\n\n",
    "def seed_everything(seed):\n    random.seed(seed)\n    os.environ['PYTHONHASHSEED'] = str(seed)\n"
    "    np.random.seed(seed)\n    torch.manual_seed(seed)\n\n\n",
    "def loss_fn(outputs, targets):\n    return nn.BCEWithLogitsLoss()(outputs, targets.view(-1, 1))\n\n\n",
    "def score(targets, outputs):\n    outputs = np.array(outputs) >= 0.5\n"
    "    return metrics.roc_auc_score(targets, outputs), metrics.accuracy_score(targets, outputs)\n\n\n",
    "def read_folds(path, folds=5):\n    frame = pd.read_csv(path)\n    frame['kfold'] = -1\n"
    "    splitter = model_selection.StratifiedKFold(n_splits=folds, shuffle=True, random_state=42)\n"
    "    for fold, (_, valid) in enumerate(splitter.split(X=frame, y=frame.target.values)):\n"
    "        frame.loc[valid, 'kfold'] = fold\n    return frame\n\n\n",
)


def train_loop(rng: random.Random) -> str:
    log = rng.choice(
        [
            "xm.master_print(f'step {step} loss {meter.avg:.4f}')",
            "print(f'[xla:{xm.get_ordinal()}] step {step} loss {loss.item():.4f}', flush=True)",
            "xm.master_print('step', step, 'loss', meter.avg)",
        ]
    )
    step = rng.choice(["xm.optimizer_step(optimizer)", "xm.optimizer_step(optimizer, barrier=True)"])
    return (
        "def train_loop_fn(data_loader, model, optimizer, device, scheduler=None):\n"
        "    model.train()\n    meter = AverageMeter()\n"
        "    for step, batch in enumerate(data_loader):\n"
        "        images = batch['image']\n        targets = batch['target']\n"
        "        optimizer.zero_grad()\n        outputs = model(images)\n"
        "        loss = loss_fn(outputs, targets)\n        loss.backward()\n"
        f"        {step}\n"
        "        if scheduler is not None:\n            scheduler.step()\n"
        "        meter.update(loss.item(), images.size(0))\n"
        f"        if step % {rng.choice([10, 20, 50])} == 0:\n            {log}\n"
        "    return meter.avg\n\n\n"
    )


def eval_loop(rng: random.Random) -> str:
    gather = rng.choice(
        [
            "    outputs = xm.mesh_reduce('outputs', np.concatenate(fin_outputs), np.concatenate)\n"
            "    targets = xm.mesh_reduce('targets', np.concatenate(fin_targets), np.concatenate)\n",
            "    outputs = np.concatenate(fin_outputs)\n    targets = np.concatenate(fin_targets)\n",
        ]
    )
    return (
        "def eval_loop_fn(data_loader, model, device):\n    model.eval()\n    fin_targets = []\n"
        "    fin_outputs = []\n    with torch.no_grad():\n        for batch in data_loader:\n"
        "            outputs = model(batch['image'])\n"
        "            fin_targets.append(batch['target'].cpu().detach().numpy())\n"
        "            fin_outputs.append(torch.sigmoid(outputs).cpu().detach().numpy())\n"
        f"{gather}    return outputs, targets\n\n\n"
    )


def replica(rng: random.Random, names: dict[str, str], wrapped: bool) -> str:
    cfg, data, net = names["config"], names["dataset"], names["model"]
    build = "WRAPPED_MODEL.to(device)" if wrapped else f"{net}().to(device)"
    sampler = rng.choice(
        [
            "DistributedSampler({d}, num_replicas=xm.xrt_world_size(), rank=xm.get_ordinal(), shuffle={s})",
            "torch.utils.data.distributed.DistributedSampler({d}, num_replicas=xm.xrt_world_size(), "
            "rank=xm.get_ordinal(), shuffle={s})",
        ]
    )
    loader = rng.choice(
        ["pl.ParallelLoader({l}, [device]).per_device_loader(device)", "pl.MpDeviceLoader({l}, device)"]
    )
    save = rng.choice(
        [
            "xm.save(model.state_dict(), f'model_{fold}.bin')",
            "xser.save(model.state_dict(), f'model_{fold}.bin', master_only=True)"
            if "xser" in names["imports"]
            else "xm.save(model.state_dict(), f'model_{fold}.bin')",
        ]
    )
    return (
        f"def _run(fold, flags):\n    seed_everything({cfg}.SEED)\n    device = xm.xla_device()\n"
        f"    frame = read_folds({cfg}.DATA + '/train.csv')\n"
        "    train_frame = frame[frame.kfold != fold].reset_index(drop=True)\n"
        "    valid_frame = frame[frame.kfold == fold].reset_index(drop=True)\n"
        f"    train_data = {data}(train_frame, train_frame.target.values, augment=True)\n"
        f"    valid_data = {data}(valid_frame, valid_frame.target.values)\n"
        f"    train_sampler = {sampler.format(d='train_data', s='True')}\n"
        f"    valid_sampler = {sampler.format(d='valid_data', s='False')}\n"
        f"    train_loader = DataLoader(train_data, batch_size={cfg}.TRAIN_BATCH_SIZE, sampler=train_sampler, "
        f"drop_last=True, num_workers=4)\n"
        f"    valid_loader = DataLoader(valid_data, batch_size={cfg}.VALID_BATCH_SIZE, sampler=valid_sampler, "
        f"num_workers=4)\n"
        f"    model = {build}\n"
        f"    lr = {cfg}.LR * xm.xrt_world_size()\n"
        "    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)\n"
        f"    steps = len(train_data) // {cfg}.TRAIN_BATCH_SIZE // xm.xrt_world_size() * {cfg}.EPOCHS\n"
        "    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=steps)\n"
        "    best = 0\n"
        f"    for epoch in range({cfg}.EPOCHS):\n"
        "        gc.collect()\n"
        f"        train_device_loader = {loader.format(l='train_loader')}\n"
        "        loss = train_loop_fn(train_device_loader, model, optimizer, device, scheduler)\n"
        "        del train_device_loader\n"
        f"        valid_device_loader = {loader.format(l='valid_loader')}\n"
        "        outputs, targets = eval_loop_fn(valid_device_loader, model, device)\n"
        "        auc, accuracy = score(targets, outputs)\n"
        "        xm.master_print(f'epoch {epoch} loss {loss:.4f} auc {auc:.4f} accuracy {accuracy:.4f}')\n"
        "        if auc > best:\n"
        f"            {save}\n            best = auc\n"
        + rng.choice(["", "        xm.rendezvous('epoch_end')\n"])
        + rng.choice(
            [
                "",
                "    if xm.is_master_ordinal():\n        print(met.metrics_report())\n"
                if "met" in names["imports"]
                else "",
            ]
        )
        + "\n\n"
        + rng.choice(
            [
                "def _mp_fn(rank, flags):\n    torch.set_default_tensor_type('torch.FloatTensor')\n"
                "    _run(flags['fold'], flags)\n\n\n",
                "def _mp_fn(rank, flags):\n    _run(flags['fold'], flags)\n\n\n",
            ]
        )
    )


def spawn(rng: random.Random) -> str:
    nprocs = rng.choice(["8", "8", "1", "FLAGS['nprocs']"])
    method = rng.choice([", start_method='fork'", ", start_method='fork'", ""])
    return f"FLAGS = {{'fold': 0, 'nprocs': 8}}\nxmp.spawn(_mp_fn, args=(FLAGS,), nprocs={nprocs}{method})\n"


SUBMIT = (
    "sample = pd.read_csv('/kaggle/input/sample_submission.csv')\n"
    "sample['target'] = np.mean([np.load(f'preds_{k}.npy') for k in range(5)], axis=0)\n"
    "sample.to_csv('submission.csv', index=False)\nsample.head()\n"
)


def kernel(rng: random.Random, serial: int) -> tuple[str, str]:
    """(file name, text) of one kernel."""
    names = {
        "config": rng.choice(["CFG", "Config", "Args", "Hyper"]) + str(serial),
        "dataset": rng.choice(["ImageDataset", "TrainDataset", "LeafData", "MelanomaSet"]) + str(serial),
        "model": rng.choice(["Net", "SimpleCNN", "Classifier", "ConvModel"]) + str(serial),
        "imports": rng.choice(IMPORTS),
    }
    wrapped = rng.random() < 0.4
    version = rng.choice(VERSIONS)
    install = [c.format(version=version, minor=rng.randint(2, 9)) for c in rng.choice(INSTALLS)]
    env = rng.choice(
        ["", "os.environ['XRT_TPU_CONFIG'] = 'tpu_worker;0;10.0.0.2:8470'\n", "os.environ['XLA_USE_BF16'] = '1'\n"]
    )
    helpers = list(HELPERS)
    rng.shuffle(helpers)
    cells = [
        COMMON + "\nfor dirname, _, filenames in os.walk('/kaggle/input'):\n    for filename in filenames[:3]:\n"
        "        print(os.path.join(dirname, filename))\n",
        "\n".join(f"!{c}" for c in install),
        env + names["imports"],
        config(rng, names["config"]),
        dataset(rng, names["dataset"]),
        model(rng, names["model"]),
        *helpers,
        *([f"WRAPPED_MODEL = xmp.MpModelWrapper({names['model']}())\n"] if wrapped else []),
        train_loop(rng),
        eval_loop(rng),
        replica(rng, names, wrapped),
        "%%time\n" + spawn(rng) if rng.random() < 0.5 else spawn(rng),
        SUBMIT,
    ]
    style = rng.choices(["nbconvert", "jupytext", "script", "ipynb"], weights=(6, 2, 2, 2))[0]
    stem = f"kernel_{serial:04d}"
    if style == "ipynb":
        sources = [c.splitlines(keepends=True) for c in cells]
        notebook = {
            "cells": [
                {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": s}
                for s in sources
            ],
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
            "nbformat": 4,
            "nbformat_minor": 4,
        }
        return f"{stem}.ipynb", json.dumps(notebook, indent=1)
    if style == "nbconvert":
        return f"{stem}.py", "#!/usr/bin/env python\n# coding: utf-8\n" + "".join(
            f"\n# In[ ]:\n\n\n{_nbconvert(c)}\n\n" for c in cells
        )
    if style == "jupytext":
        return f"{stem}.py", "".join(f"# %% [code]\n{_jupytext(c)}\n" for c in cells)
    script = [c.replace("%%time\n", "") for c in cells if not c.startswith("!")]
    return f"{stem}.py", "\n".join(script[:-2]) + "\nif __name__ == '__main__':\n" + "".join(
        f"    {line}\n" for line in script[-2].splitlines()
    )


def _nbconvert(cell: str) -> str:
    """A cell as nbconvert writes it: ``!cmd`` as ``get_ipython().system('cmd')``, a cell
    magic as ``run_cell_magic``."""
    if cell.startswith("%%"):
        head, _, body = cell.partition("\n")
        return f"get_ipython().run_cell_magic({head[2:]!r}, '', {body!r})"
    return "\n".join(
        f"get_ipython().system({line[1:]!r})" if line.startswith("!") else line for line in cell.splitlines()
    )


def _jupytext(cell: str) -> str:
    """A cell as jupytext writes it: magics commented out."""
    return "\n".join(f"# {line}" if line.startswith(("!", "%")) else line for line in cell.splitlines())


def build(folder: Path, kernels: int = 816, seed: int = 0) -> list[Path]:
    """Write ``kernels`` kernels into ``folder`` (51 to a subfolder, as a competition's
    kernels); the paths written."""
    rng = random.Random(seed)
    written = []
    for serial in range(kernels):
        name, text = kernel(rng, serial)
        path = folder / f"competition_{serial // 51:02d}" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--kernels", type=int, default=816)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"{len(build(args.folder, args.kernels, args.seed))} files in {args.folder}")
