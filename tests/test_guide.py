"""docs/MIGRATION.md cannot drift from the rules: its rules section is generated from them."""

from pathlib import Path

from xrt2pjrt import guide
from xrt2pjrt.registry import all_rules

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "MIGRATION.md"


def test_rules_section_is_up_to_date():
    document = GUIDE.read_text(encoding="utf-8")
    assert guide.splice(document) == document, "run: python -m xrt2pjrt.guide docs/MIGRATION.md"


def test_every_rule_id_has_a_heading_in_the_guide():
    document = GUIDE.read_text(encoding="utf-8")
    missing = [rid for rid in all_rules() if f"### `{rid}`" not in document]
    assert not missing
