"""One ``xrt2pjrt migrate`` run, below the command line: what the user asked (options and
the configuration together), the files it covers, their plans, and the writes.

The command line (cli.py) parses options into a ``Request`` and renders the ``Done`` it
gets back; everything it decides on is decided here.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from xrt2pjrt import cache, carry, codemod, config, files, report, width
from xrt2pjrt.code_trees import NO_NEWER_NEED, CodeTrees
from xrt2pjrt.registry import TARGETS, Options, parse_version, select, selected, split_words

STDIN = Path("-")
LAUNCHERS = ("gcloud", "xrt2pjrt")


class UsageError(ValueError):
    """A request that cannot run: a bad option or configuration, a missing path."""


@dataclass
class Request:
    paths: list[Path]
    write: bool = False
    check: bool = False
    select: list[str] | None = None
    ignore: list[str] | None = None
    target: str | None = None
    target_version: str | None = None
    zone: str | None = None
    project: str | None = None
    launcher: str = "gcloud"
    jobs: int | None = None
    config: Path | None = None
    exclude: list[str] | None = None
    extend_exclude: list[str] | None = None
    force_exclude: bool = False
    stdin_filename: Path | None = None
    stdin: bytes | None = None  # read by the command line when a path is "-"
    report: Path | None = None  # where the command line writes its report: checked before anything is written
    max_file_size: int | None = None  # bytes (Options.max_file_bytes)
    unsafe_fixes: bool = False  # --unsafe-fixes (or the configuration's unsafe-fixes = true)
    exit_zero: bool = False  # --exit-zero: --check reports, and exits 0 but for files it could not process
    no_cache: bool = False  # --no-cache: the results cache is neither read nor written
    cache_dir: Path | None = None  # --cache-dir (default: cache.default_folder())

    @property
    def mode(self) -> str:
        return "write" if self.write else "check" if self.check else "preview"


@dataclass
class Done:
    run: report.Run
    plans: list[codemod.Plan]
    settings: config.Settings
    seconds: float = 0.0
    new_stdin: bytes | None = None  # stdin's bytes after the rewrite (the input when unchanged)
    notes: list[str] = field(default_factory=list)
    listed: list[str] = field(default_factory=list)  # how the files of each checkout were listed (for -v)
    written: list[str] = field(default_factory=list)  # files written, in order
    stopped_by: int | None = None  # the signal (SIGINT, SIGTERM) that ended the run early
    exit_zero: bool = False  # Request.exit_zero

    @property
    def exit_code(self) -> int:
        """0 when done; for --check, 1 while a change is pending or a spot to decide is open
        (neither fixed nor settled with its marker), as ``ruff check`` fails on any open
        finding; 2 when a file could not be processed."""
        if self.stopped_by is not None:
            return 128 + self.stopped_by  # as a shell reports a command a signal ended
        summary = self.run.summary
        if summary.files_failed:
            return 2
        open_ = summary.files_changed or summary.pending or summary.manual
        return 1 if self.run.mode == "check" and open_ and not self.exit_zero else 0


def _check(request: Request) -> None:
    if request.write and request.check:
        raise UsageError("--write and --check exclude each other")
    if request.launcher not in LAUNCHERS:
        raise UsageError(f"--launcher must be gcloud or xrt2pjrt; got {request.launcher!r}")
    if STDIN in request.paths:
        if len(request.paths) != 1:
            raise UsageError("'-' (stdin) cannot be given with other paths")
        if request.stdin_filename is None:
            raise UsageError("reading stdin ('-') needs --stdin-filename PATH: its kind and its configuration")
        if files.kind_of(request.stdin_filename) is None:
            raise UsageError(
                f"--stdin-filename {request.stdin_filename}: not a kind of file xrt2pjrt rewrites "
                "(.py, .sh, Dockerfile, .yaml, .md, .ipynb, ...)"
            )
    elif request.stdin_filename is not None:
        raise UsageError("--stdin-filename goes with the path '-' (stdin)")


def load_settings(request: Request) -> config.Settings:
    if request.config is not None:
        if not request.config.is_file():
            raise UsageError(f"--config {request.config}: no such file")
        return config.load(request.config)
    paths = [request.stdin_filename if p == STDIN else p for p in request.paths]
    starts = [p.resolve() for p in paths if p.exists()] or [Path.cwd()]
    common = Path(os.path.commonpath([str(p) for p in starts]))
    return config.load(config.find(common))


def options_for(request: Request, settings: config.Settings, note: Callable[[str], None]) -> PerFileOptions:
    """The options of each file: the selection (command line over configuration) less the
    configuration's per-file-ignores that match the file."""
    target = request.target or settings.target
    if target not in TARGETS:
        raise UsageError(f"--target must be one of {', '.join(TARGETS)}; got {target!r}")
    try:
        version = parse_version(request.target_version or settings.target_version)
        chosen = request.select if split_words(request.select) else settings.select
        rules = select(chosen, list(settings.ignore) + split_words(request.ignore), note=note)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    base = Options(
        rules=rules,
        target=target,
        target_version=version,
        zone=request.zone,
        project=request.project,
        launcher=request.launcher,
        unsafe_fixes=request.unsafe_fixes or settings.unsafe_fixes,
    )
    if request.max_file_size is not None:
        base = replace(base, max_file_bytes=request.max_file_size)
    return PerFileOptions(base, config.per_file_ignores(settings))


@dataclass
class PerFileOptions:
    """Each file's options, one object per distinct choice (the per-file-ignores that match
    it, its line length): the rewriters' caches are per ``Options``."""

    base: Options
    per_file: list
    _cache: dict[tuple, Options] = field(default_factory=dict)
    refused: dict[str, None] = field(default_factory=dict)  # settings files the line lengths were not read from
    code: CodeTrees | None = None  # what the code each file serves says (code_trees.py)

    def __call__(self, path: Path) -> Options:
        words = tuple(w for match, ids in self.per_file if match(path) for w in ids)
        found = width.of(path.resolve().parent)
        self.refused.update(dict.fromkeys(found.refused))
        served = self.code.of(path) if self.code else None
        key = (words, found, width.for_kind(files.kind_of(path), found), served)
        if key not in self._cache:
            chosen = replace(self.base, rules=self.base.rules.ignoring(list(words))) if words else self.base
            if served is not None:
                chosen = replace(
                    chosen,
                    torch_xla_project=served.uses_torch_xla,
                    code_needs=served.needs,
                    own_xla_spawn=served.own_xla_spawn,
                    transformers_trainer=served.transformers_trainer,
                    transformers_gone=served.transformers_gone,
                )
            self._cache[key] = replace(chosen, line_length=found.length if found.formatter else None, width=key[2])
        return self._cache[key]

    def serving(self, code: CodeTrees) -> PerFileOptions:
        return PerFileOptions(self.base, self.per_file, code=code)


def _needs(options: Options, text: str) -> tuple[int, int]:
    """The oldest torch_xla that has every spelling the run's Python rules write into ``text``."""
    return max(
        (rule.needs(text, options.target_version) for rule in selected(options, "python")), default=NO_NEWER_NEED
    )


def _kept_needs(results: cache.Cache, options: Options, text: str) -> tuple[int, int]:
    return results.needs(text.encode(), options, lambda: _needs(options, text))


def discover(request: Request, settings: config.Settings) -> files.Discovery:
    try:
        excluded = config.excluded(settings, request.exclude, request.extend_exclude)
    except ValueError as exc:  # a pattern of --exclude too wild to match (the configuration's are checked as read)
        raise UsageError(f"--exclude: {exc}") from None
    if request.paths == [STDIN]:
        name = request.stdin_filename
        if request.force_exclude and excluded(name, False):
            return files.Discovery()
        return files.Discovery(targets=[(name, files.kind_of(name))])
    return files.discover(request.paths, excluded=_not_the_copy(excluded), force_exclude=request.force_exclude)


def _not_the_copy(excluded: files.Excluded) -> files.Excluded:
    """``excluded``, and every carried shim's folder: the copy is the tool's (carry.py), not
    the user's code to migrate, tracked by git or not."""

    def leaves_out(path: Path, is_dir: bool, tracked: bool) -> bool:
        return (is_dir and path.name == carry.FOLDER) or excluded(path, is_dir, tracked)

    return leaves_out


def migrate(
    request: Request,
    note: Callable[[str], None] = lambda message: None,
    progress: Callable[[int, int], None] | None = None,
) -> Done:
    """Plan every file the request covers, write them for --write; UsageError when it cannot run."""
    _check(request)
    try:
        settings = load_settings(request)
    except config.ConfigError as exc:
        raise UsageError(str(exc)) from None
    options = options_for(request, settings, note)
    found = discover(request, settings)
    if request.report is not None:
        try:
            codemod.check_report_path(request.report, [path for path, _ in found.targets])
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    started = time.perf_counter()
    if request.paths == [STDIN]:
        return _migrate_stdin(request, settings, options, found.targets, started)
    for line in codemod.notes_on(found, request.write):
        note(line)
    results = cache.for_run(request.no_cache, request.cache_dir)
    needs = functools.partial(_needs, options.base)
    if results is not None:
        needs = functools.partial(_kept_needs, results, options.base)
    options = options.serving(CodeTrees(found.targets, needs))
    total = len(found.targets)
    root = carry.root_of(request.paths)

    def the_copy(plans: list[codemod.Plan]) -> list[codemod.Plan]:
        return carry.plans(root, plans)

    done = codemod.execute(
        found.targets,
        options,
        request.jobs,
        write=request.write,
        progress=(lambda n: progress(n, total)) if progress else None,
        more=the_copy,
        cache=results,
    )
    for line in [*options.refused, *carry.notes_on(root, done.plans)]:
        note(line)
    # a path named that cannot be read fails as a file does: said, the run goes on, exit 2
    refused = [report.FileResult(str(path), "", error=why) for path, why in found.refused]
    run = report.Run([p.result for p in done.plans] + refused, request.mode, ignored=len(found.ignored))
    listed = found.listed + (
        [f"ignored folders: more than {files.IGNORED_LOOKS:,} entries, not all looked into for XRT-era words"]
        if found.ignored_looks >= files.IGNORED_LOOKS
        else []
    )
    return Done(
        run,
        done.plans,
        settings,
        time.perf_counter() - started,
        written=done.written,
        stopped_by=done.stopped_by,
        listed=listed,
        exit_zero=request.exit_zero,
    )


def _migrate_stdin(request, settings, options, targets, started) -> Done:
    """stdin for editors: the text is planned as the file ``--stdin-filename`` names would
    be, and nothing is written to disk (``--write`` prints the new text instead)."""
    data = request.stdin or b""
    plans = [codemod.plan(path, kind, options(path), data=data) for path, kind in targets]
    new = next((p.new_bytes for p in plans if p.new_bytes is not None), data)
    run = report.Run([p.result for p in plans], request.mode)
    return Done(run, plans, settings, time.perf_counter() - started, new_stdin=new, exit_zero=request.exit_zero)
