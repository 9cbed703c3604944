"""docs/MIGRATION.md cannot drift from the rules: its rules section is generated from them."""

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from xrt2pjrt import guide
from xrt2pjrt.cli import app
from xrt2pjrt.registry import all_rules

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "MIGRATION.md"


def test_rules_section_is_up_to_date():
    document = GUIDE.read_text(encoding="utf-8")
    assert guide.splice(document) == document, "run: python -m xrt2pjrt.guide docs/MIGRATION.md"


def test_every_rule_id_has_a_heading_in_the_guide():
    document = GUIDE.read_text(encoding="utf-8")
    missing = [rid for rid in all_rules() if f"### `{rid}`" not in document]
    assert not missing


# The file each kind's example is written to, so the CLI discovers it as that kind.
FILE_FOR_KIND = {"python": "example.py", "shell": "run.sh", "dockerfile": "Dockerfile",
                 "yaml": "job.yaml", "markdown": "README.md", "notebook": "example.ipynb"}

_SECTION = re.compile(r"^### `(?P<id>[^`]+)`\n(?P<body>.*?)(?=^### |\Z)", re.S | re.M)
_EXAMPLE = re.compile(
    r"(?:With `(?P<flags>[^`]+)`:\n\n)?"
    r"(?:Before:\n\n```\w*\n(?P<before>.*?)\n```\n\nAfter:\n\n```\w*\n(?P<after>.*?)\n```"
    r"|Left as is:\n\n```\w*\n(?P<same>.*?)\n```)",
    re.S,
)


def _guide_examples():
    rules_part = GUIDE.read_text(encoding="utf-8").split(guide.START)[1].split(guide.END)[0]
    for section in _SECTION.finditer(rules_part):
        for n, m in enumerate(_EXAMPLE.finditer(section["body"])):
            before = m["before"] if m["same"] is None else m["same"]
            after = m["after"] if m["same"] is None else m["same"]
            flags = m["flags"].split() if m["flags"] else []
            yield pytest.param(section["id"], flags, before + "\n", after + "\n", id=f"{section['id']}-{n}")


@pytest.mark.parametrize("rule_id, flags, before, after", list(_guide_examples()))
def test_guide_example_round_trips_through_the_cli(tmp_path, rule_id, flags, before, after):
    target = tmp_path / FILE_FOR_KIND[all_rules()[rule_id].kind]
    target.write_text(before, encoding="utf-8")
    result = CliRunner().invoke(app, ["migrate", str(target), "--write", "--select", rule_id, *flags])
    assert result.exit_code == 0, result.output
    assert target.read_text(encoding="utf-8") == after


def test_guide_shows_an_example_for_every_rule():
    shown = {param.values[0] for param in _guide_examples()}
    assert shown == set(all_rules())
