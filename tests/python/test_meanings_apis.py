"""The same-name table of APIs (xrt2pjrt/meanings/apis.py) held to what it cites: each entry's
rule exists, its tests exist, the torch_xla 2.9 source lines it quotes are those of the installed
torch_xla (that release), and the torch_xla names its advice gives are there."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from pathlib import Path

import pytest

from xrt2pjrt.meanings import apis
from xrt2pjrt.meanings.entry import Meaning
from xrt2pjrt.registry import TARGET_VERSIONS, all_rules

ROOT = Path(__file__).resolve().parents[2]
_SOURCE = re.compile(r"source: torch_xla@(v\d+\.\d+\.\d+) (\S+):(\d+) `(.+)`$")
_RUN = re.compile(r"run: (tests/\S+\.py)(?:::(\w+))?$")
ENTRIES = [pytest.param(meaning, id=meaning.name) for meaning in apis.MEANINGS]


def _checks(meaning: Meaning) -> list[str]:
    return meaning.checked.split("; ")


def _releases(spelled: str) -> list[tuple[int, int]]:
    first, _, last = spelled.partition("-")
    low, high = (tuple(int(part) for part in end.split(".")) for end in (first, last or first))
    return [version for version in TARGET_VERSIONS if low <= version <= high]


@pytest.mark.parametrize("meaning", ENTRIES)
def test_each_entry_names_a_rule_and_every_target_release_once(meaning):
    assert meaning.action in all_rules()
    covered = [version for releases, _ in meaning.on_target for version in _releases(releases)]
    assert sorted(covered) == list(TARGET_VERSIONS)


@pytest.mark.parametrize("meaning", ENTRIES)
def test_each_check_is_a_test_here_or_a_source_line(meaning):
    kinds = set()
    for check in _checks(meaning):
        run, source = _RUN.match(check), _SOURCE.match(check)
        assert run or source, check
        if run:
            kinds.add("run")
            path = ROOT / run.group(1)
            assert path.is_file(), check
            tree = ast.parse(path.read_text())
            functions = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
            assert run.group(2) is None or run.group(2) in functions, check
        else:
            kinds.add(source.group(1))
    # what it meant under XRT is cited from the XRT-era source, what it means now from a run or 2.9's
    assert "v1.13.0" in kinds and kinds & {"run", "v2.9.0"}


@pytest.mark.xla
@pytest.mark.parametrize("meaning", ENTRIES)
def test_the_2_9_source_lines_quoted_are_the_installed_torch_xla(meaning):
    installed = Path(importlib.util.find_spec("torch_xla").origin).parent.parent
    for check in _checks(meaning):
        source = _SOURCE.match(check)
        if source and source.group(1) == "v2.9.0":
            lines = (installed / source.group(2)).read_text().splitlines()
            assert source.group(4) in lines[int(source.group(3)) - 1], check


@pytest.mark.xla
@pytest.mark.parametrize("meaning", ENTRIES)
def test_the_torch_xla_names_the_advice_gives_are_installed(meaning):
    for _, text in meaning.on_target[-1:]:  # the latest release's advice: the installed one
        for dotted in re.findall(r"\btorch_xla(?:\.\w+)+", text):
            module, _, attr = dotted.rpartition(".")
            assert hasattr(importlib.import_module(module), attr), dotted
