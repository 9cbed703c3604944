"""Whole XRT-era files (tests/fixtures/python/<case>.before.py) migrated with every
Python rule must give <case>.after.py exactly; the output parses, a second pass over it
changes nothing, and every manual item is marked in the code."""

from pathlib import Path

import pytest

from xrt2pjrt.registry import Options, all_rules
from xrt2pjrt.report import CUT, FileResult, Run
from xrt2pjrt.python import rewriter as python

FIXTURES = Path(__file__).parents[1] / "fixtures" / "python"
CASES = sorted(path.name.removesuffix(".before.py") for path in FIXTURES.glob("*.before.py"))
OPTIONS = Options(
    rules=frozenset(rid for rid, rule in all_rules().items() if rule.kind == "python"), unsafe_fixes=True
)  # every fix, unsafe ones too


def test_there_are_fixtures():
    assert len(CASES) >= 5


@pytest.mark.parametrize("case", CASES)
def test_fixture(case):
    before = (FIXTURES / f"{case}.before.py").read_text(encoding="utf-8")
    after = (FIXTURES / f"{case}.after.py").read_text(encoding="utf-8")
    outcome = python.rewrite(before, OPTIONS)
    assert outcome.text == after
    assert python.check(outcome.text) is None
    second = python.rewrite(outcome.text, OPTIONS)
    assert second.text == outcome.text
    # Every spot left for a person is marked in the code, so a later run cannot lose it.
    todos = [
        line.strip().removeprefix("# TODO(xrt2pjrt): ")
        for line in outcome.text.splitlines()
        if line.strip().startswith("# TODO(xrt2pjrt): ")
    ]
    for item in outcome.manual:
        # The comment is the message, less details (line numbers) that a rewrite moves, cut
        # to fit the line length.
        assert any(
            todo.endswith(f" [{item.rule}]")
            and item.message.startswith(todo.removesuffix(f" [{item.rule}]").removesuffix(CUT))
            for todo in todos
        ), item
    # A second pass reports what the first did, as the report words it after --write (the
    # lines a message cites named in the file as written, as the second pass reads them).
    assert _decided(outcome.text, second) <= _decided(before, outcome)
    if before == after:
        assert outcome.changes == [] and outcome.manual == []


def _decided(text: str, outcome) -> set[tuple[str, int, str]]:
    """(rule, line, message) of each item to decide, as `migrate --write` reports them."""
    result = FileResult("train.py", "python", text, outcome.text, outcome.changes, outcome.manual)
    return {
        (item.rule, item.range.start_line, item.message)
        for item in Run([result], mode="write").items(result)
        if item.kind == "decide"
    }
