"""The Python rewriter as the rule tests run it: every Python rule, unsafe fixes made (the
gate has tests/test_fix_safety.py), the result checked and a second pass changing nothing."""

import textwrap

from xrt2pjrt.python import rewriter as python
from xrt2pjrt.registry import Options, all_rules
from xrt2pjrt.report import CUT
from xrt2pjrt.rewriters import TODO

XM = "import torch_xla.core.xla_model as xm\n"
XMP = "import torch_xla.distributed.xla_multiprocessing as xmp\n"


def migrate(source: str, **options):
    options.setdefault("rules", frozenset(r for r, c in all_rules().items() if c.kind == "python"))
    options.setdefault("unsafe_fixes", True)
    outcome = python.rewrite(textwrap.dedent(source), Options(**options))
    assert python.check(outcome.text) is None
    again = python.rewrite(outcome.text, Options(**options))
    assert again.text == outcome.text, "a second pass must change nothing"
    return outcome


def text(source: str, **options) -> str:
    return migrate(source, **options).text


def same(source: str, **options) -> None:
    assert text(source, **options) == textwrap.dedent(source)


def todo_says(text: str, item) -> bool:
    """Whether a TODO line of ``text`` marks ``item``: the words of its message, cut where
    they do not fit the line (rewriters.todo_comment), and its rule id."""
    for line in text.splitlines():
        said = line.strip().removeprefix(TODO)
        if said == line.strip() or not said.endswith(f" [{item.rule}]"):
            continue
        said = said.removesuffix(f" [{item.rule}]")
        if said == item.message or (said.endswith(CUT) and item.message.startswith(said.removesuffix(CUT))):
            return True
    return False
