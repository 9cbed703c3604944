"""Configuration: ``[tool.xrt2pjrt]`` in pyproject.toml, found as ruff finds its own.

The closest pyproject.toml holding a ``[tool.xrt2pjrt]`` table, from the folder of the
paths given up to the root, is the configuration (a pyproject.toml without the table is
passed over); ``--config FILE`` names one instead (a pyproject.toml, or any TOML file
whose top level holds the keys). Patterns in it are relative to its folder. Command-line
options win: ``--select``, ``--target``, ``--target-version`` and ``--exclude`` replace
the configured value, ``--ignore`` and ``--extend-exclude`` add to it.

A key this module does not know, or a value of the wrong kind, is an error naming the
file and the key: a typo must not quietly migrate with the defaults.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from xrt2pjrt import files
from xrt2pjrt.registry import TARGETS, UnknownRule, expand, parse_version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

TABLE = ("tool", "xrt2pjrt")
KEYS = ("select", "ignore", "target", "target-version", "unsafe-fixes", "exclude", "extend-exclude", "per-file-ignores")

# What discovery leaves out unless ``exclude`` says otherwise (which replaces it, as
# ruff's does; ``extend-exclude`` adds to it): tools' caches, environments, build output,
# where git tracks nothing (files.SKIPPED_DIRS says why).
DEFAULT_EXCLUDE = tuple(f"{name}/" for name in sorted(files.SKIPPED_DIRS))


class ConfigError(ValueError):
    pass


@dataclass
class Settings:
    """What the configuration file says (defaults where it says nothing)."""

    path: Path | None = None  # the file read, if any
    select: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
    target: str = "native"
    target_version: str = "2.9"
    unsafe_fixes: bool = False
    # (folder the patterns are relative to, patterns); None: DEFAULT_EXCLUDE
    exclude: tuple[Path, list[str]] | None = None
    extend_exclude: list[tuple[Path, list[str]]] = field(default_factory=list)
    per_file_ignores: list[tuple[Path, str, list[str]]] = field(default_factory=list)


def find(start: Path) -> Path | None:
    """The closest pyproject.toml with a ``[tool.xrt2pjrt]`` table, from ``start`` up."""
    folder = start.resolve()
    if not folder.is_dir():
        folder = folder.parent
    for candidate in (folder, *folder.parents):
        path = candidate / "pyproject.toml"
        if path.exists() and not path.is_dir() and _table(_read(path), path, required=False) is not None:
            return path
    return None


def load(path: Path | None) -> Settings:
    """The settings of ``path`` (None: the defaults)."""
    if path is None:
        return Settings()
    data = _read(path)
    table = _table(data, path, required=path.name == "pyproject.toml")
    if table is None:
        table = data
    base = path.resolve().parent
    settings = Settings(path=path)

    def fail(key: str, problem: str) -> ConfigError:
        where = "[tool.xrt2pjrt]" if path.name == "pyproject.toml" else "the top level"
        return ConfigError(f"{path}: {where} {key}: {problem}")

    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise ConfigError(
            f"{path}: unknown key {', '.join(map(repr, unknown))} in [tool.xrt2pjrt]; the keys are {', '.join(KEYS)}"
        )
    for key, value in table.items():
        if key in ("select", "ignore", "exclude", "extend-exclude"):
            if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                raise fail(key, f"must be a list of strings, e.g. [\"env\", \"launch\"]; got {value!r}")
        if key in ("exclude", "extend-exclude"):
            _check_patterns(value, lambda problem: fail(key, problem))
        if key in ("select", "ignore"):
            _check_rules(value, lambda problem: fail(key, problem))
            setattr(settings, key, list(value))
        elif key == "target":
            if value not in TARGETS:
                raise fail(key, f"must be one of {', '.join(map(repr, TARGETS))}; got {value!r}")
            settings.target = value
        elif key == "target-version":
            if not isinstance(value, str):
                raise fail(key, f"must be a string such as \"2.9\"; got {value!r}")
            try:
                parse_version(value)
            except ValueError as exc:
                raise fail(key, str(exc).replace("--target-version ", "")) from None
            settings.target_version = value
        elif key == "unsafe-fixes":
            if not isinstance(value, bool):
                raise fail(key, f"must be true or false; got {value!r}")
            settings.unsafe_fixes = value
        elif key == "exclude":
            settings.exclude = (base, list(value))
        elif key == "extend-exclude":
            settings.extend_exclude = [(base, list(value))]
        elif key == "per-file-ignores":
            if not isinstance(value, dict):
                raise fail(key, f"must be a table of pattern = [rule ids]; got {value!r}")
            for pattern, ids in value.items():
                if not (isinstance(ids, list) and all(isinstance(v, str) for v in ids)):
                    raise fail(f"{key} {pattern!r}", f"must be a list of rule ids; got {ids!r}")
                _check_rules(ids, lambda problem: fail(f"{key} {pattern!r}", problem))
                _check_patterns([pattern], lambda problem: fail(key, problem))
                settings.per_file_ignores.append((base, pattern, list(ids)))
    return settings


def _read(path: Path) -> dict:
    try:
        return tomllib.loads(files.read_settings(path).decode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        line = exc.object.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"{path}: not valid TOML: line {line}: not UTF-8 (byte {exc.object[exc.start]:#x})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: not valid TOML: nested too deeply to read") from None


def _table(data: dict, path: Path, required: bool) -> dict | None:
    table = data
    for key in TABLE:
        table = table.get(key) if isinstance(table, dict) else None
    if table is None and required:
        raise ConfigError(f"{path}: no [tool.xrt2pjrt] table")
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{path}: tool.xrt2pjrt must be a table")
    return table


def _check_rules(words: list[str], fail) -> None:
    for word in words:
        try:
            expand(word)
        except UnknownRule as exc:
            raise fail(str(exc)) from None


def _check_patterns(patterns: list[str], fail) -> None:
    for pattern in patterns:
        try:
            files.tame_pattern(pattern)
        except ValueError as exc:
            raise fail(str(exc)) from None


class Matcher:
    """gitignore-style patterns, each group relative to its folder; the ``untracked`` groups
    match only files git does not track."""

    def __init__(self, groups: list[tuple[Path, list[str]]], untracked: list[tuple[Path, list[str]]] = ()):
        self.groups = [(base.resolve(), files.ignore_spec(patterns), False) for base, patterns in groups if patterns]
        self.groups += [(base.resolve(), files.ignore_spec(patterns), True) for base, patterns in untracked if patterns]

    def __call__(self, path: Path, is_dir: bool = False, tracked: bool = False) -> bool:
        resolved = path.resolve()
        for base, spec, untracked_only in self.groups:
            if tracked and untracked_only:
                continue
            try:
                rel = resolved.relative_to(base).as_posix()
            except ValueError:
                rel = path.name  # outside the folder: a pattern can still name it
            if rel == ".":
                continue
            if spec.match_file(rel + "/" if is_dir else rel):
                return True
        return False


def excluded(settings: Settings, cli_exclude: list[str] | None, cli_extend: list[str] | None) -> Matcher:
    """What discovery leaves out: ``exclude`` (or the defaults, for untracked files) and
    ``extend-exclude``, with the command line's patterns relative to the current folder."""
    here = Path(os.getcwd())
    chosen = [(here, cli_exclude)] if cli_exclude else [settings.exclude] if settings.exclude else []
    extend = settings.extend_exclude + ([(here, cli_extend)] if cli_extend else [])
    return Matcher(chosen + extend, untracked=[] if chosen else [(here, list(DEFAULT_EXCLUDE))])


def per_file_ignores(settings: Settings) -> list[tuple[Matcher, list[str]]]:
    return [(Matcher([(base, [pattern])]), ids) for base, pattern, ids in settings.per_file_ignores]
