"""Install lines that would bring back an XRT-era torch_xla (text/installs.py): each place a
repository writes one is reported with what to install instead, and never changed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from xrt2pjrt.registry import Options, all_rules
from xrt2pjrt.text import installs, yaml as yaml_rewriter
from xrt2pjrt.recorder import todo_line
from text_migrate import migrate_tree

_RULE = "install-xrt-era-release"

TARGET = (2, 9)
ALL = Options(rules=frozenset(all_rules()), unsafe_fixes=True)  # every fix, unsafe ones too

FLAGGED = {
    # the seed issue's own install lines: nightlies of the XRT-era bucket
    "https://storage.googleapis.com/tpu-pytorch/wheels/tpuvm/torch_xla-nightly+20220802-cp38-cp38-linux_x86_64.whl": "tpu-pytorch bucket",
    "gs://tpu-pytorch/wheels/torch_xla-1.8-cp37-cp37m-linux_x86_64.whl": "tpu-pytorch bucket",
    "https://storage.googleapis.com/cloud-tpu-tpuvm-artifacts/wheels/libtpu-nightly/"
    "libtpu_nightly-0.1.dev20220518-py3-none-any.whl": "libtpu nightly",
    "torch_xla==1.13": "torch_xla 1.13, an XRT-era release",
    "torch-xla~=1.12.0": "torch_xla 1.12",
    "torch_xla[tpuvm]==2.0": "torch_xla 2.0",
    "torch_xla<2.1": "torch_xla 2.1 is older than the 2.9",
    "torch_xla[tpuvm]": "[tpuvm] extra",
    "torch_xla-nightly+20230501-cp310-cp310-linux_x86_64.whl": "nightly from 20230501",
    "gcr.io/tpu-pytorch/xla:r1.13_3.8_tpuvm": "gcr.io/tpu-pytorch registry",
    "gcr.io/tpu-pytorch/xla:nightly_3.8_tpuvm_20220802": "gcr.io/tpu-pytorch registry",
    "us-central1-docker.pkg.dev/tpu-pytorch-releases/docker/xla:r2.0.0_3.8_tpuvm": "torch_xla 2.0",
    "us-central1-docker.pkg.dev/tpu-pytorch-releases/docker/xla:r2.4.0_3.10_tpuvm": "2.4 is older than the 2.9",
    "https://storage.googleapis.com/pytorch-xla-releases/wheels/tpuvm/torch_xla-2.1.0-cp310-cp310-linux_x86_64.whl": "--target-version 2.1",
    "cloud-tpu-client==0.10": "cloud-tpu-client",
    "https://raw.githubusercontent.com/pytorch/xla/master/contrib/scripts/env-setup.py": "env-setup.py",
}
LEFT_ALONE = [
    "torch_xla",
    "torch_xla[tpu]",
    "torch_xla[tpu]~=2.9.0",
    "torch-xla==2.9.0",
    "torch_xla>=1.13",
    "torch_xla-nightly+20240601-cp310-cp310-linux_x86_64.whl",
    # a libtpu nightly built after the last XRT-era torch_xla: a PJRT-era one's pair
    "https://storage.googleapis.com/libtpu-nightly-releases/wheels/libtpu-nightly/libtpu_nightly-0.1.dev20241209+nightly-py3-none-any.whl",
    "numpy==1.2",
    "torch==1.13.0",
    "us-central1-docker.pkg.dev/tpu-pytorch-releases/docker/xla:r2.9.0_3.10_tpuvm",
    "python:3.10-slim",
]


@pytest.mark.parametrize("word, why", FLAGGED.items(), ids=list(FLAGGED))
def test_xrt_era_installs_are_named_with_what_to_install_instead(word, why):
    problem = installs.finding(word, TARGET)
    assert problem is not None and why in str(problem)
    assert "'torch_xla[tpu]~=2.9.0'" in str(problem)


@pytest.mark.parametrize("word", LEFT_ALONE)
def test_current_installs_and_other_packages_are_left_alone(word):
    assert installs.finding(word, TARGET) is None


def test_a_gpu_image_of_the_xrt_registry_is_told_the_last_gpu_release_not_a_tpu_image():
    # round 12: `docker run --gpus all gcr.io/tpu-pytorch/xla:r1.13_3.7_cuda_11.2` was told a TPU image
    problem = installs.finding("gcr.io/tpu-pytorch/xla:r1.13_3.7_cuda_11.2", TARGET)
    assert problem.do == "stay on torch_xla 2.8 for GPUs" and "no CUDA build" in problem.more
    assert problem.use.endswith("/xla:r2.7.0_3.10_cuda_12.6") and "tpuvm" not in str(problem)


def test_the_suggestion_follows_the_target_version():
    assert "'torch_xla[tpu]~=2.4.0'" in str(installs.finding("torch_xla==1.13", (2, 4)))
    assert installs.finding("torch_xla==2.4", (2, 4)) is None


NOTEBOOK = {
    "cells": [
        {
            "cell_type": "code",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": [
                "!pip install cloud-tpu-client==0.10 torch==1.9.0 "
                "https://storage.googleapis.com/tpu-pytorch/wheels/torch_xla-1.9-cp37-cp37m-linux_x86_64.whl\n",
                "%pip install torch_xla==1.9\n",
                "import torch_xla.core.xla_model as xm",
            ],
        },
    ],
    "metadata": {},
    "nbformat": 4,
    "nbformat_minor": 5,
}
TREE = {
    "requirements.txt": "numpy==1.24  # plotting\ntorch_xla [tpuvm] == 1.13 ; python_version < '3.9'\n"
    "-f https://storage.googleapis.com/tpu-pytorch/wheels/tpuvm/torch_xla-1.13-cp38.whl\n"
    "# torch_xla==1.12 was the one before\n",
    "requirements-dev.in": "pytest\ntorch-xla[tpu]~=2.9.0\n",
    "docker/Dockerfile": "FROM --platform=linux/amd64 gcr.io/tpu-pytorch/xla:r1.13_3.8_tpuvm AS base\n"
    "RUN pip3 install torch_xla[tpu]==2.0 \\\n    && pip3 install cloud-tpu-client\n",
    "setup_tpu.sh": "#!/bin/bash\nset -e\nsudo pip3 install https://storage.googleapis.com/tpu-pytorch/wheels/tpuvm/"
    "torch-nightly+20220802-cp38-cp38-linux_x86_64.whl\n",
    "README.md": "Install:\n\n```bash\npip install torch_xla==1.13\n```\n\nThen torch_xla==1.12 in prose is not a command.\n",
    "colab.ipynb": json.dumps(NOTEBOOK, indent=1) + "\n",
}
# (file, line) of every place a person must decide
EXPECTED = {
    ("requirements.txt", 2),
    ("requirements.txt", 3),
    ("docker/Dockerfile", 1),
    ("docker/Dockerfile", 2),
    ("docker/Dockerfile", 3),
    ("setup_tpu.sh", 3),
    ("README.md", 4),
}


def test_every_place_an_install_is_written_is_reported_and_no_install_is_changed(tmp_path):
    root = tmp_path / "repo"
    for name, text in TREE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    report = tmp_path / "report.json"  # of the preview: lines of the files as they are
    for mode in ("--report", "--write"):
        ran = subprocess.run(
            [
                sys.executable,
                "-m",
                "xrt2pjrt",
                "migrate",
                mode,
                *([str(report)] if mode == "--report" else []),
                str(root),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert ran.returncode == 0, ran.stderr

    entries = {Path(e["path"]).relative_to(root).as_posix(): e for e in json.loads(report.read_text())["files"]}
    found = {
        (name, item["range"]["start"]["line"])
        for name, e in entries.items()
        for item in e["manual"]
        if item["rule"] == "install-xrt-era-release"
    }
    notebook = {item["range"]["start"]["line"] for item in entries["colab.ipynb"]["manual"]}
    assert found - {f for f in found if f[0] == "colab.ipynb"} == EXPECTED
    assert len(notebook) == 2  # the `!pip` line (two items on it) and the `%pip` line
    assert entries["requirements.txt"]["kind"] == "requirements"
    # nothing is rewritten; scripts, Dockerfiles and notebooks' `!`/`%pip` lines get a TODO
    # line above each install to decide, documentation and requirements files keep every byte
    for name, text in TREE.items():
        written = (root / name).read_text()
        if name.endswith(".ipynb"):
            written, text = ("".join(json.loads(t)["cells"][0]["source"]) for t in (written, text))
        kept = "".join(line for line in written.splitlines(keepends=True) if "# TODO(xrt2pjrt)" not in line)
        assert kept == text, f"{name} was changed"
        assert (written == text) == (name in ("requirements.txt", "requirements-dev.in", "README.md")), name


def test_install_lines_in_jsonnet_are_reported_as_its_variables_are():
    from xrt2pjrt.text import jsonnet

    config = (
        "{\n  setup: 'pip install torch_xla[tpuvm]==1.13',\n  image: 'gcr.io/tpu-pytorch/xla:r1.13_3.8_tpuvm',\n"
        "  command: ['pip3', 'install', 'cloud-tpu-client'],\n  env: { XRT_TPU_CONFIG: 'localservice;0;localhost:51011' },\n}\n"
    )
    outcome = jsonnet.rewrite(config, Options(rules=frozenset(all_rules())))
    assert outcome.text == config
    assert [(f.rule, f.line) for f in outcome.manual] == [
        ("install-xrt-era-release", 2),
        ("install-xrt-era-release", 3),
        ("install-xrt-era-release", 4),
        ("env-shell-xrt-tpu-config", 5),
    ]


# JAX and TensorFlow set-ups install libtpu nightlies and cloud-tpu-client too, and
# TensorFlow's Colab notebooks read COLAB_TPU_ADDR: PyTorch's advice there was noise
# (ml-testing-accelerators' JAX and TensorFlow configs got TODO lines). (kind, text, the lines
# a PyTorch file of the same lines gets a change or an item at)
OTHER_FRAMEWORKS = [
    (
        "shell",
        '#!/bin/bash\npip install "jax[tpu]" libtpu-nightly -f https://storage.googleapis.com/jax-releases/'
        'libtpu_releases.html\npython3 train.py --tpu "$COLAB_TPU_ADDR"\n',
        [2, 3],
    ),
    (
        "dockerfile",
        "FROM tensorflow/tensorflow:2.8.0\nRUN pip3 install cloud-tpu-client pyyaml\nENV TPU_ADDR=${COLAB_TPU_ADDR}\n",
        [2, 3],
    ),
    (
        "jsonnet",
        '{\n  tpu: "grpc://" + std.extVar("COLAB_TPU_ADDR"),\n  setup: "pip install cloud-tpu-client tensorflow",\n}\n',
        [2, 3],
    ),
    (
        "yaml",
        "steps:\n- run: pip install libtpu-nightly 'jax[tpu]'\n  env:\n    COLAB_TPU_ADDR: 10.0.0.2:8470\n    A: b\n",
        [2, 4],
    ),
    ("markdown", "```bash\npip install 'jax[tpu]' libtpu-nightly\nexport COLAB_TPU_ADDR=10.0.0.2:8470\n```\n", [2, 3]),
    ("requirements", "tensorflow==2.8\ncloud-tpu-client==0.10\n", [2]),
    (
        "notebook",
        json.dumps(
            {
                "cells": [
                    {
                        "cell_type": "code",
                        "metadata": {},
                        "execution_count": None,
                        "outputs": [],
                        "source": ["!pip install cloud-tpu-client\n", "import tensorflow as tf\n"],
                    }
                ],
                "metadata": {},
                "nbformat": 4,
                "nbformat_minor": 5,
            },
            indent=1,
        ),
        [9],
    ),
]


@pytest.mark.parametrize("kind, text, asked", OTHER_FRAMEWORKS, ids=[c[0] for c in OTHER_FRAMEWORKS])
def test_tpu_set_ups_of_other_frameworks_get_no_pytorch_advice_and_pytorch_files_get_all(kind, text, asked):
    from xrt2pjrt import rewriters

    module = rewriters.module_for(kind)
    every = Options(rules=frozenset(all_rules()))
    outcome = module.rewrite(text, every)
    assert outcome.text == text and outcome.changes == [] and outcome.manual == []
    # The same lines in a file that uses torch_xla: every one is found, as before.
    if kind == "notebook":
        torch = text.replace("import tensorflow as tf", "import torch_xla")
    elif kind == "jsonnet":
        torch = text.replace("tensorflow", "torch_xla[tpu]~=2.9.0")
    else:
        torch = (
            text.replace("tensorflow", "torch").replace("'jax[tpu]'", "torch_xla").replace('"jax[tpu]"', "torch_xla")
        )
    assert torch != text
    outcome = module.rewrite(torch, every)
    assert sorted({f.line for f in outcome.manual + outcome.changes}) == asked, outcome


def test_an_xrt_era_container_image_is_reported():
    # GKE TPU jobs and Compose files pin their torch_xla through the image.
    text = (
        "spec:\n  template:\n    spec:\n      containers:\n      - name: train\n"
        "        image: gcr.io/tpu-pytorch/xla:r1.13_3.8_tpuvm\n        command: [\"python3\", \"train.py\"]\n"
    )
    outcome = yaml_rewriter.rewrite(text, ALL)
    image = installs.finding("gcr.io/tpu-pytorch/xla:r1.13_3.8_tpuvm", (2, 9))
    assert outcome.text == text.replace(
        "        image:", todo_line(image.do, "install-xrt-era-release", "        ") + "        image:"
    )
    assert [(m.rule, m.line) for m in outcome.manual] == [("install-xrt-era-release", 6)]


@pytest.mark.parametrize(
    "code, asked",
    [
        ("import torch_xla.core.xla_model as xm\n", ["torch 1.13 fits only an XRT-era torch_xla"]),
        ("import torch\n", []),  # a PyTorch project without torch_xla may pin what it likes
    ],
)
def test_a_lone_torch_1_pin_is_reported_in_a_project_that_uses_torch_xla(tmp_path, code, asked):
    items = migrate_tree(tmp_path, {"train.py": code, "requirements.txt": "torch==1.13.1\nnumpy\n"}, _RULE)
    assert [m.split(":")[0] for m in items.get("requirements.txt", [])] == asked


def test_a_torch_pin_beside_a_torch_xla_install_is_said_once_with_it(tmp_path):
    items = migrate_tree(
        tmp_path,
        {"train.py": "import torch_xla\n", "requirements.txt": "torch==1.13.0\ntorch_xla[tpuvm]==1.13\n"},
        _RULE,
    )
    assert [m.split(":")[0] for m in items["requirements.txt"]] == ["torch_xla 1.13, an XRT-era release"]


def test_a_torch_pin_on_a_line_of_its_own_beside_an_xrt_era_install_is_asked_too(tmp_path):
    # round 12: a kernel's install cells, torch pinned again with torchvision in a cell of its own
    wheel = "https://storage.googleapis.com/tpu-pytorch/wheels/colab/1.9/torch_xla-1.9-cp37-cp37m-linux_x86_64.whl"
    items = migrate_tree(
        tmp_path,
        {
            "setup.sh": f"pip install cloud-tpu-client==0.10 torch==1.9.0 {wheel}\npip install torchvision==0.10.0 torch==1.9.0\n",
            "kernel.py": "!pip install torch==1.9.0 torchvision==0.10.0\nimport torch_xla.core.xla_model as xm\n",
        },
        _RULE,
    )
    assert [m.split(":")[0] for m in items["setup.sh"]] == [
        "a wheel from the XRT-era tpu-pytorch bucket (torch_xla 1.x/2.0 builds)",
        "torch 1.9 fits only an XRT-era torch_xla",
    ]
    assert [m.split(":")[0] for m in items["kernel.py"]] == ["torch 1.9 fits only an XRT-era torch_xla"]


# The false alarms of issue 32, in shapes of their own: a torch 1.x pin beside a TPU backend,
# for something that runs no torch_xla.
@pytest.mark.parametrize(
    "name, text, asked",
    [
        ("Dockerfile", "FROM nvcr.io/nvidia/pytorch:20.03-py3\nRUN pip install torch==1.4.0\n", []),
        (
            "lint.yml",
            "steps:\n  - run: pip install torch==1.10 -f https://download.pytorch.org/whl/cpu/torch_stable.html\n",
            [],
        ),
        ("old_ckpts.sh", "#!/bin/sh\npip install 'torch==1.5' --quiet\npython make_ckpt.py\n", []),
        (
            "tpu_env.sh",
            "#!/bin/sh\n# the TPU VM's environment\npip install 'torch==1.5' --quiet\n",
            ["torch 1.5 fits only an XRT-era torch_xla"],
        ),
        ("requirements.txt", "torch==1.13.1\nnumpy\n", ["torch 1.13 fits only an XRT-era torch_xla"]),
    ],
)
def test_a_lone_torch_1_pin_is_reported_where_the_file_shows_it_is_the_tpus(tmp_path, name, text, asked):
    items = migrate_tree(tmp_path, {"train.py": "import torch_xla.core.xla_model as xm\n", name: text}, _RULE)
    assert [m.split(":")[0] for m in items.get(name, [])] == asked


@pytest.mark.parametrize(
    "name, text, asked",
    [
        # a script that only creates the TPU VMs of a torch_xla project, on images of the XRT years
        (
            "create_vm.sh",
            "gcloud alpha compute tpus tpu-vm create t1 --accelerator-type=v3-8 --version=v2-alpha\n",
            ["a TPU VM image of the XRT years"],
        ),
        ("pod.sh", "RUNTIME_VERSION=tpu-vm-v4-base\n", ["a TPU VM image of the XRT years"]),
        (
            "client.sh",
            "gcloud compute instances create c --image=debian-9-torch-xla-v20200818 --image-project=ml-images\n",
            ["a Compute Engine image for a TPU node's client VM"],
        ),
        # a JAX benchmark beside the PyTorch code creates its TPU VMs alike; a conda env of that name
        ("bench_jax.sh", "RUNTIME_VERSION=v2-alpha-tpuv4\npip install t5x jax\n", []),
        ("run.sh", "conda activate torch-xla\n", []),
        ("setup.sh", "gcloud compute tpus tpu-vm create t1 --version=tpu-ubuntu2204-base\n", []),
    ],
)
def test_a_tpu_vm_image_of_the_xrt_years_is_reported_in_a_torch_xla_project(tmp_path, name, text, asked):
    items = migrate_tree(tmp_path, {"train.py": "import torch_xla.core.xla_model as xm\n", name: text}, _RULE)
    assert [m.split(" (")[0].split(":")[0] for m in items.get(name, [])] == asked


@pytest.mark.parametrize(
    "line",
    [
        # issue 32, in shapes of their own: lines that install nothing
        "# then the libtpu-nightly wheel that matches it\n",
        "pip3 uninstall -y torch_xla libtpu-nightly cloud-tpu-client\n",
        "conda remove torch_xla==1.9\n",
    ],
)
def test_a_comment_or_an_uninstall_is_no_install(line):
    from xrt2pjrt.text import shell

    assert not shell.rewrite("#!/bin/bash\n# sets up torch\n" + line, ALL).manual
    assert shell.rewrite("#!/bin/bash\n# sets up torch\npip3 install torch_xla==1.9\n", ALL).manual


# Issue 32's third count, in a shape of its own: a monorepo whose src/ uses torch_xla, beside
# sub-projects that pin an old torch and transformers for code that never touches it.
_MONOREPO = {
    "src/speedy/trainer.py": "import torch_xla.core.xla_model as xm\nfrom transformers import Trainer\n\nDEVICE = xm.xla_device()\n",
    "requirements.txt": "torch==1.13.1\ntransformers==4.31.0\n",
    "requirements/requirements-tpu.txt": "torch==1.12.0\n",  # no code of its own: the root's
    "contrib/summarize/run_summary.py": "import torch\nfrom transformers import pipeline\n",
    "contrib/summarize/requirements.txt": "torch==1.6.0\ntransformers==3.5.1\n",
    "contrib/summarize/pinned/requirements.txt": "torch==1.7.1\ntransformers==4.0.0\n",
    # a GPU notebook beside the TPU trainer (the final held-back count): its installs serve its cells
    "src/speedy/gpu_colab.ipynb": json.dumps(
        {
            "cells": [
                {
                    "cell_type": "code",
                    "metadata": {},
                    "outputs": [],
                    "execution_count": None,
                    "source": "!pip install torch==1.6.0 transformers==3.0.2\nimport os\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\n",
                }
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 4,
        }
    ),
}


@pytest.mark.parametrize("rule", ["install-xrt-era-release", "install-library-pin"])
def test_a_pin_is_reported_only_where_the_code_of_its_folder_uses_torch_xla(tmp_path, rule):
    items = migrate_tree(tmp_path, _MONOREPO, rule)
    reported = sorted(path for path, said in items.items() if said)
    root = ["requirements.txt", "requirements/requirements-tpu.txt"]
    assert reported == (root if rule == "install-xrt-era-release" else root[:1])  # (that one pins no library)


@pytest.mark.parametrize(
    "code, pin, asked",
    [
        # migrated to torch_xla.device() (2.3) and torch_xla.sync() (2.5): 2.6 has both
        ("xm.mark_step()\nd = xm.xla_device()\n", "torch_xla[tpu]==2.6.0", []),
        ("xm.mark_step()\n", "torch_xla[tpu]==2.4.0", ["torch_xla 2.4 is older than the 2.5"]),
        # FSDP's mark_step_on_finalization= becomes sync_on_finalization= (2.8)
        (
            "m = FSDP(m, mark_step_on_finalization=True)\nfrom torch_xla.distributed.fsdp import "
            "XlaFullyShardedDataParallel as FSDP\n",
            "torch-xla==2.7.0",
            ["torch_xla 2.7 is older than the 2.8"],
        ),
        ("print(xm.get_ordinal())\n", "torch_xla==1.13", ["torch_xla 1.13, an XRT-era release"]),
    ],
)
def test_a_release_without_xrt_is_reported_only_below_what_the_migrated_code_needs(tmp_path, code, pin, asked):
    code = "import torch_xla.core.xla_model as xm\n" + code
    items = migrate_tree(tmp_path, {"train.py": code, "requirements.txt": f"torch==2.6.0\n{pin}\n"}, _RULE)
    assert [m.split(" whose")[0].split(":")[0] for m in items.get("requirements.txt", [])] == asked


@pytest.mark.parametrize(
    "line, asked",
    [
        # issue 32's held-back count: a notebook's one pip line fetching the TPU Node's client
        # and an XRT-era wheel was asked twice; the wheel's item, with the line to put in, is the one
        (
            "pip install cloud-tpu-client==0.10 https://storage.googleapis.com/tpu-pytorch/wheels/torch_xla-1.8-cp37-cp37m-linux_x86_64.whl\n",
            ["install torch and torch_xla 2.9.0"],
        ),
        ("pip install libtpu-nightly torch_xla==1.13\n", ["install torch and torch_xla 2.9.0"]),
        # on a line of its own, the client is still its own item
        ("pip install cloud-tpu-client==0.10\n", ["remove it: TPU VMs need none"]),
    ],
)
def test_a_line_installing_a_release_and_its_companions_is_one_item(line, asked):
    from xrt2pjrt.text import shell

    assert [
        m.message for m in shell.rewrite("#!/bin/bash\nexport PJRT_DEVICE=TPU  # for torch_xla\n" + line, ALL).manual
    ] == asked


_FETCH_SETUP = "curl -s https://example.com/contrib/scripts/env-setup.py -o pytorch-xla-env-setup.py"
_RUN_SETUP = "python3 pytorch-xla-env-setup.py --version 1.7 --apt-packages libomp5"


def _one_cell_each(sources: list[str]) -> str:
    cells = [
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": c} for c in sources
    ]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)


@pytest.mark.parametrize(
    "kind, text, asked",
    [
        ("shell", f"{_FETCH_SETUP}\n{_RUN_SETUP}\n", [(None, 2)]),  # the run installs: the download repeats it
        ("shell", f"{_FETCH_SETUP}\n", [(None, 1)]),  # a download alone is the only sign
        ("notebook", _one_cell_each([f"!{_FETCH_SETUP}", f"!{_RUN_SETUP}\nimport torch_xla"]), [(2, 1)]),
    ],
)
def test_the_set_up_script_is_one_item_at_its_run(kind, text, asked):
    from xrt2pjrt import rewriters

    outcome = rewriters.module_for(kind).rewrite(text, Options(rules=frozenset(all_rules())))
    assert [
        (item.cell, item.line if item.cell is None else item.cell_range.start_line) for item in outcome.manual
    ] == asked


def test_a_wheel_named_in_a_variable_is_asked_where_it_is_named(tmp_path):
    # round 12: a Colab set-up script named the bucket and the wheels in variables, then
    # installed "$TORCH_XLA_WHEEL"; the bucket's folder alone names no release
    script = (
        'DIST_BUCKET="gs://tpu-pytorch/wheels"\nTORCH_XLA_WHEEL="torch_xla-1.9-cp37-cp37m-linux_x86_64.whl"\n'
        'gsutil cp "$DIST_BUCKET/$TORCH_XLA_WHEEL" .\npip install "$TORCH_XLA_WHEEL"\n'
    )
    items = migrate_tree(tmp_path, {"setup.sh": script, "train.py": "import torch_xla\n"}, _RULE)
    assert [m.split(":")[0] for m in items["setup.sh"]] == ["torch_xla 1.9, an XRT-era release"]


def test_pips_output_pasted_under_its_command_is_no_install():
    # round 13: a notebook exported to Markdown keeps each cell's output as an indented block
    from xrt2pjrt.mixed import markdown

    doc = (
        "Install it:\n\n```shell\n!pip install cloud-tpu-client==0.10 torch_xla-1.9-cp37-cp37m-linux_x86_64.whl\n```\n\n"
        "    Collecting torch-xla==1.9\n      Downloading https://example.com/torch_xla-1.9-cp37-cp37m-linux_x86_64.whl\n"
        "    \x1b[K |####| 149.9 MB\n    [?25hCollecting cloud-tpu-client==0.10\n"
        "    Successfully installed cloud-tpu-client-0.10 torch-xla-1.9\n"
    )
    assert [item.line for item in markdown.rewrite(doc, ALL).manual if item.rule == _RULE] == [4]
