"""A Python that the target's torch_xla has no wheels for, set up for torch_xla code (``conda
create -n xla python=3.8``, ``FROM python:3.8-slim``, ``apt-get install python3.8``, ``pyenv
install 3.8.16``): reported.

torch_xla is published as wheels for a few Pythons only (its files on PyPI): 2.1 to 2.3 for
3.8-3.11, 2.4 to 2.7 for 3.9-3.11, 2.8 and 2.9 for 3.10-3.13. The XRT years ran on 3.6-3.8
(Colab's cp37 wheels, Python 3.8 of the TPU VM images), and their set-ups name that Python. Once
the installs are moved to the target, pip finds no torch_xla for it. Which Python to take is a
person's choice (the other pins may follow it), so the first spot of a file is reported: the
lines after it that run that Python follow the same decision. Only a file that installs or
names torch_xla is read: a library's CI and images set up Pythons for runs without it (a CPU
image, the docs' build), which torch_xla's range does not bind. A Python given by a variable
is left alone.
"""

from __future__ import annotations

import re

from xrt2pjrt.registry import Example
from xrt2pjrt.recorder import todo_line
from xrt2pjrt.text.rule import TextRule

# (first torch_xla release, lowest Python, highest Python) its wheels are built for.
WHEELS = (((2, 1), 8, 11), ((2, 4), 9, 11), ((2, 8), 10, 13))
# A Python named by a word: a conda or pip spec, a Docker library image, an interpreter, --python=.
_NAMED = re.compile(
    r"""^(?:python\s*(?:==?|~=)\s*|(?:(?:docker\.io/)?library/)?python:|python|--python=(?:python)?)3\.(\d+)\b"""
)
_EXACT_INTERPRETER = re.compile(r"^python3\.\d+$")  # python3.8, not a path holding it
_PYENV = ("install", "global", "local", "virtualenv")


def _supported(target: tuple[int, int]) -> tuple[int, int]:
    """The lowest and highest Python 3 minor version of the target's wheels."""
    _, low, high = [row for row in WHEELS if row[0] <= target][-1]
    return low, high


class PythonVersion(TextRule):
    id = "install-python-version"
    fix = "none"
    words = ("torch_xla", "torch-xla")  # a set-up is read only where it names torch_xla
    summary = "A Python the target's torch_xla has no wheels for (python=3.8, FROM python:3.8): reported"
    examples = (
        Example(  # a TPU VM set-up of the XRT years, its install moved to 2.9
            "conda create -n xla python=3.8 -y\nconda activate xla\npip install 'torch_xla[tpu]~=2.9.0'\n",
            todo_line("use Python 3.10 to 3.13", "install-python-version")
            + "conda create -n xla python=3.8 -y\nconda activate xla\npip install 'torch_xla[tpu]~=2.9.0'\n",
            manual=("python=3.8: torch_xla 2.9 has wheels for Python 3.10 to 3.13 only",),
        ),
        Example.unchanged("conda create -n xla python=3.11 -y\npip install 'torch_xla[tpu]~=2.9.0'\n"),
        Example.unchanged("conda create -n tf python=3.8 -y\npip install tensorflow\n"),  # no torch_xla served
    )

    def word(self, rec, word, offset):
        word = word.strip("'\"")
        named = _NAMED.match(word)
        if named and (not word.startswith("python3") or _EXACT_INTERPRETER.match(word)):
            self._report(rec, offset, word, int(named.group(1)))

    def command(self, rec, cmd, posix_sh):
        words = cmd.argv_text(rec.text)
        if words[:1] == ["pyenv"] and len(words) > 2 and words[1] in _PYENV:
            version = re.match(r"3\.(\d+)\b", words[2])
            if version:
                self._report(rec, cmd.argv()[0].start, " ".join(words[:3]), int(version.group(1)))

    def _report(self, rec, offset: int, shown: str, minor: int) -> None:
        low, high = _supported(rec.options.target_version)
        if (
            low <= minor <= high
            or any(item.rule == self.id for item in rec.manual)
            or not rec.options.names_torch_xla(rec.text)
        ):
            return
        release = ".".join(map(str, rec.options.target_version))
        rec.decide(
            self.id,
            offset,
            f"use Python 3.{low} to 3.{high}",
            f"{shown}: torch_xla {release} has wheels for Python 3.{low} to 3.{high} only (its files on PyPI), "
            f"so pip finds none for Python 3.{minor}: set up a Python of that range",
        )
