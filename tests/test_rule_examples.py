"""Every registered rule's examples, run through the rewriter of the rule's kind.

The examples on a rule class are its documentation (``xrt2pjrt rules``) and, here, its
tests: with only that rule selected, ``before`` must become ``after`` exactly, report the
expected manual items, give text the rewriter's own check accepts, and a second pass
over ``after`` must change nothing (ruff's rule: fixes must converge in one step). Unsafe
fixes are made: the examples document them (tests/test_fix_safety.py holds the gate).
"""

import sys

import pytest

from xrt2pjrt import codemod, rewriters, width
from xrt2pjrt.registry import Options, all_rules
from xrt2pjrt.report import CUT

CASES = [
    pytest.param(rule, index, example, id=f"{rule_id}-{index}")
    for rule_id, rule in all_rules().items()
    for index, example in enumerate(rule.examples)
]


def _run(rule, example, text):
    # (with unsafe fixes made: an example documents the fix)
    # (and the width a project without settings has: 88 for Python, 100 for the text kinds)
    options = Options(
        rules=frozenset({rule.id}), unsafe_fixes=True, width=width.for_kind(rule.kind, width.Width()), **example.options
    )
    return codemod.rewrite(rule.kind, text, options)


@pytest.mark.parametrize("rule, index, example", CASES)
def test_example_rewrites_before_into_after(rule, index, example):
    outcome = _run(rule, example, example.before)
    assert outcome.text == example.after
    for expected in example.manual:
        assert any(expected in f"{item.shown()} {item.detail}" for item in outcome.manual), (expected, outcome.manual)
    if not example.manual:
        assert outcome.manual == []
    assert all(f.rule == rule.id for f in outcome.changes + outcome.manual)
    if example.before != example.after:
        assert outcome.changes or outcome.manual, "a rewrite must report what it did"


@pytest.mark.parametrize("rule, index, example", CASES)
def test_example_output_is_valid_and_stable(rule, index, example):
    module = rewriters.module_for(rule.kind)
    assert module.check(example.after) is None
    assert _run(rule, example, example.after).text == example.after


@pytest.mark.parametrize("rule_id, rule", sorted(all_rules().items()))
def test_rule_is_documented(rule_id, rule):
    assert rule_id == rule_id.lower() and " " not in rule_id
    assert rule.summary and rule.kind in rewriters.MODULES
    first = rule.examples[0]
    assert first.before != first.after or first.manual, "the first example is what `rules` shows: make it do something"


# How long a summary may be: one line of `xrt2pjrt rules`, the rules' table and a SARIF
# rule's short description.
SUMMARY_ROOM = 100


def _words(text: str) -> list[str]:
    return " ".join(text.replace("``", "`").split()).rstrip(".").split()


@pytest.mark.parametrize("rule_id, rule", sorted(all_rules().items()))
def test_summary_is_one_short_line_and_the_why_says_more(rule_id, rule):
    """The summary says what the rule does; its module's docstring (the why `xrt2pjrt rules ID`
    shows) says why the code changes on the target and what the fix keeps, so it repeats
    the summary in none of its paragraphs and says more than it."""
    assert "\n" not in rule.summary and len(rule.summary) <= SUMMARY_ROOM, (len(rule.summary), rule.summary)
    why = (sys.modules[rule.__module__].__doc__ or "").strip()
    assert why, "the rule's module needs a docstring: its why"
    assert all(_words(paragraph) != _words(rule.summary) for paragraph in why.split("\n\n")), (
        "the why repeats the summary"
    )
    assert len(why.split()) >= 2 * len(rule.summary.split()), "the why must say more than the summary"


@pytest.mark.parametrize("rule_id, rule", sorted(all_rules().items()))
def test_fix_safety_says_what_the_examples_do(rule_id, rule):
    """A report-only rule (fix "none") changes nothing; a rule with a fix shows one."""
    changed = [bool(_run(rule, e, e.before).changes) for e in rule.examples]
    assert any(changed) is (rule.fix != "none"), (rule.fix, changed)


# A TODO line at this indent, in a file without line-length settings, holds its rule's
# message whole: the cut (rewriters.todo_comment) is for deeper indents only.
_TODO_INDENT = 8


@pytest.mark.parametrize("rule_id, rule", sorted(all_rules().items()))
def test_todo_lines_fit_uncut_at_indent_8(rule_id, rule):
    room = width.DEFAULT - _TODO_INDENT
    for example in rule.examples:
        for line in _run(rule, example, example.before).text.splitlines():
            if rewriters.TODO in line:
                todo = line.strip()
                assert f"{CUT} [" not in todo and len(todo) <= room, f"{len(todo)} > {room}: {todo}"
