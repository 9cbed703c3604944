"""Package metadata (pyproject.toml, setup.cfg): the requirements it lists are read as a
requirements file's lines are; nothing is rewritten."""

import pytest

from xrt2pjrt.registry import Options, all_rules
from xrt2pjrt.text import metadata

OPTIONS = Options(rules=frozenset(all_rules()))


@pytest.mark.parametrize(
    "text, line",
    [
        ('[project]\nname = "lib"\nversion = "1.13"\ndependencies = ["numpy", "torch-xla==1.13"]\n', 4),
        ('[project.optional-dependencies]\ntpu = [\n    "torch_xla[tpuvm] ~= 1.13.0",\n]\n', 3),
        ("[options]\ninstall_requires =\n    numpy\n    torch_xla==1.12\n", 4),
        ("[options.extras_require]\ntpu = torch-xla==1.11\n", 2),
        ('[tool.poetry.dependencies]\npython = "^3.7"\ntorch-xla = "1.13"\n', 3),
        ('[tool.poetry.group.tpu.dependencies]\ntorch_xla = {version = "^1.12", extras = ["tpuvm"]}\n', 2),
    ],
)
def test_an_xrt_era_release_listed_is_reported_at_its_line(text, line):
    outcome = metadata.rewrite(text, OPTIONS)
    assert [(item.rule, item.line) for item in outcome.manual] == [("install-xrt-era-release", line)]
    assert outcome.text == text and not outcome.changes


def test_versions_and_releases_of_today_are_left():
    text = '[project]\nversion = "1.13.0"\nrequires-python = ">=3.10"\ndependencies = ["torch_xla[tpu]~=2.9.0"]\n'
    assert not metadata.rewrite(text, OPTIONS).manual


@pytest.mark.parametrize(
    "constraint, reported",
    [('"^1.5.1"', True), ('"~1.13"', True), ('"1.8.1"', True), ('"^2.9"', False), ('"*"', False)],
)
def test_a_poetry_torch_of_the_xrt_years_is_reported_in_a_tpu_project(constraint, reported):
    # round 14: a Kaggle project's Poetry table held torch ^1.5.1 beside cloud-tpu-client and
    # NVIDIA's apex; one environment installs them all, so the GPU package does not make it a GPU list
    text = (
        "[tool.poetry.dependencies]\n"
        f'python = "^3.7"\ntorch = {constraint}\ntorchvision = "*"\n'
        'apex = {git = "https://github.com/NVIDIA/apex"}\ncloud-tpu-client = "^0.10"\n'
    )
    outcome = metadata.rewrite(text, Options(rules=OPTIONS.rules, torch_xla_project=True))
    assert [item.line for item in outcome.manual if item.line in (3, 4)] == [3] * reported
