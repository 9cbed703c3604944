"""launch-xla-spawn beyond its examples: a project's own copy of xla_spawn.py."""

import pytest

from text_migrate import migrate_tree

# A copy of transformers' launcher, in its shape: --num_cores handed to the spawn as nprocs.
_XLA_SPAWN = (
    "import importlib\nimport sys\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
    "def main(args):\n    mod = importlib.import_module(args.training_script)\n"
    "    xmp.spawn(mod._mp_fn, args=(), nprocs=args.num_cores)\n"
)
_LAUNCH = "```bash\npython examples/xla_spawn.py --num_cores 8 examples/run_glue.py --do_train\n```\n"


@pytest.mark.parametrize(
    "launcher, asked",
    [
        ("examples/xla_spawn.py", 0),  # the run migrates the copy's spawn (nprocs=None for 8): the line runs
        ("examples/train.py", 1),  # xla_spawn.py is not in the run: transformers' own, which passes nprocs=8
    ],
)
def test_a_launch_is_reported_unless_the_project_migrates_its_own_copy(tmp_path, launcher, asked):
    items = migrate_tree(tmp_path, {launcher: _XLA_SPAWN, "docs/run.md": _LAUNCH}, "launch-xla-spawn")
    assert len(items.get("docs/run.md", [])) == asked
