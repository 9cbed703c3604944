"""manual-saved-numpy beyond its examples: a checkpoint is reported where what it holds is
shown to be numpy's, and the premise, that torch.load refuses those files, holds for the
installed torch."""

import io

import pytest

from python_migrate import migrate

# (what a checkpoint dict holds beside the weights, reported), in the shapes of XRT-era trainers
HELD = [
    ("np.concatenate(preds)", True),  # the validation predictions, kept for an out-of-fold blend
    ("np.random.get_state()", True),  # a resume's RNG states
    ("feats.cpu().numpy()", True),  # extracted features
    ("xm.mesh_reduce('auc', auc, np.mean)", True),
    ("best", True),  # bound to the reduce below, in the loop
    ("loss.item()", False),
    ("float(best)", False),
    ("epoch", False),
    ("optimizer.state_dict()", False),
    ("scores", False),  # a parameter: the text shows nothing of it
]


@pytest.mark.parametrize("held, reported", HELD)
def test_a_checkpoint_holding_numpys_values_is_reported_at_its_save(held, reported):
    source = (
        "import numpy as np\nimport torch\nimport torch_xla.core.xla_model as xm\n\n"
        "def train(model, optimizer, scores, preds, feats, loss, auc):\n"
        "    for epoch in range(3):\n"
        f"        torch.save({{'model': model.state_dict(), 'held': {held}}}, 'best.pth')\n"
        "        best = xm.mesh_reduce('best', auc, np.mean)\n"
    )
    assert [item.rule for item in migrate(source).manual] == ["manual-saved-numpy"] * reported


def test_a_helper_that_saves_what_it_is_handed_is_not_reported():
    source = "import torch_xla.core.xla_model as xm\n\ndef save(obj, path):\n    xm.save(obj, path)\n"
    assert not migrate(source).manual


def test_before_2_6_nothing_is_reported():
    source = "import numpy as np\nimport torch\nimport torch_xla\n\ntorch.save({'p': np.zeros(3)}, 'p.pth')\n"
    assert [item.rule for item in migrate(source).manual] == ["manual-saved-numpy"]
    assert not migrate(source, target_version=(2, 5)).manual


@pytest.mark.parametrize("value", ["array", "float64", "rng state"])
def test_torch_load_refuses_a_checkpoint_holding_numpys_values(value):
    torch = pytest.importorskip("torch", reason="torch is an extra: the premise is checked where it is installed")
    np = pytest.importorskip("numpy")
    held = {"array": np.zeros(3), "float64": np.float64(0.5), "rng state": np.random.get_state()}[value]
    saved = io.BytesIO()
    torch.save({"model": {"w": torch.ones(2)}, "held": held, "loss": 0.25}, saved)
    saved.seek(0)
    with pytest.raises(Exception, match="Weights only load failed"):
        torch.load(saved)
    saved.seek(0)
    assert torch.load(saved, weights_only=False)["loss"] == 0.25
