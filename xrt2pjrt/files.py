"""Files on disk: which ones to look at, how to read them, how to write them back safely.

A user's file is never damaged: text is decoded with the encoding the file declares (a
PEP 263 cookie, a BOM, else UTF-8), line endings and the BOM are restored on the way
out, and a write goes to a temporary file in the same folder that then replaces the
original atomically, with the original's mode, owner and group.

What is never done, because it would lose data or surprise:
- a file is not written when it changed since it was read: it is compared again (content,
  size, times, inode) after the new bytes are on disk, just before the rename, so the
  window in which an edit by another program can be lost is the one between a ``stat``
  and a ``rename`` (microseconds);
- a symbolic link named on the command line is written through (its target is replaced),
  never replaced by a file; links met inside a folder are not followed, and counted;
- a file with several hard links is not rewritten (a rename would split it from its other
  names, an in-place write is not atomic): it is reported;
- a read-only file (its owner may not write it) is not rewritten, though a rename could
  replace it: it is reported;
- a FIFO, socket or device is never opened for reading.

Temporary files are named ``.NAME.XXXXXXXX.xrt2pjrt`` and locked (``flock``) while they
exist; a lock left unheld means the run that made it is gone, so a later run that finds one
(``stale``) can remove it knowing it is no other run's work in progress.
"""

from __future__ import annotations

import codecs
import errno
import functools
import fcntl
import hashlib
import io
import itertools
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time
import tokenize
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from xrt2pjrt.rule_index import TRIGGERS

# Folders no user wants rewritten: tools' caches, environments, build output. They hold
# no file git tracks: one that git tracks there is the user's own (a committed build/
# script), and is migrated; a virtualenv (pyvenv.cfg) is skipped, tracked or not.
SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".tox",
        ".nox",
        ".venv",
        "venv",
        "env",
        "node_modules",
        "build",
        "dist",
        "site-packages",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ipynb_checkpoints",
        ".eggs",
    }
)

# A copy of torch_xla itself in a project (an unpacked wheel, a vendored package): the files
# its releases ship are the library's, which the 2.9 wheel replaces whole, and rewriting them
# breaks the copy (it has no torch_xla.runtime, no sync): they are passed over, and the copy
# named; files of the project's own beside them are migrated. A wheel's metadata goes whole.
_LIBRARY_FILE = "core/xla_model.py"
_LIBRARY_METADATA = re.compile(r"torch_xla-[^/]*\.(dist-info|data)")
SHIPPED = Path(__file__).with_name("library_files.txt")  # (tools/library_files.py)


def library_copy(folder: Path) -> bool:
    """Whether ``folder`` is a copy of the torch_xla package (1.x and later: the files listed)."""
    return folder.name == "torch_xla" and (folder / _LIBRARY_FILE).is_file()


@functools.cache
def shipped() -> frozenset[str]:
    """The files torch_xla's releases ship, relative to its package folder."""
    lines = SHIPPED.read_text(encoding="utf-8").splitlines()
    return frozenset(line for line in lines if line and not line.startswith("#"))


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
    if suffix in (".tf", ".tfvars"):
        return "terraform"
    if name == ".env" or name.startswith(".env.") or suffix == ".env":  # (KEY=VALUE lines: compose's env_file)
        return "dotenv"
    if name == "Dockerfile" or name.startswith("Dockerfile.") or suffix == ".dockerfile":
        return "dockerfile"
    if suffix in (".txt", ".in") and ("requirements" in name.lower() or "constraints" in name.lower()):
        return "requirements"
    if name in ("pyproject.toml", "setup.cfg"):
        return "metadata"
    if suffix == "":
        return _kind_from_shebang(path) or _sniffed_shell(path)
    if suffix == ".txt":  # a list of commands to run (cmd.txt), not notes nor a log
        return _sniffed_shell(path)
    return None


def _start_of(path: Path, size: int, line: bool = False) -> bytes | None:
    """Up to ``size`` bytes from the start of a regular file (with ``line``: of its first line);
    b"" for anything else (a FIFO is never waited on), None when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return b""
            return f.readline(size) if line else f.read(size)
    except OSError:
        return None


def _kind_from_shebang(path: Path) -> str | None:
    head = _start_of(path, 200, line=True)
    if head is None:
        return None
    if _SHELL_SHEBANG.match(head):
        return "shell"
    if _PYTHON_SHEBANG.match(head):
        return "python"
    return None


# An extensionless file with no shebang can still be shell: a runbook of commands copied to a
# terminal (or a .txt of them), a file meant to be ``source``d (``export XRT_TPU_CONFIG=...``). One is taken for
# shell when a line of it is a command of the kind a shell rule acts on (``export``, ``python3
# -m torch_xla...``, ``gcloud``), holding a word such a rule acts on, no line reads as prose or
# a log, and bash reads the whole as a script (``bash -n`` parses, it runs nothing): Python
# fails that. A Pipfile's ``torch = "*"`` or CODEOWNERS' ``/src/ @owner`` pass bash but start no
# such command; Makefiles and Dockerfiles under other names are not shell.
_NOT_SCRIPTS = frozenset({"makefile", "gnumakefile", "procfile", "jenkinsfile", "vagrantfile", "justfile"})
_RUNBOOK_COMMAND = re.compile(r"[ \t]*(export|python[0-9.]*|gcloud|pip3?|conda|source|sudo|bash|nohup|env)[ \t]")
_DOCKERFILE = re.compile(r"\s*(#[^\n]*\n\s*)*(FROM|ARG)\s", re.IGNORECASE)
# A line of prose or of a log, which bash would read as a command all the same: a number or a
# date first, a sentence's capital first, a sentence's end, or "word: " outside quotes.
_PROSE_OR_LOG = re.compile(r"\s*(\d|[A-Z][a-z]+[ ,])|.*[a-z][.:]\s*$|[^'\"`]*\w: [^'\"`]*$")
_SNIFFED_BYTES = 64 * 1024  # a runbook is short; a longer file without a shebang is left out


@functools.cache
def _shell_words() -> re.Pattern:
    """The words the shell rules act on (their trigger, rewriters.trigger_for's for shell)."""
    return re.compile("|".join(TRIGGERS["shell"]))


def _sniffed_shell(path: Path) -> str | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return _sniffed(path, st.st_mtime_ns, st.st_size)  # (kind_of is asked more than once a run)


@functools.lru_cache(maxsize=1024)
def _sniffed(path: Path, mtime_ns: int, size: int) -> str | None:
    bash = shutil.which("bash")
    if bash is None or path.name.lower() in _NOT_SCRIPTS:
        return None
    data = _start_of(path, _SNIFFED_BYTES + 1)
    try:
        text = data.decode("utf-8") if data is not None else ""
    except UnicodeDecodeError:
        return None
    if not text or len(data) > _SNIFFED_BYTES or "\0" in text or _DOCKERFILE.match(text):
        return None
    lines = text.splitlines()
    if not any(_RUNBOOK_COMMAND.match(line) and _shell_words().search(line) for line in lines) or any(
        _PROSE_OR_LOG.match(line) for line in lines if line.strip() and not line.lstrip().startswith("#")
    ):
        return None
    try:
        parsed = subprocess.run([bash, "-n"], input=data, capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return "shell" if parsed.returncode == 0 else None


@dataclass
class Discovery:
    """What ``discover`` found: the files to migrate, and what the run must say about the rest."""

    targets: list[tuple[Path, str]] = field(default_factory=list)  # (path, kind), in a stable order
    refused: list[tuple[Path, str]] = field(default_factory=list)  # a path named that cannot be read, and why
    symlinks: int = 0  # symbolic links inside the folders walked, not followed
    # Files a rewriter handles that are passed over as ignored (git's own view, or the
    # .gitignore files where git cannot answer), each with the ignored place it is in: an
    # ignored folder, or the file itself. Counted, and the places that hold XRT-era words
    # named, so that none is left unmigrated without a word.
    ignored: list[tuple[Path, Path]] = field(default_factory=list)
    ignored_looks: int = 0  # entries looked at inside ignored folders (none more once past IGNORED_LOOKS)
    stale: list[Path] = field(default_factory=list)  # temporary files an interrupted run left
    library_copies: list[Path] = field(default_factory=list)  # copies of torch_xla itself, passed over
    listed: list[str] = field(default_factory=list)  # how each checkout's files were listed (said under -v)


Excluded = Callable[[Path, bool, bool], bool]  # (path, is_dir, tracked by git): left out


def _skipped_dir(path: Path, is_dir: bool, tracked: bool = False) -> bool:
    return is_dir and not tracked and path.name in SKIPPED_DIRS


def discover(paths: list[Path], excluded: Excluded = _skipped_dir, force_exclude: bool = False) -> Discovery:
    """Every file under ``paths`` that a rewriter handles, with its kind, in a stable order.

    Files named explicitly are always taken (when some rewriter handles them) unless
    ``force_exclude``, a symbolic link as the file it points to. In a git checkout, a
    folder's files are the ones git lists: tracked files (an ignore rule that matches one
    does not matter: it is in the history), and untracked ones no ignore rule matches.
    Elsewhere, or where git cannot answer, folders are walked honouring each ``.gitignore``
    on the way down. Either way virtualenvs, symbolic links and what ``excluded(path,
    is_dir, tracked)`` says (default: SKIPPED_DIRS, for untracked files) are skipped. A
    named path that is missing, a FIFO, a socket or a device, and a folder or .gitignore
    that cannot be read, is refused with the reason; the others go on.
    """
    found: dict[Path, str] = {}
    out = Discovery()
    for root in paths:
        problem = _named_problem(root)
        if problem:
            out.refused.append((root, problem))
        elif root.is_dir():
            if force_exclude and excluded(root, True, False):
                continue
            for path in _Walk(root, excluded, out).files():
                kind = kind_of(path)
                if kind:
                    found.setdefault(path, kind)
        else:
            kind = kind_of(root)
            if kind and not (force_exclude and excluded(root, False, False)):
                found.setdefault(root, kind)
            out.stale += _stale_beside(root)
    out.targets = sorted(found.items(), key=lambda item: str(item[0]))
    return out


_SPECIAL = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _not_a_file(mode: int) -> str | None:
    """Why a path of this mode is never read: a FIFO, socket or device; None for a file or folder."""
    return next((f"{what}, not a file: not read" for test, what in _SPECIAL if test(mode)), None)


def _named_problem(path: Path) -> str | None:
    """Why a path named on the command line cannot be migrated, or None."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            return f"a symbolic link to {os.readlink(path)}, which does not exist"
        return "no such file or folder"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a loop of symbolic links: not read"
        return f"cannot read: {exc.strerror or exc}"
    return _not_a_file(st.st_mode)


class _Walk:
    """The files below a folder named on the command line: as git lists them in a checkout,
    else as the .gitignore files on the way down say; a checkout met on the way down (a
    submodule, a repository inside another) is listed by git in its own right."""

    def __init__(self, root: Path, excluded: Excluded, out: Discovery):
        self.root, self.real_root, self.excluded, self.out = root, root.resolve(), excluded, out
        self.skipped: dict[tuple[Path, bool], bool] = {}  # (folder, tracked): excluded or a virtualenv
        self.packages: dict[Path, bool] = {}  # folder: a copy of the torch_xla package

    def files(self):
        if any(os.path.lexists(folder / ".git") for folder in (self.real_root, *self.real_root.parents)):
            listed = self._git(self.root)
            if listed is not None:
                yield from listed
                return
        try:
            specs = _ignore_specs_above(self.real_root)
        except OSError as exc:
            self.out.refused.append((Path(exc.filename), _unknown_rules(exc, self.root)))
            return
        yield from self._folders(self.root, specs)

    def _git(self, folder: Path) -> list[Path] | None:
        """The files git lists below ``folder``; None when git cannot answer (said)."""
        listings, unreadable = [], {}
        neutral = _git_drivers(folder)
        for options in (
            ("--cached",),
            ("--others", "--exclude-standard"),
            ("--others", "--ignored", "--exclude-standard", "--directory"),
        ):
            listed = neutral if isinstance(neutral, str) else _git_ls_files(folder, options, neutral)
            if isinstance(listed, str):
                self.out.listed.append(
                    f"files of {folder}: git cannot list them ({listed}); its .gitignore files are read instead"
                )
                return None
            listings.append(listed[0])
            unreadable.update(listed[1])
        self.out.listed.append(f"files of {folder}: as git lists them (tracked, and untracked ones not ignored)")
        for name, why in unreadable.items():  # each said once, as the walk says it; their files are not read
            self.out.refused.append((folder / name, _unreadable_folder(why)))
            self.skipped[folder / name, True] = self.skipped[folder / name, False] = True
        tracked, untracked, ignored = listings
        for name in ignored:  # (a folder all of whose files are ignored ends in /)
            path = folder / name
            if not self._skipped(folder, path, name.endswith("/"), False):
                self._ignored_place(path, name.endswith("/"))
        files = []
        for names, is_tracked in ((tracked, True), (untracked, False)):
            for name in names:
                files += self._listed(folder, folder / name, is_tracked)
        self._special_files(folder, {os.path.dirname(name) for name in tracked + untracked}, neutral)
        return files

    def _special_files(self, folder: Path, listed: set[str], neutral: tuple[str, ...]) -> None:
        """Name the FIFOs, sockets and devices git passes over in silence, where a file a
        rewriter handles would have been (``train.py`` a FIFO): in the folders git listed
        files in (below ``folder``), unless git's ignore rules cover them."""
        found = {}
        for name in sorted(listed):
            try:
                with os.scandir(folder / name) as entries:
                    found.update(
                        (entry.path, mode)
                        for entry in entries
                        if not (
                            entry.is_file(follow_symlinks=False)
                            or entry.is_dir(follow_symlinks=False)
                            or entry.is_symlink()
                        )
                        and kind_of(Path(entry.path))
                        and _not_a_file(mode := entry.stat(follow_symlinks=False).st_mode)
                    )
            except OSError:
                continue  # gone, or unreadable: its files are said as they are read
        if not found:
            return
        ran = _git(
            folder,
            "check-ignore",
            "--stdin",
            "-z",
            neutral=neutral,
            stdin=b"".join(os.fsencode(os.path.relpath(path, folder)) + b"\0" for path in found),
        )
        ignored = set() if isinstance(ran, str) else {os.fsdecode(n) for n in ran.stdout.split(b"\0") if n}
        for path, mode in found.items():
            if os.path.relpath(path, folder) not in ignored and not self._skipped(folder, Path(path), False, False):
                self.out.refused.append((Path(path), _not_a_file(mode)))

    def _listed(self, folder: Path, path: Path, tracked: bool):
        """What a path git lists below ``folder`` comes to: itself (a file), nothing (skipped;
        a link, counted; a file deleted but still in git's index), or the files of the
        checkout it is (a folder)."""
        if self._skipped(folder, path.parent, True, tracked):
            return
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return
        except OSError as exc:
            self.out.refused.append((path, f"cannot read: {exc.strerror or exc}"))
            return
        if stat.S_ISLNK(mode):
            self.out.symlinks += 1
        elif self.excluded(path, stat.S_ISDIR(mode), tracked):
            return
        elif stat.S_ISDIR(mode):  # a submodule, or a repository inside this one
            listed = self._git(path) if os.path.lexists(path / ".git") else None
            yield from listed if listed is not None else self._folders(path, [])
        elif _TEMPORARY.fullmatch(path.name):
            if _unlocked(path):
                self.out.stale.append(path)
        elif not self._library_file(path):
            yield path

    def _skipped(self, folder: Path, path: Path, is_dir: bool, tracked: bool) -> bool:
        """``path`` (below ``folder``, or ``folder`` itself) or a folder on the way down to it
        is excluded or, a folder, a virtualenv; the folders' answers are kept."""
        if path in (folder, path.parent):
            return False
        if not is_dir:
            return self._skipped(folder, path.parent, True, tracked) or self.excluded(path, False, tracked)
        if (path, tracked) not in self.skipped:
            self.skipped[path, tracked] = (
                self._skipped(folder, path.parent, True, tracked)
                or self.excluded(path, True, tracked)
                or os.path.isfile(path / "pyvenv.cfg")
                or self._library_metadata(path)
            )
        return self.skipped[path, tracked]

    def _folders(self, start: Path, specs):
        # Each entry: (folder, [(folder the spec is relative to, spec), ...]) so that a
        # .gitignore applies below the folder it lives in, as git does. Paths are matched as
        # they are below the root (never resolved: a folder may hold a symbolic link loop).
        stack = [(start, specs)]
        while stack:
            folder, specs = stack.pop()
            entries = _entries(folder, self.out)
            if entries is None or (folder != self.root and "pyvenv.cfg" in entries and entries["pyvenv.cfg"].is_file()):
                continue  # unreadable (said), gone, or a virtualenv
            if folder != start and ".git" in entries:
                listed = self._git(folder)
                if listed is not None:
                    yield from listed
                    continue
                specs = []  # its own ignore files, as git would read them, and none above
            if ".gitignore" in entries:
                try:
                    spec = _read_ignore_file(folder / ".gitignore")
                except OSError as exc:
                    self.out.refused.append((folder / ".gitignore", _unknown_rules(exc, folder)))
                    continue
                specs = specs + [(self.real_root / folder.relative_to(self.root), spec)]
            for entry in entries.values():
                path = Path(entry.path)
                if entry.is_symlink():
                    self.out.symlinks += 1
                    continue
                is_dir = entry.is_dir(follow_symlinks=False)
                if self.excluded(path, is_dir, False) or (
                    self._library_metadata(path) if is_dir else self._library_file(path)
                ):
                    continue
                if _ignored(self.real_root / path.relative_to(self.root), is_dir, specs):
                    self._ignored_place(path, is_dir)
                    continue
                if is_dir:
                    stack.append((path, specs))
                elif _TEMPORARY.fullmatch(entry.name):
                    if _unlocked(path):
                        self.out.stale.append(path)
                else:
                    yield path  # a FIFO or socket too: one a rewriter's kind names is refused when read

    def _library_metadata(self, folder: Path) -> bool:
        """Whether ``folder`` is the metadata of an unpacked torch_xla wheel, noted once."""
        return bool(_LIBRARY_METADATA.fullmatch(folder.name)) and self._noted(folder)

    def _library_file(self, path: Path) -> bool:
        """Whether ``path`` is a file torch_xla ships, in a copy of it (its folder noted once)."""
        for folder in path.parents:
            if folder in self.packages:
                found = self.packages[folder]
            else:
                found = self.packages[folder] = library_copy(folder)
            if found:
                return path.relative_to(folder).as_posix() in shipped() and self._noted(folder)
            if folder == self.root:
                return False
        return False

    def _noted(self, copy: Path) -> bool:
        if copy not in self.out.library_copies:
            self.out.library_copies.append(copy)
        return True

    def _ignored_place(self, place: Path, is_dir: bool) -> None:
        """Count the files of a kind migrated here that an ignored file or folder holds."""
        self.out.ignored += [
            (path, place) for path in (self._every_file(place) if is_dir else [place]) if kind_of(path)
        ]

    def _every_file(self, folder: Path):
        """The files below an ignored folder, where no ignore rule matters (all of it is
        ignored): excluded folders, virtualenvs and links left out, what cannot be read
        passed over (the run reads none of it); no folder more once IGNORED_LOOKS entries were seen."""
        stack = [folder]
        while stack and self.out.ignored_looks < IGNORED_LOOKS:
            try:
                with os.scandir(stack.pop()) as found:
                    entries = list(found)
            except OSError:
                continue
            self.out.ignored_looks += len(entries)
            if any(e.name == "pyvenv.cfg" for e in entries):
                continue
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if not self.excluded(Path(entry.path), True, False):
                        stack.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=False):
                    yield Path(entry.path)


# Entries looked at, at most, inside ignored folders to count the files of a kind migrated
# here that they hold: an ignored data set of a million images must not slow every run.
IGNORED_LOOKS = 100_000
# How long git may take to list a checkout's files before its .gitignore files are read instead.
GIT_TIMEOUT = 60
# A checkout is a stranger's: its .git/config (and the files it includes) may name programs
# git runs, and git must run none of them. ``-c`` outranks every config file, so each setting
# that makes a listing (or anything it could lead to) run a program is overridden: the
# fsmonitor hook, hooks, pagers, external diff, ssh, credential helpers and the alternate-refs
# command; the filter and diff drivers, whose names the checkout chooses, are read first
# (``_git_drivers``) and emptied one by one. No protocol is allowed (a partial clone would
# fetch a missing object, which can run ssh or a transport helper) and no optional lock is
# taken (no index refresh, no write to the checkout).
_GIT_NEUTRAL = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "diff.external=",
    "core.sshCommand=",
    "credential.helper=",
    "core.alternateRefsCommand=",
    "core.askPass=",
    "protocol.allow=never",
)
_GIT_DRIVER = re.compile(
    r"(filter\.(.+)\.(?:clean|smudge|process|required)|diff\.(.+)\.(?:textconv|command)"
    r"|merge\.(.+)\.driver)"
)
# The environment git runs in: of the user's GIT_* variables only the two that say where the
# user's own configuration and checkouts are (others point git at another repository, as a hook
# sets them, or name a program: GIT_EXTERNAL_DIFF, GIT_SSH_COMMAND, ...); no system
# configuration, no prompt, no protocol, no lazy fetch.
_GIT_KEPT = ("GIT_CONFIG_GLOBAL", "GIT_CEILING_DIRECTORIES")
_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ALLOW_PROTOCOL": "",
    "GIT_NO_LAZY_FETCH": "1",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_PAGER": "cat",
}


_CANNOT_OPEN = re.compile(r"warning: could not open directory '(.*)': (.*)")


def _git(
    folder: Path, *args: str, neutral: tuple[str, ...] = _GIT_NEUTRAL, stdin: bytes | None = None
) -> subprocess.CompletedProcess | str:
    """``git -C folder ARGS`` (``stdin`` its input) as it must run in a stranger's checkout
    (see _GIT_NEUTRAL), or why it did not run."""
    env = {
        **{name: value for name, value in os.environ.items() if not name.startswith("GIT_") or name in _GIT_KEPT},
        **_GIT_ENV,
    }
    options = [word for setting in neutral for word in ("-c", setting)]
    try:
        proc = subprocess.Popen(
            ["git", "--no-optional-locks", *options, "-C", os.fspath(folder), *args],
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
    except FileNotFoundError:
        return "git is not on PATH"
    except OSError as exc:
        return f"git does not run: {exc.strerror or exc}"
    with proc:
        deadline = time.monotonic() + GIT_TIMEOUT
        while True:
            try:
                out, err = proc.communicate(stdin, timeout=_GIT_LOOK)
            except subprocess.TimeoutExpired:
                stdin = None  # (handed over by the first call: the next ones only read)
                why = (
                    "it waits to open a FIFO (named pipe) of the checkout"
                    if _waits_on_a_fifo(proc.pid)
                    else f"no answer in {GIT_TIMEOUT} s"
                    if time.monotonic() > deadline
                    else None
                )
                if why:
                    proc.kill()
                    proc.communicate()
                    return why
                continue
            return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


# How often a git that has not answered is looked at: git opens each .gitignore it meets
# with a blocking open(), and one that is a FIFO holds it until some process writes to it.
_GIT_LOOK = 0.25


def _waits_on_a_fifo(pid: int) -> bool:
    """Whether a process is blocked opening a FIFO no one writes to (Linux says where a
    process sleeps: fs/pipe.c's wait_for_partner); False where that cannot be known."""
    try:
        with open(f"/proc/{pid}/wchan") as f:
            return f.read().strip() == "wait_for_partner"
    except OSError:
        return False


def _git_drivers(folder: Path) -> tuple[str, ...] | str:
    """_GIT_NEUTRAL and, emptied, every filter, diff and merge driver the checkout's
    configuration names (``git config`` itself runs none)."""
    ran = _git(folder, "config", "--null", "--name-only", "--list")
    if isinstance(ran, str):
        return ran
    names = os.fsdecode(ran.stdout).split("\0") if ran.returncode == 0 else []
    emptied = [
        f"{name}=false" if name.endswith(".required") else f"{name}="
        for name in names
        if _GIT_DRIVER.fullmatch(name.lower())
    ]
    return _GIT_NEUTRAL + tuple(emptied)


def _git_ls_files(
    folder: Path, options: tuple[str, ...], neutral: tuple[str, ...] = _GIT_NEUTRAL
) -> tuple[list[str], dict[str, str]] | str:
    """The paths below ``folder``, relative to it, that ``git ls-files -z OPTIONS`` lists
    (any bytes a name holds kept, as os.fsdecode keeps them), and the folders git warned it
    could not read, with why; or why git did not answer. A checkout its owner's git would
    not trust (safe.directory) is not trusted here either."""
    ran = _git(folder, "ls-files", "-z", *options, neutral=neutral)
    if isinstance(ran, str):
        return ran
    said = os.fsdecode(ran.stderr).strip().splitlines()
    if ran.returncode:
        return said[0] if said else f"exit code {ran.returncode}"
    unreadable = dict(m.groups() for m in map(_CANNOT_OPEN.fullmatch, said) if m)
    return [os.fsdecode(name) for name in ran.stdout.split(b"\0") if name], unreadable


def _entries(folder: Path, out: Discovery) -> dict[str, os.DirEntry] | None:
    """A folder's entries by name, in order; None when it is gone or cannot be read (said)."""
    try:
        with os.scandir(folder) as entries:
            return {entry.name: entry for entry in sorted(entries, key=lambda e: e.name)}
    except FileNotFoundError:
        return None  # removed since its parent was read: nothing of it to migrate
    except OSError as exc:
        out.refused.append((folder, _unreadable_folder(exc.strerror or str(exc))))
        return None


def _unreadable_folder(why: str) -> str:
    return f"cannot read the folder: {why}; nothing in it was migrated"


def _unknown_rules(exc: OSError, folder: Path) -> str:
    # Walked without these rules, the run could rewrite files they ignore, which no history
    # keeps: the folder is left alone, and the line says why.
    return f"cannot read: {exc.strerror or exc}; {folder} was not migrated, as its ignore rules are unknown"


def _read_ignore_file(path: Path) -> pathspec.GitIgnoreSpec:
    """A .gitignore's rules; OSError (said as the file being unreadable) when it is no regular
    file, too large, or holds a pattern too wild to match in bounded time."""
    lines = read_settings(path).decode("utf-8", errors="replace").splitlines()
    try:
        return ignore_spec(lines, numbered=True)
    except ValueError as exc:
        raise OSError(errno.EINVAL, str(exc), str(path)) from None


# --- settings and ignore files: a checkout's, read with a bound --------------------------------

# The most a settings or ignore file may hold: far more than any real one; a link to
# /dev/zero or a huge file is refused, never read until memory runs out.
SETTINGS_LIMIT = 2_000_000


def read_settings(path: Path, limit: int = SETTINGS_LIMIT) -> bytes:
    """The bytes of a settings or ignore file; OSError, with a ``strerror`` that says why,
    unless it is a regular file of at most ``limit`` bytes (never blocks on a FIFO, never
    reads a device)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            what = next((what for test, what in _SPECIAL if test(mode)), "a folder" if stat.S_ISDIR(mode) else None)
            raise OSError(errno.EINVAL, f"{what or 'something'}, not a file", str(path))
        chunks, size = [], 0
        while size <= limit and (chunk := os.read(fd, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise OSError(errno.EFBIG, f"larger than {limit:,} bytes, more than a settings file holds", str(path))
        return b"".join(chunks)
    finally:
        os.close(fd)


# Runs of ``*`` a gitignore pattern may hold (``**`` counts one): pathspec matches with a
# regex, whose backtracking over k runs grows as a name's length to the k-th power (five
# runs: 24 s for one name of 250 characters; four: under half a second).
MAX_WILDCARDS = 4
_GLOB_ATOM = re.compile(r"\\.|\[[!^]?\]?[^\]]*\]|\*+|.", re.S)  # an escape, a class, a run of stars, a character


def tame_pattern(pattern: str) -> str:
    """A gitignore pattern as git reads it, with each run of stars as short as git's meaning
    of it allows (``a****b`` is ``a*b``; ``/***/`` is ``**``): ValueError when it still holds
    more than MAX_WILDCARDS runs."""
    negated = pattern.startswith("!")
    atoms = _GLOB_ATOM.findall(pattern[negated:])
    for i, atom in enumerate(atoms):
        if atom.startswith("**"):
            alone = (i == 0 or atoms[i - 1] == "/") and (i == len(atoms) - 1 or atoms[i + 1] == "/")
            atoms[i] = "**" if alone else "*"
    if sum(atom.startswith("*") for atom in atoms) > MAX_WILDCARDS:
        raise ValueError(
            f"the pattern {pattern!r} holds more than {MAX_WILDCARDS} runs of wildcards (*): matching "
            "it could take hours"
        )
    return "!" * negated + "".join(atoms)


def ignore_spec(lines: list[str], numbered: bool = False) -> pathspec.GitIgnoreSpec:
    """gitignore ``lines`` as pathspec matches them, tamed (tame_pattern); ValueError for a
    pattern too wild to match in bounded time (with its line number, when ``numbered``)."""
    tamed = []
    for number, line in enumerate(lines, 1):
        try:
            tamed.append(line if line.startswith("#") else tame_pattern(line))
        except ValueError as exc:
            raise ValueError(f"line {number}: {exc}" if numbered else str(exc)) from None
    return pathspec.GitIgnoreSpec.from_lines(tamed)


def _ignore_specs_above(root: Path):
    """The .gitignore files of the enclosing git checkout that lie above ``root`` (resolved)."""
    specs = []
    for parent in reversed(root.parents):
        gitignore = parent / ".gitignore"
        if os.path.lexists(parent / ".git"):
            specs = []  # a checkout starts here: ignore files above it belong to no one
        if os.path.lexists(gitignore) and not os.path.isdir(gitignore):
            specs.append((parent, _read_ignore_file(gitignore)))  # (OSError: the caller says so)
    return specs


def _ignored(path: Path, is_dir: bool, specs) -> bool:
    for base, spec in specs:
        try:
            rel = path.relative_to(base).as_posix()
        except ValueError:
            continue
        if spec.match_file(rel + "/" if is_dir else rel):
            return True
    return False


# --- temporary files -----------------------------------------------------------------------

_TEMPORARY = re.compile(r"\.(.+)\.[a-z0-9_]{8}\.xrt2pjrt")  # .NAME.XXXXXXXX.xrt2pjrt (mkstemp's 8)


def _unlocked(path: Path) -> bool:
    """True when no process holds the lock a run keeps on its temporary file while it lives."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _stale_beside(path: Path) -> list[Path]:
    """Stale temporary files of a file named on the command line."""
    try:
        names = os.listdir(path.parent)
    except OSError:
        return []
    prefix = f".{path.name}."
    return [
        path.parent / n
        for n in sorted(names)
        if n.startswith(prefix)
        and _TEMPORARY.fullmatch(n)
        and _TEMPORARY.fullmatch(n).group(1) == path.name
        and _unlocked(path.parent / n)
    ]


def remove_stale(paths: list[Path]) -> list[Path]:
    """Remove the stale temporary files found; the ones removed (another run may have beaten us)."""
    removed = []
    for path in paths:
        if _unlocked(path):
            try:
                os.unlink(path)
                removed.append(path)
            except OSError:
                pass
    return removed


class DecodeError(Exception):
    """A file's bytes are not text in the encoding it declares, from ``line`` and
    ``column`` on (1-based, in characters)."""

    def __init__(self, message: str, line: int, column: int = 1):
        super().__init__(message)
        self.line, self.column = line, column


@dataclass(frozen=True)
class TextFile:
    """A decoded file and everything needed to encode it back byte for byte."""

    text: str  # with "\n" line endings when the file used "\r\n", or "\r" alone, throughout
    encoding: str
    bom: bool
    crlf: bool
    cr: bool = False  # "\r" alone ends each line (classic Mac OS): libcst drops a last one

    def encode(self, text: str) -> bytes:
        if self.crlf:
            text = text.replace("\n", "\r\n")
        elif self.cr:
            text = text.replace("\n", "\r")
        data = text.encode(self.encoding)
        return (codecs.BOM_UTF8 + data) if self.bom else data


def decode(data: bytes, kind: str) -> TextFile:
    bom = data.startswith(codecs.BOM_UTF8)
    body = data[len(codecs.BOM_UTF8) :] if bom else data
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
        line_start = body.rfind(b"\n", 0, exc.start) + 1
        column = len(body[line_start : exc.start].decode(encoding, errors="replace")) + 1
        raise DecodeError(
            f"cannot decode as {encoding}: {exc.reason} at byte {exc.start}",
            body.count(b"\n", 0, exc.start) + 1,
            column,
        ) from exc
    except LookupError as exc:
        raise DecodeError(f"unknown encoding {encoding!r}", 1) from exc
    crlf = "\r\n" in text and text.count("\r\n") == text.count("\n")
    cr = "\r" in text and "\n" not in text
    if crlf:
        text = text.replace("\r\n", "\n")
    elif cr:
        text = text.replace("\r", "\n")
    return TextFile(text=text, encoding=encoding, bom=bom, crlf=crlf, cr=cr)


@dataclass(frozen=True)
class Snapshot:
    """A file as it was read: what a write compares it to, just before replacing it."""

    digest: str  # sha256 of the bytes
    size: int
    mtime_ns: int
    ctime_ns: int
    dev: int
    ino: int
    nlink: int
    mode: int = 0o100644

    @classmethod
    def of(cls, data: bytes, st: os.stat_result) -> "Snapshot":
        return cls(
            hashlib.sha256(data).hexdigest(),
            st.st_size,
            st.st_mtime_ns,
            st.st_ctime_ns,
            st.st_dev,
            st.st_ino,
            st.st_nlink,
            st.st_mode,
        )

    def same_file(self, st: os.stat_result) -> bool:
        return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_dev, st.st_ino) == (
            self.size,
            self.mtime_ns,
            self.ctime_ns,
            self.dev,
            self.ino,
        )


DELETED = "deleted while xrt2pjrt ran: not written"


class Changed(Exception):
    """The file changed on disk since it was read: it is left as it now is (``written``:
    False), or it was written and an edit made meanwhile was saved beside it (True)."""

    def __init__(self, message: str = "", written: bool = False):
        super().__init__(message)
        self.written = written


class NotAFile(Exception):
    """A path that is no regular file (a FIFO, a device, a folder): never read."""


class TooLarge(NotAFile):
    """A file larger than a run reads (a sparse file of a terabyte costs a checkout nothing)."""


def read(path: Path, limit: int | None = None) -> tuple[bytes, Snapshot]:
    """A regular file's bytes and snapshot. Never blocks on a FIFO (refused by its mode; and
    opened non-blocking, should it become one meanwhile) and never opens a socket. With
    ``limit``, a file of more bytes is refused (TooLarge), never read."""
    problem = _not_a_file(os.stat(path).st_mode)
    if problem:
        raise NotAFile(problem)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotAFile(_not_a_file(st.st_mode) or "not a regular file: not read")
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read() if limit is None else f.read(limit + 1)
        if limit is not None and len(data) > limit:
            raise TooLarge(
                f"more than {limit:,} bytes: not read (a run reads {READ_FACTOR} times --max-file-size, "
                f"{READ_FLOOR:,} bytes at least)"
            )
        return data, Snapshot.of(data, os.fstat(fd))
    finally:
        os.close(fd)


# The most a run reads of a file: READ_FACTOR times --max-file-size (which bounds what is
# parsed: a notebook's outputs or a document's prose are read, not parsed), READ_FLOOR at least.
READ_FACTOR = 50
READ_FLOOR = 100_000_000


def read_limit(max_file_bytes: int) -> int:
    return max(READ_FACTOR * max_file_bytes, READ_FLOOR)


def write_atomic(
    path: Path, data: bytes, expect: Snapshot | None = None, new: bool = False, hold: bool = False
) -> "Replaced | None":
    """Replace ``path`` with ``data`` so that a reader sees the old or the new file, never half.

    ``path`` is the file itself (a symbolic link is resolved by the caller). The original's
    permission bits, owner and group survive; when the owner cannot be kept (not root),
    nothing is written. A path that does not exist yet (a report) is created with the
    default mode; with ``new``, only created (FileExistsError when something is there by
    then). On any failure the original is untouched and the temporary file removed.

    With ``expect``, the file must still be what it was when it was read: once the new
    bytes are on disk it is compared again (content and ``fstat``, then an ``lstat`` right
    before the rename), and ``Changed`` is raised when it differs. The file being replaced
    stays open across the rename and is looked at once more right after it (``Replaced``):
    an edit that reached it all the same (this process was paused between its last look and
    the rename) is kept. With ``hold``, it stays open for the caller to look again later
    (``settle``: an editor's write in flight during the rename lands a little later) and close;
    the caller then settles it once right away (``put_back=True``) and once more later.
    """
    replaced = _replace(path, data, expect, new)
    if replaced is None or hold:
        return replaced
    try:
        replaced.settle(put_back=True)
    finally:
        replaced.close()
    return None


def _replace(path: Path, data: bytes, expect: Snapshot | None, new: bool) -> "Replaced | None":
    try:
        st: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        if expect is not None:
            raise Changed(DELETED) from None  # never brought back: the user may have removed it
        st = None
    if st is not None and read_only(st.st_mode):  # (a rename would replace it all the same)
        raise PermissionError(errno.EACCES, read_only(st.st_mode))
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".xrt2pjrt")
    original = None  # the file being replaced, open across the rename
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # held while the temporary file lives: it is not stale
        if st is None:
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(fd, 0o666 & ~umask)
        else:
            _keep_owner(fd, st, path)
            os.fchmod(fd, stat.S_IMODE(st.st_mode))
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
        if expect is not None:
            original = _open_unchanged(path, expect)
        if new:
            os.link(tmp, path)  # never over a file: fails when the name is taken
            os.unlink(tmp)
        else:
            os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if original is not None:
            os.close(original)
        os.close(fd)
        raise
    written = Snapshot.of(data, os.fstat(fd))
    os.close(fd)
    _sync_folder(path.parent)
    return None if original is None else Replaced(path, original, expect.digest, written)


def read_only(mode: int) -> str | None:
    """Why a file of ``mode`` is never rewritten: its owner may not write it (chmod 0444),
    which says it is not to be changed, though a rename could replace it."""
    if stat.S_IWUSR & mode:
        return None
    return f"read-only (mode {stat.S_IMODE(mode):04o}): not rewritten; make it writable (chmod u+w) to migrate it"


class Replaced:
    """A file that a write replaced, still open: an edit that reached it during the rename
    is found by comparing it with how it was just before, and kept."""

    def __init__(self, path: Path, fd: int, digest: str, written: Snapshot):
        # (its content is what counts: the rename itself changes its ctime, and mtime is coarse)
        self.path, self.fd, self.digest, self.written = path, fd, digest, written
        self._put_backs: list[Replaced] = []

    def settle(self, put_back: bool = False) -> None:
        """Changed when the replaced file was edited after its last look. With ``put_back``
        (right after the rename), the edited file goes back in place of the new one when the
        new one is still as written; else the edited file is saved beside the new one."""
        for back in self._put_backs:
            back.settle()
        edited = _read_all(self.fd)
        if hashlib.sha256(edited).hexdigest() == self.digest:
            return
        new = self.written
        for _ in range(3 if put_back else 0):
            try:
                back = _replace(self.path, edited, new, new=False)
            except Changed:
                break  # the new file was edited as well: keep both
            self._put_backs.append(back)  # the new file it replaced, looked at again with this one
            back.settle()  # an edit that reached the new file meanwhile: saved beside
            again = _read_all(self.fd)  # the edits may still be coming in
            if again == edited:
                self.digest = hashlib.sha256(edited).hexdigest()
                raise Changed()  # the file is as its editor left it, as if never written
            edited, new = again, back.written
        self.digest = hashlib.sha256(edited).hexdigest()
        raise Changed(
            f"changed on disk while xrt2pjrt wrote it: written, and the file as edited meanwhile is "
            f"saved as {_save_beside(self.path, edited)}: merge the two",
            written=True,
        )

    def close(self) -> None:
        for back in self._put_backs:
            back.close()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _save_beside(path: Path, data: bytes) -> Path:
    for n in itertools.count(1):
        saved = path.with_name(f"{path.name}.edited-while-xrt2pjrt-wrote{'' if n == 1 else f'-{n}'}")
        try:
            write_atomic(saved, data, new=True)
            return saved
        except FileExistsError:
            continue
    raise AssertionError("unreachable")


def _open_unchanged(path: Path, expect: Snapshot) -> int:
    """An open descriptor on ``path``, once the file is shown to be what ``expect`` says;
    Changed otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise Changed(DELETED) from None
    try:
        if not expect.same_file(os.fstat(fd)) or hashlib.sha256(_read_all(fd)).hexdigest() != expect.digest:
            raise Changed()
        if not expect.same_file(os.fstat(fd)) or not expect.same_file(os.lstat(path)):
            raise Changed()
        return fd
    except BaseException:
        os.close(fd)
        raise


def _read_all(fd: int) -> bytes:
    chunks, offset = [], 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _keep_owner(fd: int, st: os.stat_result, path: Path) -> None:
    mine = os.fstat(fd)
    if (mine.st_uid, mine.st_gid) == (st.st_uid, st.st_gid):
        return
    try:
        os.fchown(fd, st.st_uid, st.st_gid)
    except PermissionError:
        raise PermissionError(
            errno.EPERM, f"owned by {st.st_uid}:{st.st_gid}, which a rewrite by this user cannot keep; not written"
        ) from None


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable (a crash right after it keeps one of the two files)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmg]?)b?", re.IGNORECASE)


def parse_size(text: str) -> int:
    """Bytes in ``2000000``, ``500k``, ``2MB`` or ``1.5M`` (powers of 1000, as file managers show)."""
    m = _SIZE.fullmatch(text.strip())
    if not m:
        raise ValueError(f"a size is a number of bytes, optionally with k, M or G (2M, 500k); got {text!r}")
    return int(float(m.group(1)) * 1000 ** " kmg".index(m.group(2).lower() or " "))


# --- names as shown ------------------------------------------------------------------------

_PLAIN_NAME = re.compile(r'[^"\\\x00-\x1f\x7f\ud800-\udfff]*')
_C_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\v": "\\v",
    "\f": "\\f",
    "\r": "\\r",
    '"': '\\"',
    "\\": "\\\\",
}


def quoted(name: str) -> str:
    """A path as git writes an unusual one: as it is when it holds no control character,
    ``"``, ``\\`` or undecodable byte; else in double quotes with C escapes, each byte that
    is not UTF-8 (a lone surrogate from ``os.fsdecode``) as an octal escape ``\\377``. The
    quoted form is reversible, and it is what ``git apply`` reads in a diff header."""
    if _PLAIN_NAME.fullmatch(name):
        return name
    out = []
    for ch in name:
        if ch in _C_ESCAPES:
            out.append(_C_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F or 0xD800 <= ord(ch) <= 0xDFFF:
            out.extend(f"\\{byte:03o}" for byte in os.fsencode(ch))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'
