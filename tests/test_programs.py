"""XRT-era programs that reach removed or changed torch_xla APIs (tests/programs/), each
migrated with `xrt2pjrt migrate --write` and run on the installed torch_xla 2.9 with
PJRT_DEVICE=CPU: each runs, or fails only at a statement the tool marked with a TODO line
(tests/_programs.py). Which of the two is on the program's first line (`# expect: ...`):
the mechanical rewrites must run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from _programs import run

pytestmark = [pytest.mark.xla, pytest.mark.slow]

PROGRAMS = sorted((Path(__file__).parent / "programs").glob("*.py"))


def test_there_are_programs_of_both_endings():
    expected = [_expected(p) for p in PROGRAMS]
    assert expected.count("ran") >= 10 and expected.count("marked") >= 8


def _expected(program: Path) -> str:
    return re.match(r"# expect: (ran|marked)\n", program.read_text()).group(1)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_program_runs_or_fails_at_a_marked_line(program, tmp_path):
    ending = run(program, tmp_path)
    assert ending.outcome != "unmarked", ending
    assert ending.outcome == _expected(program), ending
