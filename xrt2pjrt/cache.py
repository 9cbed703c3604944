"""The results cache: what a file's rewrite found, kept by everything that decides it, so
that a run over an unchanged tree parses nothing (``migrate --check`` in pre-commit and CI).

An entry is the outcome of one rewrite (codemod.Rewrite: its changes, its items, the new
text or the error), keyed by a hash of the file's bytes, its kind, the options it was
rewritten with (every field of registry.Options: the rules that run after the selection
and the file's per-file-ignores, the target and its version, the width and line length
its configuration gives, whether the project uses torch_xla, ...) and the tool itself (its
version, the size and time of each file of the package, Python's and libcst's versions).
Beside them it keeps what code_trees.py asks of each file that uses torch_xla (the oldest
release its migrated code needs): answering that imports every rule, and libcst with them.
What a run does beside (the carried shim, the report, the writes) is not kept.

It lives in ``$XRT2PJRT_CACHE_DIR``, else ``$XDG_CACHE_HOME/xrt2pjrt`` or
``~/.cache/xrt2pjrt`` (``--cache-dir``; ``--no-cache`` or ``$XRT2PJRT_NO_CACHE`` reads and
writes none). Runs share it
without a lock: an entry is written whole to a temporary file and renamed into place, so a
reader sees all of it or none; two runs writing one key write the same bytes. An entry is
JSON behind a checksum, read back only into findings and text of the expected shapes: a
truncated, corrupt or foreign entry is a miss, never trusted (and no entry can run code,
as a pickle could). A folder another user owns is not used. The folder is kept under
``MAX_BYTES``: a run that wrote entries removes the least recently used ones beyond it (a
hit marks an entry used).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import xrt2pjrt
from xrt2pjrt.registry import Options, known_ids
from xrt2pjrt.report import Cite, Finding, Fix, Range
from xrt2pjrt.shim import settings

ENV = settings.CACHE_DIR.name
OFF_ENV = settings.NO_CACHE.name  # set (to anything but white space): as --no-cache
FORMAT = 1  # of an entry; a new one starts a new subfolder
MAGIC = b"xrt2pjrt-cache\n"
MAX_BYTES = 256 * 2**20
_KEPT_AFTER_PRUNE = 0.8  # of MAX_BYTES: a prune frees room for more than one run
_STALE_TEMP_SECONDS = 3600  # a temporary file older than this was left by a run that died


def for_run(off: bool, folder: Path | None) -> Cache | None:
    """The cache of a run: none with --no-cache or $XRT2PJRT_NO_CACHE; else ``folder``'s, or
    the default folder's."""
    if off or settings.NO_CACHE.read():
        return None
    return Cache(folder or default_folder())


def default_folder() -> Path:
    """``$XRT2PJRT_CACHE_DIR``, else the user's cache folder's ``xrt2pjrt``."""
    if settings.CACHE_DIR.read():
        return Path(settings.CACHE_DIR.read())
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "xrt2pjrt")


@dataclasses.dataclass
class Rewrite:
    """What a file's rewrite found, before anything about the file on disk is looked at."""

    changes: list[Finding] = dataclasses.field(default_factory=list)
    manual: list[Finding] = dataclasses.field(default_factory=list)
    text: str | None = None  # the new text, when it changed
    error: str | None = None
    error_range: Range | None = None
    lasting: bool = True  # False: an internal error, not kept (the next run tries again)


class Cache:
    """One run's view of the cache folder ``folder``."""

    def __init__(self, folder: Path):
        self.root = folder
        self.folder = folder / f"v{FORMAT}"
        self.hits = self.misses = self.written = 0
        self.usable = _usable(folder)

    def key(self, data: bytes, kind: str, options: Options) -> str:
        digest = hashlib.blake2b(digest_size=20)
        for part in (_tool(), _options(options).encode(), kind.encode()):
            digest.update(len(part).to_bytes(8, "little") + part)
        digest.update(data)
        return digest.hexdigest()

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / key

    def get(self, key: str) -> Rewrite | None:
        """The entry of ``key``; None when there is none, or none whole and of the right shape."""
        found = _rewrite_of(self._read(key))
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    def put(self, key: str, rewrite: Rewrite) -> None:
        if not rewrite.lasting:
            return
        try:
            record = _record(rewrite)
        except TypeError:
            return  # a finding this cache cannot write (a field of a new shape): not kept
        if self._write(key, record):
            self.written += 1

    def needs(self, data: bytes, options: Options, compute: Callable[[], tuple[int, int]]) -> tuple[int, int]:
        """``compute()``: the oldest release a file's migrated code needs (code_trees.py asks
        it of every file's head, ``data``), kept as a rewrite is. Computing it imports every
        rule, and libcst with them, which an unchanged rerun otherwise never does."""
        key = self.key(data, "needs", options)
        record = self._read(key)
        found = record and record.get("needs")
        if isinstance(found, list) and len(found) == 2 and all(type(part) is int for part in found):
            return tuple(found)
        value = compute()
        self._write(key, {"needs": list(value)})
        return value

    def _read(self, key: str) -> dict | None:
        """The record of ``key``'s entry, marked used; None when there is none whole."""
        if not self.usable:
            return None
        path = self._path(key)
        try:
            with open(path, "rb") as f:
                record = _decoded(f.read(), key)
        except OSError:
            return None
        if record is not None:
            try:
                os.utime(path)  # used: the last a prune removes
            except OSError:
                pass
        return record

    def _write(self, key: str, record: dict) -> bool:
        """Whether ``record`` was kept as ``key``'s entry, written whole or not at all."""
        if not self.usable:
            return False
        try:
            payload = json.dumps({"key": key, **record}, ensure_ascii=False).encode()
        except (TypeError, ValueError):
            return False
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(MAGIC + hashlib.blake2b(payload).hexdigest().encode() + b"\n" + payload)
                os.replace(temporary, path)
            except BaseException:
                os.unlink(temporary)
                raise
        except OSError:
            return False  # a full disk or a read-only folder costs the cache, never the run
        return True

    def prune(self, max_bytes: int = MAX_BYTES) -> None:
        """Remove the least recently used entries beyond ``max_bytes`` (down to a part of it),
        and temporary files a run that died left."""
        if not self.usable or not self.written:
            return
        entries, total, now = [], 0, time.time()
        for sub in _scan(self.folder):
            for entry in _scan(sub.path):
                try:
                    stat = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if entry.name.startswith(".tmp-"):
                    if now - stat.st_mtime > _STALE_TEMP_SECONDS:
                        _remove(entry.path)
                    continue
                entries.append((stat.st_mtime, stat.st_size, entry.path))
                total += stat.st_size
        if total <= max_bytes:
            return
        for _, size, path in sorted(entries):
            if total <= max_bytes * _KEPT_AFTER_PRUNE:
                break
            _remove(path)
            total -= size


def _usable(folder: Path) -> bool:
    """Not a folder another user owns (nor anything else in its place): its entries would be
    theirs to write."""
    try:
        stat = folder.stat()
    except FileNotFoundError:
        return True  # made on the first write
    except OSError:
        return False
    return os.path.isdir(folder) and (not hasattr(os, "getuid") or stat.st_uid == os.getuid())


def _scan(folder: str | Path) -> list[os.DirEntry]:
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except OSError:
        return []


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass  # another run pruned it first


@functools.cache
def _tool() -> bytes:
    """What the tool is: its version, each file of the package (a checkout being edited
    changes without a new version), Python's version and libcst's."""
    package = Path(xrt2pjrt.__file__).parent
    parts = [xrt2pjrt.__version__, sys.version, _libcst_version()]
    for folder, dirs, names in sorted(os.walk(package)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            stat = os.stat(os.path.join(folder, name))
            parts.append(f"{os.path.relpath(os.path.join(folder, name), package)} {stat.st_size} {stat.st_mtime_ns}")
    return "\n".join(parts).encode()


def _libcst_version() -> str:
    """libcst's version file, read without importing libcst (nor importlib.metadata): a run
    that parses nothing imports neither."""
    spec = importlib.util.find_spec("libcst")
    folder = os.path.dirname(spec.origin) if spec is not None and spec.origin else None
    for name in ("_version.py", "__init__.py") if folder else ():
        try:
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            continue
    return "no libcst"


@functools.lru_cache(maxsize=None)
def _options(options: Options) -> str:
    """Every field of ``options``, the selection as the rule ids it lets run: a new field
    counts without a word here."""
    fields = {f.name: getattr(options, f.name) for f in dataclasses.fields(options) if f.name != "rules"}
    return json.dumps(
        {
            "rules": sorted(rule for rule in known_ids() if options.on(rule)),
            **{
                name: value if isinstance(value, (str, int, bool, type(None))) else repr(value)
                for name, value in fields.items()
            },
        },
        sort_keys=True,
    )


# --- entries: JSON, read back into nothing but findings and text --------------------------


def _record(rewrite: Rewrite) -> dict:
    return {
        "changes": [_finding(f) for f in rewrite.changes],
        "manual": [_finding(f) for f in rewrite.manual],
        "text": rewrite.text,
        "error": rewrite.error,
        "error_range": _range(rewrite.error_range),
    }


def _finding(finding: Finding) -> dict:
    out = {}
    for f in dataclasses.fields(Finding):
        value = getattr(finding, f.name)
        if isinstance(value, Range):
            value = _range(value)
        elif isinstance(value, Fix):
            value = [value.safety, value.applied]
        elif f.name == "cites":
            value = [[c.line, c.cell, c.text] for c in value]
        elif not isinstance(value, (str, int, bool, type(None))):
            raise TypeError(f"a finding's {f.name} of a shape the cache does not keep")
        out[f.name] = value
    return out


def _range(value: Range | None) -> list[int] | None:
    return None if value is None else [value.start_line, value.start_column, value.end_line, value.end_column]


class _Malformed(Exception):
    pass


def _decoded(raw: bytes, key: str) -> dict | None:
    """The JSON object of an entry whose checksum holds and whose key is ``key``."""
    head, _, payload = raw.partition(b"\n")
    checksum, _, payload = payload.partition(b"\n")
    if head + b"\n" != MAGIC or checksum != hashlib.blake2b(payload).hexdigest().encode():
        return None
    try:
        record = json.loads(payload)
    except ValueError:
        return None
    return record if isinstance(record, dict) and record.get("key") == key else None


def _rewrite_of(record: dict | None) -> Rewrite | None:
    if record is None:
        return None
    try:
        return Rewrite(
            changes=_findings(record["changes"]),
            manual=_findings(record["manual"]),
            text=_optional(record["text"], str),
            error=_optional(record["error"], str),
            error_range=_range_of(record["error_range"]),
        )
    except (_Malformed, KeyError, ValueError, TypeError):
        return None


def _findings(value) -> list[Finding]:
    if not isinstance(value, list):
        raise _Malformed
    return [_finding_of(item) for item in value]


_FINDING_FIELDS = frozenset(f.name for f in dataclasses.fields(Finding))


def _finding_of(item) -> Finding:
    if not isinstance(item, dict) or item.keys() != _FINDING_FIELDS:
        raise _Malformed
    fields = {}
    for name, value in item.items():
        if name in ("range", "cell_range"):
            value = _range_of(value) if name == "cell_range" else _range_of(value, required=True)
        elif name == "fix":
            if not (
                isinstance(value, list) and len(value) == 2 and isinstance(value[0], str) and isinstance(value[1], bool)
            ):
                raise _Malformed
            value = Fix(*value)
        elif name == "cites":
            if not isinstance(value, list) or not all(isinstance(c, list) and len(c) == 3 for c in value):
                raise _Malformed
            value = tuple(
                Cite(_of(line, int), _optional(cell, int), _optional(text, str)) for line, cell, text in value
            )
        elif not isinstance(value, (str, int, bool, type(None))):
            raise _Malformed
        fields[name] = value
    return Finding(**fields)


def _range_of(value, required: bool = False) -> Range | None:
    if value is None and not required:
        return None
    if not (isinstance(value, list) and len(value) == 4):
        raise _Malformed
    return Range(*(_of(number, int) for number in value))


def _of(value, kind: type):
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise _Malformed
    return value


def _optional(value, kind: type):
    return None if value is None else _of(value, kind)
