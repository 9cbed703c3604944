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


def test_text_told_to_a_person_is_no_command():
    """issue 32's ninth round: a project's copy of xla_dist.py shows its usage in argparse's epilog."""
    source = (
        "import argparse\nimport logging\nimport subprocess\nimport torch_xla\n\n"
        "parser = argparse.ArgumentParser(\n    epilog=('Usage example: python3 -m'\n"
        "            ' torch_xla.distributed.xla_dist --tpu=[TPU_NAME] -- python3 train'))\n"
        "parser.add_argument('--pod', help='the pod, as torch_xla.distributed.xla_dist --tpu takes it')\n"
        "logging.info('start with python3 -m torch_xla.distributed.xla_dist')\n"
        "cmd = ('python3 -m'\n       ' torch_xla.distributed.xla_dist --tpu=p -- python3 t.py')\n"
        "subprocess.run(cmd, shell=True)\n"
        "open('launch.sh', 'w').write('python3 -m torch_xla.distributed.xla_dist --tpu=p -- python3 t.py')\n"
    )
    assert [(m.rule, m.line) for m in migrate(source).manual] == [
        ("manual-xla-dist", 12),
        ("manual-xla-dist", 14),
    ]  # commands
