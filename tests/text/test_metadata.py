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
    ],
)
def test_an_xrt_era_release_listed_is_reported_at_its_line(text, line):
    outcome = metadata.rewrite(text, OPTIONS)
    assert [(item.rule, item.line) for item in outcome.manual] == [("install-xrt-era-release", line)]
    assert outcome.text == text and not outcome.changes


def test_versions_and_releases_of_today_are_left():
    text = '[project]\nversion = "1.13.0"\nrequires-python = ">=3.10"\ndependencies = ["torch_xla[tpu]~=2.9.0"]\n'
    assert not metadata.rewrite(text, OPTIONS).manual
