"""tools/refresh_todo_examples.py: what it takes into the examples and fixtures (TODO lines
reworded, or added by a new rule) and what it leaves for a person."""

import importlib.util
import shutil
from pathlib import Path

from xrt2pjrt import width
from xrt2pjrt.registry import Options, all_rules

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("refresh_todo_examples", ROOT / "tools" / "refresh_todo_examples.py")
refresh = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(refresh)

SHELL = ROOT / "tests" / "fixtures" / "text" / "shell"
EXPECTED = "export PJRT_DEVICE=TPU\n# TODO(xrt2pjrt): use xr.global_ordinal() [env-shell-xrt-unused]\necho $XRT_SHARD_ORDINAL\n"


def test_a_todo_line_a_new_rule_adds_is_taken():
    got = EXPECTED.replace("echo", "# TODO(xrt2pjrt): a new rule's advice [launch-new-rule]\necho")
    assert refresh.takes(EXPECTED, got)


def test_a_reworded_todo_line_is_taken():
    assert refresh.takes(EXPECTED, EXPECTED.replace("use xr.global_ordinal()", "read xr.global_ordinal()"))


def test_a_lost_todo_line_or_a_changed_line_of_code_is_left_for_a_person():
    lost = EXPECTED.replace("# TODO(xrt2pjrt): use xr.global_ordinal() [env-shell-xrt-unused]\n", "")
    assert not refresh.takes(EXPECTED, lost)  # a rule that stopped reporting there
    moved = EXPECTED.replace("[env-shell-xrt-unused]", "[launch-new-rule]")
    assert not refresh.takes(EXPECTED, moved)  # its item now another rule's
    assert not refresh.takes(EXPECTED, EXPECTED.replace("export PJRT_DEVICE=TPU", "export PJRT_DEVICE=CPU"))


def test_a_fixture_written_before_a_rule_gets_that_rules_todo_lines(tmp_path):
    """As if env-shell-xrt-unused were new: its expected output, written without it, has
    none of its TODO lines; the refresh writes them in, and touches nothing else."""
    before, expected = tmp_path / "env_vars.sh", tmp_path / "env_vars.expected.sh"
    shutil.copy(SHELL / "env_vars.sh", before)
    whole = (SHELL / "env_vars.expected.sh").read_text()
    assert "[env-shell-xrt-unused]" in whole
    expected.write_text(
        "".join(line for line in whole.splitlines(keepends=True) if "[env-shell-xrt-unused]" not in line)
    )
    options = Options(rules=frozenset(all_rules()), unsafe_fixes=True, width=width.for_kind("shell", width.Width()))
    assert refresh.refresh_fixture(before, expected, options) == "written"
    assert expected.read_text() == whole
    assert refresh.refresh_fixture(before, expected, options) == "same"


def test_a_changed_fixture_is_left_as_it_is(tmp_path):
    before, expected = tmp_path / "env_vars.sh", tmp_path / "env_vars.expected.sh"
    shutil.copy(SHELL / "env_vars.sh", before)
    stale = (SHELL / "env_vars.expected.sh").read_text().replace("PJRT_DEVICE=TPU", "PJRT_DEVICE=CPU", 1)
    expected.write_text(stale)
    options = Options(rules=frozenset(all_rules()), unsafe_fixes=True, width=width.for_kind("shell", width.Width()))
    assert refresh.refresh_fixture(before, expected, options) == "left"
    assert expected.read_text() == stale


MODULE = '''\
from xrt2pjrt.registry import Example

EXAMPLES = (
    Example("x = 1\\n", "x = 1\\n"),
    Example(
        "import os\\nos.environ['XRT_SHARD_ORDINAL']\\n",
        "import os\\nos.environ['XRT_SHARD_ORDINAL']\\n",
    ),
)
'''


def test_an_examples_after_is_written_as_a_dedent_block_and_dedent_imported():
    after = (
        "import os\n# TODO(xrt2pjrt): use xr.global_ordinal() [env-xrt-replica-vars]\nos.environ['XRT_SHARD_ORDINAL']\n"
    )
    code = refresh.with_afters(MODULE, {1: after}, count=2)
    assert "from xrt2pjrt.registry import Example, dedent\n" in code
    assert '        dedent("""\n            import os\n            # TODO(xrt2pjrt): use' in code
    namespace = {}
    exec(code, namespace)
    assert [example.after for example in namespace["EXAMPLES"]] == ["x = 1\n", after]
    assert refresh.with_afters(MODULE, {1: after}, count=3) is None  # not the rule's examples in order


def test_an_unchanged_example_that_gains_a_todo_line_becomes_an_example_of_its_before_and_after():
    module = MODULE.replace('Example("x = 1\\n", "x = 1\\n")', 'Example.unchanged("x = 1\\n", manual=("m",))')
    code = refresh.with_afters(module, {0: "# TODO(xrt2pjrt): look [r]\nx = 1\n"}, count=2)
    namespace = {}
    exec(code, namespace)
    first = namespace["EXAMPLES"][0]
    assert (first.before, first.after, first.manual) == ("x = 1\n", "# TODO(xrt2pjrt): look [r]\nx = 1\n", ("m",))
