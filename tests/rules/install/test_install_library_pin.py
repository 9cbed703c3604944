"""install-library-pin beyond its examples: each library's table entry against the calls it
names, targets that still have them, every pin operator, a requirements file."""

import pytest

from xrt2pjrt.python.api_surface import lacks
from xrt2pjrt.registry import Options, all_rules
from xrt2pjrt.rules.install.install_library_pin import LIBRARIES, stale
from xrt2pjrt.text import requirements
from text_migrate import migrate_tree

_CALLED = {
    "xm.xrt_world_size()": "torch_xla.core.xla_model.xrt_world_size",
    "xm.get_ordinal()": "torch_xla.core.xla_model.get_ordinal",
    "xr.using_pjrt()": "torch_xla.runtime.using_pjrt",
}


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_each_entry_names_calls_its_torch_xla_release_removed(library):
    for fixed in LIBRARIES[library]:
        for call in fixed.calls.split(" and "):
            gone = lacks(_CALLED[call], fixed.gone_in)
            assert gone is not None and gone.history == f"removed in {fixed.gone_in[0]}.{fixed.gone_in[1]}"
            assert lacks(_CALLED[call], (fixed.gone_in[0], fixed.gone_in[1] - 1)) is None


def test_a_target_that_still_has_the_calls_leaves_the_pin():
    assert stale("accelerate==0.27.2", (2, 6)) is None and stale("accelerate==0.27.2", (2, 7)) is not None


def test_lightning_before_2_5_is_told_the_release_that_fixes_both():
    library, fixed = stale("pytorch-lightning==2.1.3", (2, 9))
    assert (library, fixed.release) == ("pytorch-lightning", (2, 5, 3))
    assert stale("lightning==2.1.3", (2, 6))[1].release == (2, 5, 0)  # 2.6 still has xm.xrt_world_size


@pytest.mark.parametrize(
    "word, stale_pin",
    [
        ("transformers==4.51.3", True),
        ("transformers==4.52.0", False),
        ("transformers~=4.40", False),
        ("transformers~=4.51.0", True),
        ("transformers<4.52", True),
        ("transformers<4.53", False),
        ("transformers<=4.51.9", True),
        ("transformers>=4.30", False),
        ("transformers[torch]==4.38.2", True),
        ("sentence-transformers==2.2.0", False),
    ],
)
def test_every_pin_operator(word, stale_pin):
    assert (stale(word, (2, 9)) is not None) == stale_pin


@pytest.mark.parametrize(
    "word, stale_pin",
    [
        # issue 32, a held-back project: transformers 2.2 (2019) calls no torch_xla, 2.9's Trainer does
        ("transformers==2.2.0", False),
        ("transformers<2.9", False),
        ("transformers~=2.8.0", False),
        ("transformers==2.9.0", True),
        ("transformers<=2.9.0", True),
        ("pytorch-lightning==0.6.0", False),
        ("pytorch-lightning==0.7.1", True),
    ],
)
def test_a_release_from_before_the_library_called_torch_xla_is_left(word, stale_pin):
    assert (stale(word, (2, 9)) is not None) == stale_pin


def test_a_requirements_file():
    text = "torch~=2.9.0\ntorch_xla[tpu]~=2.9.0\naccelerate==0.34.2  # trainer\ntransformers>=4.52\n"
    outcome = requirements.rewrite(text, Options(rules=frozenset(all_rules())))
    assert [(f.rule, f.line, f.message) for f in outcome.manual] == [
        ("install-library-pin", 3, "pin accelerate>=1.7.0")
    ]


def test_a_release_checked_out_of_git_and_installed_from_there_is_a_pin(tmp_path):
    # round 12: a research repository's set-up cloned transformers and installed tag v4.20.1;
    # a clone by tag for its example scripts installs nothing of it
    clone = "git clone https://github.com/huggingface/transformers.git\n"
    items = migrate_tree(
        tmp_path,
        {
            "setup.sh": clone + "cd transformers; git checkout tags/v4.20.1; pip install -e .\n",
            "examples.sh": "git clone -b v4.24.0 https://github.com/huggingface/transformers.git\n",
            "train.py": "import torch_xla\nfrom transformers import Trainer\n",
        },
        "install-library-pin",
    )
    assert [m.split(":")[0] for m in items["setup.sh"]] == ["git checkout tags/v4.20.1"]
    assert items.get("examples.sh", []) == []


@pytest.mark.parametrize(
    "code, setup, reported",
    [
        ("from transformers import AutoModel\n", "", False),  # a model's code calls no torch_xla
        ("from transformers import Trainer, TrainingArguments\n", "", True),
        ("from transformers import AutoModel\n", "python xla_spawn.py --num_cores 8 run_glue.py\n", True),
        # round 14: Lightning's Trainer beside a transformers model is no transformers Trainer
        ("from transformers import RobertaModel\nfrom pytorch_lightning import Trainer\n", "", False),
        ("from transformers import (\n    AutoModel,\n    Trainer,\n)\n", "", True),
        ("import transformers\ntrainer = transformers.Trainer(model)\n", "", True),
    ],
)
def test_a_transformers_pin_is_reported_where_its_trainer_runs(tmp_path, code, setup, reported):
    # round 13: a TPU project pins transformers 4.21 for its models and trains with Lightning
    items = migrate_tree(
        tmp_path,
        {
            "setup.sh": "pip install 'torch_xla[tpu]~=2.9.0' transformers==4.21.1\n" + setup,
            "train.py": "import torch_xla\n" + code,
        },
        "install-library-pin",
    )
    assert bool(items.get("setup.sh")) == reported


def test_code_that_uses_what_the_pinned_release_lacks_is_told_the_replacements(tmp_path):
    # round 14: a library pinning transformers 3.0 imports is_torch_tpu_available; round 15: a
    # script passes evaluation_strategy=; transformers 4.52, the release the pin moves to, has neither
    files = {
        "requirements.txt": "torch_xla\ntransformers==3.0.2\n",
        "learner.py": "import torch_xla\nfrom transformers import Trainer\n",
    }
    told = migrate_tree(tmp_path / "plain", files, "install-library-pin")["requirements.txt"]
    files["learner.py"] += "from transformers.file_utils import is_torch_tpu_available\n"
    files["train.py"] = "args = TrainingArguments('out', evaluation_strategy='epoch')\n"
    respelt = migrate_tree(tmp_path / "gone", files, "install-library-pin")["requirements.txt"]
    assert len(told) == len(respelt) == 1 and "lacks" not in told[0]
    assert respelt[0].endswith(
        "The code uses evaluation_strategy and is_torch_tpu_available, which that release lacks: "
        "use eval_strategy and is_torch_xla_available"
    )
