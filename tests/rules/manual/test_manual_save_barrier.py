"""manual-save-barrier beyond its examples: xm.save handed on as a function is reported, as
a call of it is, where the file reads a saved file after it."""

import pytest

from python_migrate import migrate

_SAVE = (
    "import torch_xla.core.xla_model as xm\n\n"
    "class Runner:\n    def export(self, out):\n        self.model.save_pretrained(out, save_function=xm.save)\n"
    "        self.tokenizer.save_pretrained(out)\n"
)


@pytest.mark.parametrize(
    "after, reported",
    [
        # issue 32, in a shape of its own: a trainer's export, whose readers the file never runs
        ("", False),
        ("    def train(self, out):\n        self.export(out)\n        xm.rendezvous('exported')\n", False),
        (
            "    def reload(self, out):\n        self.export(out)\n        self.model = Model.from_pretrained(out)\n",
            True,
        ),
    ],
)
def test_xm_save_handed_on_is_reported_where_the_file_reads_after_it(after, reported):
    out = migrate(_SAVE + after)
    assert [item.rule for item in out.manual] == ["manual-save-barrier"] * reported


@pytest.mark.parametrize(
    "guard, reported",
    [
        # issue 32, a held-back project: the master saves, sleeps, and loads; XRT's save would have
        # waited there for replicas that never came, so nothing relied on its barrier
        ("if xm.is_master_ordinal():", False),
        ("if xm.get_ordinal() == 0:", False),
        ("if epoch % 5 == 0:", True),
    ],
)
def test_a_save_only_the_master_makes_never_had_the_barrier(guard, reported):
    source = (
        "import time\nimport torch\nimport torch_xla.core.xla_model as xm\n\n"
        f"def _mp_fn(index, model, epoch):\n    {guard}\n        xm.save(model.state_dict(), 'w.bin')\n"
        "    time.sleep(3)\n    model.load_state_dict(torch.load('w.bin'))\n"
    )
    assert [item.rule for item in migrate(source).manual] == ["manual-save-barrier"] * reported


def test_a_notebook_that_spawns_nothing_saves_in_its_one_process():
    # round 13: single-core kernels save, then read the file back, in the one process they run
    head = "import torch\nimport torch_xla.core.xla_model as xm\n\n"
    assert not migrate(head + "xm.save(x, 'x.pt')\ny = torch.load('x.pt')\n", notebook=True).manual
    train = "def train(fold):\n    xm.save(m, f'm{fold}.bin')\n    m.load_state_dict(torch.load(f'm{fold}.bin'))\n\n"
    assert not migrate(head + train + "for fold in range(5):\n    train(fold)\n", notebook=True).manual
    # a module of functions alone serves replicas another file may spawn; a snippet, a program it does not show
    assert [m.rule for m in migrate(head + train, notebook=True).manual] == ["manual-save-barrier"]
    assert [m.rule for m in migrate(head + "xm.save(x, 'x.pt')\ny = torch.load('x.pt')\n").manual] == [
        "manual-save-barrier"
    ]
