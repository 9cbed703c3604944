"""manual-seeded-replicas where the spawn is in another module: the training script's _mp_fn,
which a launcher (transformers' xla_spawn.py, a project's own) imports and spawns."""

import json

from cli_runner import invoke
from python_migrate import migrate

TRAIN = """\
import torch
import torch_xla.core.xla_model as xm


def build(device):
    torch.manual_seed(0)
    return Net().to(device)


def _mp_fn(index):
    model = build(xm.xla_device())
"""
LAUNCHER = """\
import torch_xla.distributed.xla_multiprocessing as xmp
from train import _mp_fn

if __name__ == '__main__':
    xmp.spawn(_mp_fn)
"""


def test_the_seed_in_what_mp_fn_calls_is_reported_when_another_module_spawns_it(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "launch.py").write_text(LAUNCHER)
    result = invoke(["migrate", str(tmp_path), "--output-format", "json"])
    items = [
        (f["path"].rsplit("/", 1)[-1], m["rule"], m["range"]["start"]["line"])
        for f in json.loads(result.stdout)["files"]
        for m in f["manual"]
    ]
    assert ("train.py", "manual-seeded-replicas", 6) in items


def test_a_file_that_spawns_something_else_is_read_by_its_own_spawn():
    outcome = migrate("""\
        import torch
        import torch_xla.distributed.xla_multiprocessing as xmp

        def _mp_fn(index):
            torch.manual_seed(0)
            model = Net().to(device)

        def other(index):
            pass

        xmp.spawn(other)
        """)
    assert not [f for f in outcome.manual if f.rule == "manual-seeded-replicas"]


def test_a_helper_no_mp_fn_reaches_is_left_alone():
    outcome = migrate("""\
        import torch
        import torch_xla.core.xla_model as xm

        def seeded_model():
            torch.manual_seed(0)
            return Net().to(xm.xla_device())

        def _mp_fn(index):
            pass
        """)
    assert not [f for f in outcome.manual if f.rule == "manual-seeded-replicas"]
