"""manual-xla-dist beyond its examples: a command that starts xla_dist from Python, and prose
that only names it."""

import pytest

from python_migrate import migrate


@pytest.mark.parametrize(
    "line, reported",
    [
        ("os.system('python3 -m torch_xla.distributed.xla_dist --tpu=p -- python3 t.py')\n", True),
        ("cmd = ['python3', '-m', 'torch_xla.distributed.xla_dist', '--tpu=p']\n", True),
        ("'''Launch with python -m torch_xla.distributed.xla_dist.'''\n", False),  # prose
        ("name = 'torch_xla.distributed.xla_multiprocessing'\n", False),
    ],
)
def test_a_command_that_starts_xla_dist_from_python_is_reported(line, reported):
    out = migrate("import os\nimport torch_xla\n\n" + line)
    assert [item.rule for item in out.manual] == ["manual-xla-dist"] * reported
