"""The line length a project keeps to, read from its linters' and formatters' settings.

A TODO line the migration writes must pass the project's own linter, so its width is the
project's: the nearest folder, from the file's up, that configures a line length for
Python in any of ruff (``line-length`` in ruff.toml, .ruff.toml, ``[tool.ruff]``), black
(``[tool.black]``), flake8 (``max-line-length`` in .flake8, setup.cfg's or tox.ini's
``[flake8]``), pycodestyle (their ``[pycodestyle]``/``[pep8]``), pylint (.pylintrc,
pylintrc, ``[tool.pylint.format]``) or .editorconfig (``max_line_length`` of a section
that matches ``*.py``) says it; 88 (ruff's and black's) where none does. Files that are not
Python (shell, Dockerfiles, YAML) have no such setting: 100, a width most editors and
reviewers accept.

A settings file that cannot be read or parsed is passed over: it only shapes new lines.
``Width.refused`` says which and why (the run names each once): not UTF-8 or not valid, no
regular file (a FIFO, a link to a device), larger than a settings file can be, or an
.editorconfig section whose ``{a,b}`` groups expand past EDITORCONFIG_GLOBS globs.
"""

from __future__ import annotations

import configparser
import fnmatch
import functools
import math
import os
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from xrt2pjrt import files

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

DEFAULT = 88  # ruff's and black's
NOT_PYTHON = 100


@dataclass(frozen=True)
class Width:
    """A folder's line length, and whether a formatter (ruff or black) keeps to it: only
    then are rewritten statements split to fit (python/layout.py)."""

    length: int = DEFAULT
    formatter: bool = False
    refused: tuple[str, ...] = ()  # settings files not read, each "PATH: why"


# The globs an .editorconfig section's {a,b} groups may expand to: 22 groups of two are four
# million, which took minutes and 420 MB to match.
EDITORCONFIG_GLOBS = 1_000


def _text(path: Path, refused: list[str]) -> str | None:
    """A settings file's text; None when there is none, or it cannot be read (``refused``
    says why)."""
    if not os.path.lexists(path) or os.path.isdir(path):
        return None
    try:
        return files.read_settings(path).decode("utf-8")
    except UnicodeDecodeError as exc:
        return _refuse(path, f"not UTF-8 (byte {exc.object[exc.start]:#x} at {exc.start})", refused)
    except OSError as exc:
        return _refuse(path, exc.strerror or str(exc), refused)


def _refuse(path: Path, why: str, refused: list[str]) -> None:
    refused.append(f"{files.quoted(str(path))}: {why}: not read for the line length")


def _toml(path: Path, refused: list[str]) -> dict | None:
    text = _text(path, refused)
    try:
        return None if text is None else tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return _refuse(path, f"not valid TOML ({exc})", refused)
    except RecursionError:
        return _refuse(path, "not valid TOML (nested too deeply to read)", refused)


def _ini(path: Path, refused: list[str]) -> configparser.ConfigParser | None:
    text = _text(path, refused)
    if text is None:
        return None
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error as exc:
        return _refuse(path, f"not valid INI ({str(exc).splitlines()[0]})", refused)
    return parser


def _length(value) -> int | None:
    try:
        length = int(str(value).strip())
    except ValueError:
        return None
    return length if length > 0 else None


def _dig(data: dict | None, *keys: str):
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def _ruff(folder: Path, refused: list[str]) -> Width | None:
    """ruff's own files first (as ruff reads a folder), then pyproject's ruff and black
    tables; a table without a line length means the tool's 88."""
    for name, keys in (
        (".ruff.toml", ()),
        ("ruff.toml", ()),
        ("pyproject.toml", ("tool", "ruff")),
        ("pyproject.toml", ("tool", "black")),
    ):
        table = _dig(_toml(folder / name, refused), *keys)
        if isinstance(table, dict):
            return Width(_length(table.get("line-length", DEFAULT)) or DEFAULT, formatter=True)
    return None


def _linters(folder: Path, refused: list[str]) -> int | None:
    """flake8's, pycodestyle's or pylint's max-line-length."""
    for name, sections in (
        (".flake8", ("flake8",)),
        ("setup.cfg", ("flake8", "pycodestyle", "pep8")),
        ("tox.ini", ("flake8", "pycodestyle", "pep8")),
        (".pylintrc", ("FORMAT", "format")),
        ("pylintrc", ("FORMAT", "format")),
    ):
        if (parser := _ini(folder / name, refused)) is None:
            continue
        for section in sections:
            for key in ("max-line-length", "max_line_length"):
                if parser.has_option(section, key) and (length := _length(parser.get(section, key))) is not None:
                    return length
    return _length(_dig(_toml(folder / "pyproject.toml", refused), "tool", "pylint", "format", "max-line-length") or "")


def _braces(pattern: str) -> list[str]:
    """An editorconfig glob's ``{a,b}`` alternatives, as plain globs; ValueError when they
    would be more than EDITORCONFIG_GLOBS."""
    groups = re.findall(r"\{([^{}]*)\}", pattern)
    if math.prod(group.count(",") + 1 for group in groups) > EDITORCONFIG_GLOBS:
        raise ValueError(f"[{pattern}] expands to more than {EDITORCONFIG_GLOBS:,} globs")
    match = re.search(r"\{([^{}]*)\}", pattern)
    if not match:
        return [pattern]
    return [
        alt
        for part in match.group(1).split(",")
        for alt in _braces(pattern[: match.start()] + part + pattern[match.end() :])
    ]


def _editorconfig(folder: Path, refused: list[str]) -> tuple[int | None, bool]:
    """.editorconfig's max_line_length for a Python file, and whether it is the root one
    (which ends the search upwards). Later sections win, as editorconfig reads them."""
    path = folder / ".editorconfig"
    text = _text(path, refused)
    if text is None:
        return None, False
    length, root, section = None, False, None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        key, sep, value = line.partition("=")
        key, value = key.strip().lower(), value.strip()
        if not sep:
            continue
        if section is None and key == "root":
            root = value.lower() == "true"
        elif section is not None and key == "max_line_length":
            try:
                globs = _braces(section)
            except ValueError as exc:
                return _refuse(path, str(exc), refused), False
                return None, False
            if any(fnmatch.fnmatch("x.py", glob.replace("**", "*").lstrip("/")) for glob in globs):
                length = _length(value) if value.lower() != "off" else None
    return length, root


@functools.cache
def of(folder: Path) -> Width:
    """The line length of Python files in ``folder``: the nearest folder's setting wins,
    of any tool; within one folder, ruff's or black's first (the formatter the code is
    kept by), then the linters', then .editorconfig."""
    refused: list[str] = []
    return replace(_of(folder, refused), refused=tuple(dict.fromkeys(refused)))


def _of(folder: Path, refused: list[str]) -> Width:
    for candidate in (folder, *folder.parents):
        if (found := _ruff(candidate, refused)) is not None:
            return found
        if (length := _linters(candidate, refused)) is not None:
            return Width(length)
        length, root = _editorconfig(candidate, refused)
        if length is not None:
            return Width(length)
        if root:
            break
    return Width()


# The file kinds whose lines are Python, and linted as Python: a notebook's cells too.
PYTHON_KINDS = ("python", "notebook")


def for_kind(kind: str, project: Width) -> int:
    """The width of a new line in a file of ``kind`` where ``project`` is the width of its
    folder's Python: that for Python, 100 for the other kinds."""
    return project.length if kind in PYTHON_KINDS else NOT_PYTHON
