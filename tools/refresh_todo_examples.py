"""Re-render the TODO lines of rule examples and fixtures after a rule's message changed,
or after a new rule marks spots in them.

    python tools/refresh_todo_examples.py

A TODO line is its item's message cut to the line's width (rewriters.todo_comment), so a
reworded message, or an example merged from a branch written before the width, changes
the expected ``after`` of examples and fixtures in their TODO lines only; so does a new
rule, whose items add TODO lines to the fixtures (they run every rule). This rewrites
those, and only those: an example (``Example(before, after)`` in a rule module) or a
fixture (tests/fixtures) whose rewrite differs from what it expects in anything but its
TODO lines is listed, and left for a person; so is one that loses the TODO line of a rule
(a rule that stopped reporting there is a change to judge, not to take). The ``after`` written
is a ``dedent`` block, as the examples are written. Review the diff: it is the tool's own
output. tests/test_refresh_todo_examples.py shows what it takes and what it leaves.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

import libcst as cst
import libcst.matchers as m
from libcst.metadata import MetadataWrapper, PositionProvider

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "text"), str(ROOT / "tests" / "python")]

from xrt2pjrt import files, rewriters, width  # noqa: E402
from xrt2pjrt.registry import Options, all_rules  # noqa: E402
from xrt2pjrt.report import TODO_MARK  # noqa: E402


# The rule a TODO line names, last on the line: ``# TODO(xrt2pjrt): <message> [rule-id]``
# (in a notebook's JSON, a string's end follows it).
_TODO_RULE = re.compile(r"\[([a-z0-9.-]+)\][^\[]*$")


def _but_todo_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if TODO_MARK not in line]


def _todo_rules(text: str) -> Counter:
    return Counter(
        match.group(1) for line in text.splitlines() if TODO_MARK in line and (match := _TODO_RULE.search(line))
    )


def takes(expected: str, got: str) -> bool:
    """Whether ``got`` may replace ``expected``: they differ in TODO lines only (reworded,
    cut anew, or added by a rule), and every rule with a TODO line in ``expected`` keeps as
    many in ``got``."""
    return _but_todo_lines(expected) == _but_todo_lines(got) and not _todo_rules(expected) - _todo_rules(got)


def _literal(text: str, indent: str) -> str:
    """``text`` as Python source whose first line starts at ``indent``: a ``dedent`` block,
    as the examples are written (registry.dedent); for text a block cannot hold as it is
    (trailing blanks, tabs, quotes at its end, an indent of its own), one string a line, in
    parentheses when there are several."""
    lines = text.split("\n")
    written = [line for line in lines if line.strip()]
    if not (
        '"""' in text
        or text.endswith(('"', "\\"))
        or any(line != line.rstrip() for line in lines)
        or not text.replace("\n", "").isprintable()
        or (written and all(line[0] == " " for line in written))
    ):
        *whole, last = lines  # (a text that ends its last line ends with "": the closing quotes')
        body = "".join(f"{indent}    {line}\n" if line else "\n" for line in whole)
        return f'dedent({"r" if chr(92) in text else ""}"""\n{body}{indent}{"    " + last if last else ""}""")'
    parts = []
    for line in text.splitlines(keepends=True):
        quoted = repr(line)
        if quoted.startswith("'") and '"' not in line:
            quoted = '"' + quoted[1:-1].replace("\\'", "'") + '"'
        parts.append(quoted)
    if len(parts) == 1:
        return parts[0]
    return "(\n" + "".join(f"{indent}    {part}\n" for part in parts) + f"{indent})"


class _Afters(cst.CSTTransformer):
    """Each ``Example(...)`` of a module in order, its ``after`` replaced where ``new`` says."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, new: dict[int, str]):
        super().__init__()
        self.new, self.seen = new, 0

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        unchanged = m.matches(original.func, m.Attribute(value=m.Name("Example"), attr=m.Name("unchanged")))
        if not (unchanged or m.matches(original.func, m.Name("Example"))):
            return updated
        index, self.seen = self.seen, self.seen + 1
        if index not in self.new:
            return updated
        args = list(updated.args)
        if unchanged:  # its after is no longer its before: an Example(before, after, ...) now
            column = self.get_metadata(PositionProvider, original.args[0].value).start.column
            comma = (
                args[0].comma
                if isinstance(args[0].comma, cst.Comma)
                else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            )
            after = cst.Arg(cst.parse_expression(_literal(self.new[index], " " * column)), comma=args[0].comma)
            args[0] = args[0].with_changes(comma=comma)  # (the after goes on the line the next argument had)
            return updated.with_changes(func=cst.Name("Example"), args=[args[0], after, *args[1:]])
        at = next(
            k
            for k, arg in enumerate(args)
            if (arg.keyword and arg.keyword.value == "after") or (arg.keyword is None and k == 1)
        )
        indent = " " * self.get_metadata(PositionProvider, original.args[at].value).start.column
        args[at] = args[at].with_changes(value=cst.parse_expression(_literal(self.new[index], indent)))
        return updated.with_changes(args=args)


# How a rule module imports what its examples are made of.
_REGISTRY_IMPORT = "from xrt2pjrt.registry import Example"
_DEDENT_IMPORTED = re.compile(r"^from xrt2pjrt\.registry import .*\bdedent\b", re.M)


def _examples(left: list[str]) -> None:
    for rule in all_rules().values():
        new = {}
        for index, example in enumerate(rule.examples):
            options = Options(
                rules=frozenset({rule.id}),
                unsafe_fixes=True,
                width=width.for_kind(rule.kind, width.Width()),
                **example.options,
            )
            got = rewriters.module_for(rule.kind, example.before).rewrite(example.before, options).text
            if got == example.after:
                continue
            if takes(example.after, got):
                new[index] = got
            else:
                left.append(f"{rule.id} example {index}")
        if not new:
            continue
        path = Path(sys.modules[rule.__module__].__file__)
        code = with_afters(path.read_text(encoding="utf-8"), new, len(rule.examples))
        if code is None:
            left.append(f"{rule.id}: its examples are not Example(...) calls in order")
            continue
        path.write_text(code, encoding="utf-8")
        print(f"{path.relative_to(ROOT)}: examples {sorted(new)}")


def with_afters(source: str, new: dict[int, str], count: int) -> str | None:
    """``source``, a rule module whose ``count`` examples are ``Example(...)`` calls, with the
    ``after`` of example i written as ``new[i]`` (and ``dedent`` imported where it is new);
    None when its Example calls are not its ``count`` examples in order."""
    transformer = _Afters(new)
    code = MetadataWrapper(cst.parse_module(source)).visit(transformer).code
    if transformer.seen != count:
        return None
    if "dedent(" in code and not _DEDENT_IMPORTED.search(code):
        code = code.replace(_REGISTRY_IMPORT, f"{_REGISTRY_IMPORT}, dedent", 1)
    return code


def _fixtures(left: list[str]) -> None:
    import test_python_fixtures as python_cases
    import test_text_fixtures as text_cases

    pairs = [
        (text_cases.FIXTURES / before, text_cases.FIXTURES / expected, options)
        for before, expected, options, _ in text_cases.CASES
    ]
    pairs += [
        (python_cases.FIXTURES / f"{case}.before.py", python_cases.FIXTURES / f"{case}.after.py", None)
        for case in python_cases.CASES
    ]
    for before, expected, options in pairs:
        kind = files.kind_of(before)
        chosen = (
            python_cases.OPTIONS
            if options is None
            else Options(
                rules=frozenset(all_rules()), unsafe_fixes=True, width=width.for_kind(kind, width.Width()), **options
            )
        )
        done = refresh_fixture(before, expected, chosen)
        if done == "written":
            print(f"{expected.relative_to(ROOT)}")
        elif done == "left":
            left.append(str(expected.relative_to(ROOT)))


def refresh_fixture(before: Path, expected: Path, options: Options) -> str:
    """Rewrite ``before`` with ``options`` and write the result over ``expected`` if it
    ``takes`` its place: "same", "written", or "left" (for a person)."""
    text = before.read_text(encoding="utf-8")
    got = rewriters.module_for(files.kind_of(before), text).rewrite(text, options).text
    old = expected.read_text(encoding="utf-8")
    if got == old:
        return "same"
    if not takes(old, got):
        return "left"
    expected.write_text(got, encoding="utf-8")
    return "written"


def main() -> None:
    left: list[str] = []
    _examples(left)
    _fixtures(left)
    for name in left:
        print(f"differs in more than its TODO lines, left as it is: {name}")


if __name__ == "__main__":
    main()
