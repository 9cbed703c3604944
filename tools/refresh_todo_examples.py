"""Re-render the TODO lines of rule examples and fixtures after a rule's message changed.

    python tools/refresh_todo_examples.py

A TODO line is its item's message cut to the line's width (rewriters.todo_comment), so a
reworded message, or an example merged from a branch written before the width, changes
the expected ``after`` of examples and fixtures in their TODO lines only. This rewrites
those, and only those: an example (``Example(before, after)`` in a rule module) or a
fixture (tests/fixtures) whose rewrite differs from what it expects in anything but its
TODO lines is listed, and left for a person. The ``after`` written is a literal, one line
of the text a string. Review the diff: it is the tool's own output.
"""

from __future__ import annotations

import sys
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "text"), str(ROOT / "tests" / "python")]

from xrt2pjrt import files, rewriters, width  # noqa: E402
from xrt2pjrt.registry import Options, all_rules  # noqa: E402
from xrt2pjrt.report import TODO_MARK  # noqa: E402


def _but_todo_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if TODO_MARK not in line]


def _only_todo_lines_differ(expected: str, got: str) -> bool:
    return (_but_todo_lines(expected) == _but_todo_lines(got)
            and expected.count(TODO_MARK) == got.count(TODO_MARK))


def _literal(text: str, indent: str) -> str:
    """``text`` as Python source: one string a line, in parentheses when there are several."""
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
        if not (isinstance(original.func, cst.Name) and original.func.value == "Example"):
            return updated
        index, self.seen = self.seen, self.seen + 1
        if index not in self.new:
            return updated
        args = list(updated.args)
        at = next(k for k, arg in enumerate(args)
                  if (arg.keyword and arg.keyword.value == "after") or (arg.keyword is None and k == 1))
        # (an argument's position starts at the whitespace before it: its own line's indent)
        indent = " " * (self.get_metadata(PositionProvider, original.args[at]).start.column - 4)
        args[at] = args[at].with_changes(value=cst.parse_expression(_literal(self.new[index], indent)))
        return updated.with_changes(args=args)


def _examples(left: list[str]) -> None:
    for rule in all_rules().values():
        new = {}
        for index, example in enumerate(rule.examples):
            options = Options(rules=frozenset({rule.id}), unsafe_fixes=True,
                              width=width.for_kind(rule.kind, width.Width()), **example.options)
            got = rewriters.module_for(rule.kind, example.before).rewrite(example.before, options).text
            if got == example.after:
                continue
            if _only_todo_lines_differ(example.after, got):
                new[index] = got
            else:
                left.append(f"{rule.id} example {index}")
        if not new:
            continue
        path = Path(sys.modules[rule.__module__].__file__)
        transformer = _Afters(new)
        code = MetadataWrapper(cst.parse_module(path.read_text(encoding="utf-8"))).visit(transformer).code
        if transformer.seen != len(rule.examples):
            left.append(f"{rule.id}: its examples are not Example(...) calls in order")
            continue
        path.write_text(code, encoding="utf-8")
        print(f"{path.relative_to(ROOT)}: examples {sorted(new)}")


def _fixtures(left: list[str]) -> None:
    import test_python_fixtures as python_cases
    import test_text_fixtures as text_cases

    pairs = [(text_cases.FIXTURES / before, text_cases.FIXTURES / expected, options)
             for before, expected, options, _ in text_cases.CASES]
    pairs += [(python_cases.FIXTURES / f"{case}.before.py", python_cases.FIXTURES / f"{case}.after.py", None)
              for case in python_cases.CASES]
    for before, expected, options in pairs:
        kind = files.kind_of(before)
        chosen = (python_cases.OPTIONS if options is None else
                  Options(rules=frozenset(all_rules()), unsafe_fixes=True, width=width.for_kind(kind, width.Width()),
                          **options))
        text = before.read_text(encoding="utf-8")
        got = rewriters.module_for(kind, text).rewrite(text, chosen).text
        old = expected.read_text(encoding="utf-8")
        if got == old:
            continue
        if _only_todo_lines_differ(old, got):
            expected.write_text(got, encoding="utf-8")
            print(f"{expected.relative_to(ROOT)}")
        else:
            left.append(str(expected.relative_to(ROOT)))


def main() -> None:
    left: list[str] = []
    _examples(left)
    _fixtures(left)
    for name in left:
        print(f"differs in more than its TODO lines, left as it is: {name}")


if __name__ == "__main__":
    main()
