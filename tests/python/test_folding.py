"""Folding quiet statements (python/quiet.py) is only a speed-up: whatever a file holds, the
rewrite with folding must give the outcome of the rewrite that parses the whole file,
and folding then unfolding must give the file back byte for byte."""

from __future__ import annotations

import ast
import textwrap

import pytest
from hypothesis import given

from tests.test_engine_properties import ENCODINGS, SETTINGS, programs, source_of
from xrt2pjrt.registry import Options, all_rules
from xrt2pjrt.python import imports, quiet, rewriter as python
from python_migrate import text

OPTIONS = Options(rules=frozenset(rid for rid, rule in all_rules().items() if rule.kind == "python"))


def assert_folding_changes_nothing(source: str) -> python.Outcome:
    folded, plain = python.rewrite(source, OPTIONS), python.rewrite(source, OPTIONS, fold=False)
    assert (folded.text, folded.changes, folded.manual) == (plain.text, plain.changes, plain.manual)
    return folded


def fold(source: str) -> quiet.Folded:
    tree = ast.parse(source)
    bound = imports.import_names(tree)
    return quiet.fold(source, tree, *python._relevant(bound), set(bound))


@SETTINGS
@given(programs(), ENCODINGS)
def test_generated_programs_rewrite_the_same_folded_or_not(blocks, encoding):
    assert_folding_changes_nothing(source_of(blocks, encoding))


# Statements that hold no rule word but change what a name means: folding them away
# would change which calls resolve to torch_xla or os.
SHADOWING = {
    "a local os": ("import os\n\ndef f():\n    os = make()\n    os.environ.setdefault('XRT_TPU_CONFIG', 'x')\n", False),
    "os from elsewhere too": (
        "import os\nif fake:\n    from fakes import os\nos.environ.setdefault('XRT_TPU_CONFIG', 'x')\n",
        False,
    ),
    "os as an exception": (
        "import os\ntry:\n    pass\nexcept E as os:\n    pass\nos.environ.setdefault('XRT_TPU_CONFIG', 'x')\n",
        False,
    ),
    "os by a loop": ("import os\nfor os in paths:\n    pass\nos.environ.setdefault('XRT_TPU_CONFIG', 'x')\n", False),
    "os by a def": ("import os\ndef os():\n    pass\nos.environ.setdefault('XRT_TPU_CONFIG', 'x')\n", False),
    "a global os": (
        "import os\ndef f():\n    global os\n    os = make()\n    os.environ.setdefault('XRT_TPU_CONFIG', 'x')\n",
        False,
    ),
    "os imported inside a quiet if": ("if ready:\n    import os\nos.environ.setdefault('XRT_TPU_CONFIG', 'x')\n", True),
    "init_process_group by another name": (
        "from torch.distributed import init_process_group as start\n\nstart('xla', init_method='env://')\n",
        True,
    ),
}


@pytest.mark.parametrize("source, rewritten", SHADOWING.values(), ids=SHADOWING.keys())
def test_statements_that_rebind_an_imported_name_are_not_folded(source, rewritten):
    outcome = assert_folding_changes_nothing(source)
    assert bool(outcome.changes) == rewritten


LAYOUTS = {
    "one-line bodies and semicolons": "import torch_xla.core.xla_model as xm\nif a: b = 1; c = 2\nx = 1; y = 2\n"
    "def f(): return 1\nn = xm.xrt_world_size()\n",
    "elif and else": "import torch_xla.core.xla_model as xm\nif a:\n    b = 1\nelif c:\n    d = 2\n"
    "elif xm.get_ordinal():\n    e = 3\nelse:\n    f = 4\n"
    "if xm.get_ordinal():\n    g = 5\nelif h:\n    i = 6\n",
    "decorators and comments": "import torch_xla.core.xla_model as xm\n\n# about f\n@deco(\n    1)\n"
    "def f():\n    pass\n\n\n@other\nclass C:\n    '''doc'''\n\n    x = 1\n"
    "    # before g\n    def g(self):\n        return xm.get_ordinal()\n",
    "lone CR and mixed endings": "import torch_xla.core.xla_model as xm\rx = 1\r\ny = 2\rn = xm.xrt_world_size()\r",
    "form feed and tabs": "import torch_xla.core.xla_model as xm\n\x0c\ndef f():\n\tx = 1\n\treturn x\n"
    "class C:\n\tdef g(self):\n\t\treturn xm.get_ordinal()\n",
    "no newline at the end": "import torch_xla.core.xla_model as xm\nx = 1\nn = xm.get_ordinal()\ndef f():\n    return 1",
    "try, with and match": "import torch_xla.core.xla_model as xm\ntry:\n    a = 1\nexcept E:\n    b = 2\n"
    "else:\n    c = xm.get_ordinal()\nfinally:\n    d = 4\nwith x as y:\n    e = 5\n"
    "match v:\n    case 1:\n        f = 6\n    case _:\n        g = xm.xrt_world_size()\n",
    "an XRT-era variable without the XRT_ prefix": "import os\nclass C:\n    def f(self):\n        x = 1\n"
    "        os.environ['TPU_NUM_DEVICES'] = '8'\n",
    "a block that moves to another depth": "import torch_xla.runtime as xr\nclass C:\n    def f(self):\n"
    "        if xr.using_pjrt():\n            x = 1\n            def g():\n"
    "                return \"\"\"\n  text\n\"\"\"\n        return x\n",
    "a docstring first": '"""Module doc."""\nx = 1\nn = xm.xrt_world_size()\nimport torch_xla.core.xla_model as xm\n',
}


@pytest.mark.parametrize("source", LAYOUTS.values(), ids=LAYOUTS.keys())
def test_folding_keeps_every_byte_and_every_line_number(source):
    folded = fold(source)
    assert folded.unfold(folded.text) == source
    ast.parse(folded.text)  # still Python
    outcome = assert_folding_changes_nothing(source)
    assert outcome.changes  # each layout has something to rewrite, with its line checked above


def test_quiet_code_shrinks_to_placeholders_and_runs_of_it_to_one():
    source = textwrap.dedent("""\
        import torch_xla.core.xla_model as xm


        class Trainer:
            def __init__(self):
                self.a = 1
                self.b = 2

            def save(self):
                xm.save(self.state, 'x')

            def evaluate(self):
                return 3

            def predict(self):
                return 4
        """)
    folded = fold(source)
    assert folded.text.count("__xrt2pjrt_quiet") == 2  # __init__, and evaluate with predict
    assert "xm.save(self.state, 'x')" in folded.text and "return 3" not in folded.text
    assert folded.original_line(folded.text.splitlines().index("        xm.save(self.state, 'x')") + 1) == 10


def test_a_placeholder_lost_doubled_or_moved_is_refused():
    folded = fold("import torch_xla.core.xla_model as xm\nx = 1\nn = xm.xrt_world_size()\n")
    placeholder = folded.text.splitlines(keepends=True)[1]
    assert folded.unfold(folded.text.replace(placeholder, "")) is None
    assert folded.unfold(folded.text.replace(placeholder, placeholder * 2)) is None
    assert folded.unfold(folded.text.replace(placeholder, "    " + placeholder)) is None


def test_when_unfolding_fails_the_whole_file_is_parsed_instead(monkeypatch):
    source = "import torch_xla.core.xla_model as xm\nx = 1\nn = xm.xrt_world_size()\n"
    expected = python.rewrite(source, OPTIONS, fold=False)
    monkeypatch.setattr(quiet.Folded, "unfold", lambda self, code: None)
    outcome = python.rewrite(source, OPTIONS)
    assert (outcome.text, outcome.changes) == (expected.text, expected.changes)
    assert "x = 1\nn = xr.world_size()\n" in outcome.text


def test_the_placeholder_name_never_clashes_with_the_file():
    source = "import torch_xla.core.xla_model as xm\n__xrt2pjrt_quiet0 = 1\nx = 1\nn = xm.xrt_world_size()\n"
    folded = fold(source)
    assert folded.unfold(folded.text) == source
    assert_folding_changes_nothing(source)


def test_an_elif_stays_with_its_if():
    # Folded away, a quiet ``elif`` tail would read as a statement after the ``if``: valid
    # Python, but the engine would see another structure than the file's.
    folded = fold("import torch_xla.core.xla_model as xm\nif xm.get_ordinal():\n    g = 5\nelif h:\n    i = 6\n")
    assert "elif h:\n" in folded.text and "    i = 6\n" not in folded.text


def test_definitions_without_relevant_words_are_folded_without_losing_count():
    """The engine folds away defs/classes that hold no word a rule looks for
    (python/quiet.py); the ones after them (and after the defs nested in them) must still
    be rewritten."""
    out = text("""\
        import torch_xla.core.xla_model as xm


        def quiet():
            def inner():
                return 1

            class Helper:
                def method(self):
                    return 2
            return inner


        @xm.some_decorator
        def decorated():
            return 3


        class Loud:
            def rank(self):
                return xm.get_ordinal()

            async def size(self):
                return xm.xrt_world_size()
        """)
    assert "return xr.global_ordinal()" in out and "return xr.world_size()" in out
    assert "@xm.some_decorator" in out and "import torch_xla.core.xla_model as xm" in out
