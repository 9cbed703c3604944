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
"""

from __future__ import annotations

import configparser
import fnmatch
import functools
import re
import sys
from dataclasses import dataclass
from pathlib import Path

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


def _toml(path: Path) -> dict | None:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None


def _ini(path: Path) -> configparser.ConfigParser | None:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, configparser.Error):
        return None
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


def _ruff(folder: Path) -> Width | None:
    """ruff's own files first (as ruff reads a folder), then pyproject's ruff and black
    tables; a table without a line length means the tool's 88."""
    for name, keys in ((".ruff.toml", ()), ("ruff.toml", ()), ("pyproject.toml", ("tool", "ruff")),
                       ("pyproject.toml", ("tool", "black"))):
        path = folder / name
        if not path.is_file():
            continue
        table = _dig(_toml(path), *keys)
        if isinstance(table, dict):
            return Width(_length(table.get("line-length", DEFAULT)) or DEFAULT, formatter=True)
    return None


def _linters(folder: Path) -> int | None:
    """flake8's, pycodestyle's or pylint's max-line-length."""
    for name, sections in ((".flake8", ("flake8",)), ("setup.cfg", ("flake8", "pycodestyle", "pep8")),
                           ("tox.ini", ("flake8", "pycodestyle", "pep8")), (".pylintrc", ("FORMAT", "format")),
                           ("pylintrc", ("FORMAT", "format"))):
        path = folder / name
        if not path.is_file() or (parser := _ini(path)) is None:
            continue
        for section in sections:
            for key in ("max-line-length", "max_line_length"):
                if parser.has_option(section, key) and (length := _length(parser.get(section, key))) is not None:
                    return length
    pyproject = folder / "pyproject.toml"
    if pyproject.is_file():
        return _length(_dig(_toml(pyproject), "tool", "pylint", "format", "max-line-length") or "")
    return None


def _braces(pattern: str) -> list[str]:
    """An editorconfig glob's ``{a,b}`` alternatives, as plain globs."""
    match = re.search(r"\{([^{}]*)\}", pattern)
    if not match:
        return [pattern]
    return [alt for part in match.group(1).split(",")
            for alt in _braces(pattern[:match.start()] + part + pattern[match.end():])]


def _editorconfig(folder: Path) -> tuple[int | None, bool]:
    """.editorconfig's max_line_length for a Python file, and whether it is the root one
    (which ends the search upwards). Later sections win, as editorconfig reads them."""
    path = folder / ".editorconfig"
    if not path.is_file():
        return None, False
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
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
        elif section is not None and key == "max_line_length" and any(
                fnmatch.fnmatch("x.py", glob.replace("**", "*").lstrip("/")) for glob in _braces(section)):
            length = _length(value) if value.lower() != "off" else None
    return length, root


@functools.cache
def of(folder: Path) -> Width:
    """The line length of Python files in ``folder``: the nearest folder's setting wins,
    of any tool; within one folder, ruff's or black's first (the formatter the code is
    kept by), then the linters', then .editorconfig."""
    for candidate in (folder, *folder.parents):
        if (found := _ruff(candidate)) is not None:
            return found
        if (length := _linters(candidate)) is not None:
            return Width(length)
        length, root = _editorconfig(candidate)
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
