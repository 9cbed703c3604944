"""api-lightning-tpu-cores beyond its examples: round 15's misses (a Kaggle solution's
`Trainer(num_tpu_cores=8)` of Lightning 0.7, with no torch_xla word in its file), each spelling of
the Trainer, a call over several lines, and values it cannot pass on as they are."""

import subprocess
import sys

import pytest

from python_migrate import migrate, text


@pytest.mark.parametrize(
    "imports, call",
    [
        ("import pytorch_lightning as pl", "pl.Trainer"),
        ("from pytorch_lightning import Trainer", "Trainer"),
        ("from pytorch_lightning.trainer import Trainer", "Trainer"),
        ("import lightning as L", "L.Trainer"),
        ("from lightning.pytorch import Trainer", "Trainer"),
    ],
)
def test_each_spelling_of_the_trainer(imports, call):
    source = f"{imports}\n\ntrainer = {call}(gpus=0, num_tpu_cores=8, max_epochs=5)\n"
    assert text(source) == source.replace("num_tpu_cores=8", 'accelerator="tpu", devices=8')


def test_a_call_over_several_lines_keeps_its_layout():
    source = "import pytorch_lightning as pl\n\ntrainer = pl.Trainer(\n    max_epochs=3,\n    tpu_cores=[1],\n)\n"
    assert text(source) == source.replace("tpu_cores=[1]", 'accelerator="tpu", devices=[1]')


@pytest.mark.parametrize(
    "arguments",
    [
        "tpu_cores=cfg.tpu_cores",  # None on runs without a TPU: accelerator='tpu' would ask for one
        "tpu_cores=8, accelerator='ddp'",  # 1.x's accelerator meant a strategy
        "tpu_cores=8, devices=1",
    ],
)
def test_a_value_it_cannot_pass_on_as_it_is_is_reported(arguments):
    source = f"import pytorch_lightning as pl\n\ntrainer = pl.Trainer({arguments})\n"
    out = migrate(source)
    assert [(f.rule, f.line) for f in out.manual] == [("api-lightning-tpu-cores", 3)] and not out.changes


@pytest.mark.parametrize(
    "before, after",
    [
        ("tpu_cores=None, max_epochs=1", "max_epochs=1"),  # the default: no TPU
        ("accelerator='tpu', tpu_cores=8", "accelerator='tpu', devices=8"),
    ],
)
def test_the_default_goes_and_a_tpu_accelerator_takes_devices(before, after):
    source = f"import pytorch_lightning as pl\n\ntrainer = pl.Trainer({before})\n"
    assert text(source) == source.replace(before, after)


def test_another_libraries_trainer_is_left_alone():
    source = "from transformers import Trainer\n\ntrainer = Trainer(model, tpu_cores=8)\n"
    assert text(source) == source


def test_a_file_without_a_torch_xla_word_is_migrated(tmp_path):
    (tmp_path / "train_tpu.py").write_text("import pytorch_lightning as pl\n\npl.Trainer(num_tpu_cores=8)\n")
    done = subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", "migrate", "--write", str(tmp_path)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "train_tpu.py").read_text().endswith('pl.Trainer(accelerator="tpu", devices=8)\n')
