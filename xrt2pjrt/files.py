"""Files on disk: which ones to look at, how to read them, how to write them back safely.

A user's file is never damaged: text is decoded with the encoding the file declares (a
PEP 263 cookie, a BOM, else UTF-8), line endings and the BOM are restored on the way
out, and a write goes to a temporary file in the same folder that then replaces the
original atomically, with the original's mode.
"""

from __future__ import annotations

import codecs
import io
import os
import re
import stat
import tempfile
import tokenize
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pathspec

# Folders no user wants rewritten: tools' caches, environments, build output.
SKIPPED_DIRS = frozenset(
    {".git", ".hg", ".svn", ".tox", ".nox", ".venv", "venv", "env", "node_modules", "build",
     "dist", "site-packages", "__pycache__", ".mypy_cache", ".pytest_cache", ".ipynb_checkpoints",
     ".eggs"}
)

_SHELL_SHEBANG = re.compile(rb"^#![^\n]*\b(ba|z|k|da)?sh\b")
_PYTHON_SHEBANG = re.compile(rb"^#![^\n]*\bpython[0-9.]*\b")


def kind_of(path: Path) -> str | None:
    """The rewriter kind for a path, or None when no rewriter handles it."""
    name = path.name
    suffix = path.suffix.lower()
    if suffix == ".py":
        return "python"
    if suffix == ".ipynb":
        return "notebook"
    if suffix in (".sh", ".bash"):
        return "shell"
    if suffix in (".yml", ".yaml"):
        return "yaml"
    if suffix in (".md", ".markdown", ".mdx", ".rst"):  # (MDX: Markdown with JSX, the same code blocks)
        return "markdown"
    if suffix in (".jsonnet", ".libsonnet"):
        return "jsonnet"
    if name == "Dockerfile" or name.startswith("Dockerfile.") or suffix == ".dockerfile":
        return "dockerfile"
    if suffix in (".txt", ".in") and ("requirements" in name.lower() or "constraints" in name.lower()):
        return "requirements"
    if suffix == "":
        return _kind_from_shebang(path)
    return None


def _kind_from_shebang(path: Path) -> str | None:
    try:
        with path.open("rb") as f:
            head = f.readline(200)
    except OSError:
        return None
    if _SHELL_SHEBANG.match(head):
        return "shell"
    if _PYTHON_SHEBANG.match(head):
        return "python"
    return None


def _is_venv(path: Path) -> bool:
    return (path / "pyvenv.cfg").is_file()


def _skipped_dir(path: Path, is_dir: bool) -> bool:
    return is_dir and path.name in SKIPPED_DIRS


def discover(paths: list[Path], excluded: Callable[[Path, bool], bool] = _skipped_dir,
             force_exclude: bool = False) -> list[tuple[Path, str]]:
    """Every file under ``paths`` that a rewriter handles, with its kind, in a stable order.

    Files named explicitly are always taken (when some rewriter handles them) unless
    ``force_exclude``; folders are walked honouring each ``.gitignore`` on the way down and
    skipping virtualenvs and what ``excluded(path, is_dir)`` says (default: SKIPPED_DIRS).
    """
    found: dict[Path, str] = {}
    for root in paths:
        if root.is_file():
            kind = kind_of(root)
            if kind and not (force_exclude and excluded(root, False)):
                found.setdefault(root, kind)
        elif root.is_dir():
            if force_exclude and excluded(root, True):
                continue
            for path in _walk(root, excluded):
                kind = kind_of(path)
                if kind:
                    found.setdefault(path, kind)
        else:
            raise FileNotFoundError(f"{root}: no such file or folder")
    return sorted(found.items(), key=lambda item: str(item[0]))


def _walk(root: Path, excluded: Callable[[Path, bool], bool]):
    # Each entry: (folder, [(folder the spec is relative to, spec), ...]) so that a
    # .gitignore applies below the folder it lives in, as git does.
    stack = [(root, _ignore_specs_above(root))]
    while stack:
        folder, specs = stack.pop()
        gitignore = folder / ".gitignore"
        if gitignore.is_file():
            lines = gitignore.read_text(encoding="utf-8", errors="replace").splitlines()
            specs = specs + [(folder, pathspec.GitIgnoreSpec.from_lines(lines))]
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            path = Path(entry.path)
            is_dir = entry.is_dir(follow_symlinks=False)
            if _ignored(path, is_dir, specs) or excluded(path, is_dir):
                continue
            if is_dir:
                if not _is_venv(path):
                    stack.append((path, specs))
            elif entry.is_file(follow_symlinks=False):
                yield path


def _ignore_specs_above(root: Path):
    """The .gitignore files of the enclosing git checkout that lie above ``root``."""
    root = root.resolve()
    specs = []
    for parent in reversed(root.parents):
        gitignore = parent / ".gitignore"
        if (parent / ".git").exists():
            specs = []  # a checkout starts here: ignore files above it belong to no one
        if gitignore.is_file():
            lines = gitignore.read_text(encoding="utf-8", errors="replace").splitlines()
            specs.append((parent, pathspec.GitIgnoreSpec.from_lines(lines)))
    return specs


def _ignored(path: Path, is_dir: bool, specs) -> bool:
    for base, spec in specs:
        try:
            rel = path.resolve().relative_to(base.resolve()).as_posix()
        except ValueError:
            continue
        if spec.match_file(rel + "/" if is_dir else rel):
            return True
    return False


class DecodeError(Exception):
    """A file's bytes are not text in the encoding it declares."""

    def __init__(self, message: str, line: int):
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class TextFile:
    """A decoded file and everything needed to encode it back byte for byte."""

    text: str  # with "\n" line endings when the file used "\r\n" throughout
    encoding: str
    bom: bool
    crlf: bool

    def encode(self, text: str) -> bytes:
        if self.crlf:
            text = text.replace("\n", "\r\n")
        data = text.encode(self.encoding)
        return (codecs.BOM_UTF8 + data) if self.bom else data


def decode(data: bytes, kind: str) -> TextFile:
    bom = data.startswith(codecs.BOM_UTF8)
    body = data[len(codecs.BOM_UTF8):] if bom else data
    encoding = "utf-8"
    if kind == "python" and not bom:
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError as exc:
            raise DecodeError(str(exc), 1) from exc
        encoding = "utf-8" if encoding == "utf-8-sig" else encoding
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError as exc:
        line = body[: exc.start].count(b"\n") + 1
        raise DecodeError(f"cannot decode as {encoding}: {exc.reason} at byte {exc.start}", line) from exc
    except LookupError as exc:
        raise DecodeError(f"unknown encoding {encoding!r}", 1) from exc
    crlf = "\r\n" in text and text.count("\r\n") == text.count("\n")
    if crlf:
        text = text.replace("\r\n", "\n")
    return TextFile(text=text, encoding=encoding, bom=bom, crlf=crlf)


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that a reader sees the old or the new file, never half.

    The original's permission bits survive. On any failure the original is untouched and
    the temporary file is removed.
    """
    mode = stat.S_IMODE(path.stat().st_mode)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".xrt2pjrt")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
