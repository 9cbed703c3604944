"""Every skip says why in one wording: "needs WHAT: how to get it" (or what it is for), so
that a contributor reading `pytest -ra` knows at once what their machine lacks."""

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
SKIPS = {"skip", "importorskip", "skipif"}


def _reasons():
    for path in sorted([*TESTS.glob("*.py"), *TESTS.glob("stand_ins/*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) in SKIPS:
                texts = [kw.value for kw in node.keywords if kw.arg == "reason"]
                if getattr(node.func, "attr", None) == "skip" and node.args:
                    texts.append(node.args[0])
                for text in texts:
                    first = text.values[0] if isinstance(text, ast.JoinedStr) else text
                    yield path.name, node.lineno, getattr(first, "value", None)


def test_every_skip_reason_says_what_is_needed():
    reasons = list(_reasons())
    assert len(reasons) >= 6  # the scan finds them
    assert [r for r in reasons if not (isinstance(r[2], str) and r[2].startswith("needs "))] == []
