"""install-python-version beyond its examples: the ways a set-up names its Python, the range of
each target, and what is left alone."""

import pytest

from xrt2pjrt.registry import Options
from xrt2pjrt.text import shell
from text_migrate import migrate_tree

INSTALL = "pip install 'torch_xla[tpu]~=2.9.0'\n"


def items(text: str, target=(2, 9)) -> list[tuple[int, str]]:
    outcome = shell.rewrite(text, Options(rules=frozenset({"install-python-version"}), target_version=target))
    return [(item.line, item.message) for item in outcome.manual]


@pytest.mark.parametrize(
    "setup",
    [
        "conda create -y -n torch-xla python==3.8.*",
        "sudo apt-get install -y python3.8 python3.8-venv",
        "virtualenv -p python3.7 venv",
        "uv venv --python=3.9",
        "pyenv install 3.8.16",
    ],
)
def test_each_way_of_naming_an_old_python_is_reported(setup):
    assert items(setup + "\n" + INSTALL) == [(1, "use Python 3.10 to 3.13")]


def test_a_python_newer_than_the_wheels_is_reported_too():
    assert items("conda create -n xla python=3.14\n" + INSTALL) == [(1, "use Python 3.10 to 3.13")]


@pytest.mark.parametrize("target, reported", [((2, 3), False), ((2, 5), True), ((2, 9), True)])
def test_the_range_is_the_targets(target, reported):
    # torch_xla's wheels on PyPI: cp38 up to 2.3, cp39 from 2.4 to 2.7, cp310 from 2.8
    assert bool(items("conda create -n xla python=3.8\n" + INSTALL, target)) == reported


@pytest.mark.parametrize(
    "text",
    [
        "export PATH=/opt/python3.8/bin:$PATH\n" + INSTALL,  # a path holding the name is no Python set up
        "conda create -n xla python=$PYTHON_VERSION\n" + INSTALL,  # given by a variable
        "conda create -n xla python=3.8\npip install jax[tpu]\n",  # a set-up that names no torch_xla
    ],
)
def test_what_names_no_python_of_a_torch_xla_set_up_is_left(text):
    assert items(text) == []


def test_the_first_spot_of_a_file_is_the_one_reported():
    # the lines after it run the Python it set up: one decision
    assert items("conda create -n xla python=3.8\n" + INSTALL + "python3.8 -m pip list\npython3.8 train.py\n") == [
        (1, "use Python 3.10 to 3.13")
    ]


def test_a_dockerfiles_base_image(tmp_path):
    found = migrate_tree(
        tmp_path,
        {"Dockerfile": "FROM python:3.8-slim\nRUN pip install 'torch_xla[tpu]==2.9.0'\n"},
        "install-python-version",
    )
    assert found == {
        "Dockerfile": [
            "python:3.8-slim: torch_xla 2.9 has wheels for Python 3.10 to 3.13 only "
            "(its files on PyPI), so pip finds none for Python 3.8: set up a Python of that range"
        ]
    }
