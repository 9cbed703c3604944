"""The commands, on typer: each one's options (in the order its help lists them) and what it
does with them: call the library, render. No logic of its own.

cli.py imports this module only when a command runs (typer is most of that start-up), and
answers `--version` and `--help` itself. Every command imports what it needs when it runs.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import sys
from pathlib import Path
from typing import Annotated, Literal, Optional

import typer
import typer.core

from xrt2pjrt.shim.settings import CACHE_DIR
from xrt2pjrt.usage import COMMANDS, DESCRIPTION, EPILOG, EXIT_ERROR, EXIT_OK, HELP_OPTIONS, OPTIONS, VERSION

# A run over at least this many files shows its progress on a terminal.
PROGRESS_FROM = 100


class Failure(Exception):
    """A command that cannot go on: its message is printed, and the exit code is 2."""


# --- output --------------------------------------------------------------------------

_ANSI = {"red": "31", "green": "32", "yellow": "33", "cyan": "36", "bold": "1"}


def uses_color(choice: str, stream) -> bool:
    # --color wins; then NO_COLOR and FORCE_COLOR (no-color.org, force-color.org); then the terminal.
    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return stream.isatty()


@contextlib.contextmanager
def reader_may_leave(stream):
    """`xrt2pjrt migrate . | head`: when the reader of STREAM goes away, what is left to say
    goes nowhere and the command goes on (a --report still gets written, the exit code is
    the run's), instead of ending in a BrokenPipeError traceback."""
    try:
        yield
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())  # also for the flush at exit
        os.close(devnull)


class Out:
    """stdout and stderr, each coloured or not; -q and -v."""

    def __init__(self, color: str = "auto", quiet: bool = False, verbose: bool = False):
        self.quiet, self.verbose = quiet, verbose
        self.color = {sys.stdout: uses_color(color, sys.stdout), sys.stderr: uses_color(color, sys.stderr)}

    def _write(self, stream, text: str, style: str | None, end: str) -> None:
        if style and self.color[stream]:
            text = f"\033[{_ANSI[style]}m{text}\033[0m"
        with reader_may_leave(stream):
            stream.write(text + end)

    def out(self, text: str, style: str | None = None, end: str = "\n") -> None:
        self._write(sys.stdout, text, style, end)

    def raw(self, data: bytes) -> None:
        with reader_may_leave(sys.stdout):
            sys.stdout.flush()
            sys.stdout.buffer.write(data)

    def flush(self) -> None:
        with reader_may_leave(sys.stdout):
            sys.stdout.flush()

    def err(self, text: str, style: str | None = None) -> None:
        self._write(sys.stderr, text, style, "\n")

    def note(self, text: str) -> None:
        if not self.quiet:
            self.err(f"xrt2pjrt: note: {text}", "yellow")


class Progress:
    """`1234/4150 files` on stderr, redrawn at most ten times a second, only on a terminal."""

    def __init__(self, out: Out):
        self.out, self.last, self.shown = out, 0.0, False

    def __call__(self, done: int, total: int) -> None:
        import time

        if done == 1:
            self.shown = not self.out.quiet and total >= PROGRESS_FROM and sys.stderr.isatty()
        now = time.monotonic()
        if self.shown and (now - self.last >= 0.1 or done == total):
            self.last = now
            sys.stderr.write(f"\r{done}/{total} files")
            sys.stderr.flush()

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def _diff_label(side: str, path: str) -> str:
    # git's a/ b/ prefixes, so `git apply -p1` takes the preview of a relative path;
    # an absolute path is shown as it is.
    return path if Path(path).is_absolute() else f"{side}/{path}"


_DIFF_STYLE = {"+": "green", "-": "red", "@": "cyan"}


def print_diff(out: Out, original: str, updated: str, path: str) -> None:
    from xrt2pjrt import diff
    from xrt2pjrt.files import quoted  # an unusual name (a newline in it) quoted as git does

    # a file the run creates (the carried shim's) comes from /dev/null, as git writes it
    new = not original and not os.path.lexists(path)
    lines = diff.unified(
        original.splitlines(keepends=True),
        updated.splitlines(keepends=True),
        fromfile="/dev/null" if new else quoted(_diff_label("a", path)),
        tofile=quoted(_diff_label("b", path)),
    )
    for line in lines:
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        header = line.startswith(("+++", "---"))
        out.out(line.rstrip("\n"), "bold" if header else _DIFF_STYLE.get(line[0]), end=line[len(line.rstrip("\n")) :])


# --- the application -------------------------------------------------------------------


class _OurHelp:
    """-h/--help said as the rest of the help says things."""

    def get_help_option(self, ctx):
        option = super().get_help_option(ctx)
        if option is not None:
            option.help = OPTIONS["-h, --help"]
        return option


class _Group(_OurHelp, typer.core.TyperGroup):
    pass


class _Command(_OurHelp, typer.core.TyperCommand):
    """A command whose usage line is the one written for it (in `options_metavar`), not
    typer's rendering of its parameters, which changes between releases."""

    def collect_usage_pieces(self, ctx) -> list[str]:
        return [self.options_metavar]


# rich_markup_mode=None: click's plain help and usage errors, so rich is never imported;
# no pretty exceptions: a bug of ours shows Python's own traceback, a user's error one line.
app = typer.Typer(
    cls=_Group,
    help=DESCRIPTION,
    epilog=EPILOG,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": HELP_OPTIONS},
)


def command(name: str, usage: str = "[OPTIONS]", **settings):
    """Declares FUNCTION as the command NAME: its help is its summary in usage.COMMANDS and its
    docstring. Its exit code is the one it returns, or 2 when it raises Failure, whose
    message is printed on one line."""

    def declare(function):
        @functools.wraps(function)
        def body(**options) -> None:
            try:
                code = function(**options)
            except Failure as exc:
                Out().err(f"xrt2pjrt: {exc}", "red")
                code = EXIT_ERROR
            finally:
                Out().flush()  # what is still buffered, while a reader gone away can be handled
            raise typer.Exit(code)

        summary = COMMANDS[name]
        details = inspect.cleandoc(function.__doc__ or "")
        app.command(
            name, cls=_Command, help=f"{summary}\n\n{details}", short_help=summary, options_metavar=usage, **settings
        )(body)
        return function

    return declare


def _print_version(given: bool) -> None:
    if given:
        print(VERSION)
        raise typer.Exit()


@app.callback()
def _top(
    version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help=OPTIONS["--version"])
    ] = False,
) -> None:
    pass


# The words of the command being run, for a message that gives it back changed (_as_write).
_argv: list[str] = []


def main(argv: list[str]) -> int:
    """`xrt2pjrt ARGV` on typer; its exit code. Run through click's main rather than
    `app()`, which would install typer's exception hook for the rest of the process."""
    _argv[:] = argv
    try:
        typer.main.get_command(app).main(argv, prog_name="xrt2pjrt")
    except SystemExit as exc:  # how click's main always ends
        return exc.code


# --- option types ------------------------------------------------------------------------


def _at_least(least: int):
    """A whole number of at least LEAST (click's own range check would print `[x>=1]`)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise typer.BadParameter(f"not a whole number: {text!r}") from None
        if value < least:
            raise typer.BadParameter(f"must be {least} or more; got {value}")
        return value

    return parse


def _seconds(text: str) -> float:
    """A positive number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise typer.BadParameter(f"not a number of seconds: {text!r}") from None
    if not 0 < value < float("inf"):
        raise typer.BadParameter(f"must be more than 0; got {text}")
    return value


def _size(text: str) -> int:
    from xrt2pjrt.files import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


def _option(*names: str, help: str, metavar: str | None = None, **settings):
    # Defaults are said in the help text where they matter, never as typer's `[default: x]`.
    # A path is not checked here (readable=False): the command names a path it cannot read
    # in its own one line and goes on with the others.
    return typer.Option(*names, help=help, metavar=metavar, show_default=False, readable=False, **settings)


# --- commands ------------------------------------------------------------------------

_TEXT_STYLE = {"error": "red", "decide": "yellow", "note": "cyan", "file": "bold"}


@command("migrate", usage="[OPTIONS] [PATH...]")
def migrate(
    # One parameter per option, in the order of the help; each one is handed to
    # migration.Request below. A new option goes in both places.
    paths: Annotated[
        Optional[list[Path]],
        typer.Argument(
            metavar="PATH",
            show_default=False,
            readable=False,
            help="files and folders to migrate (default: .); - reads stdin (with --stdin-filename)",
        ),
    ] = None,
    write: Annotated[bool, _option("--write", help="apply the changes in place (with -: print the new text)")] = False,
    check: Annotated[
        bool, _option("--check", help="write nothing; exit 1 while changes are pending or spots to decide are open")
    ] = False,
    exit_zero: Annotated[
        bool,
        _option("--exit-zero", help="with --check: report, but exit 0 (2 still when a file could not be processed)"),
    ] = False,
    select: Annotated[
        Optional[list[str]],
        _option("--select", metavar="RULES", help="only these families, rule ids or id prefixes (comma-separated)"),
    ] = None,
    ignore: Annotated[
        Optional[list[str]],
        _option("--ignore", metavar="RULES", help="skip these families, rule ids or id prefixes (comma-separated)"),
    ] = None,
    target: Annotated[
        Optional[Literal["native", "shim"]],
        _option(
            "--target",
            metavar="TARGET",
            help="native (torch_xla 2.x APIs; the default) or shim (xrt2pjrt.shim, call sites kept)",
        ),
    ] = None,
    target_version: Annotated[
        Optional[str],
        _option("--target-version", metavar="X.Y", help="the torch_xla to write for: 2.1 ... 2.9 (default 2.9)"),
    ] = None,
    unsafe_fixes: Annotated[
        bool,
        _option(
            "--unsafe-fixes",
            help="also make the fixes that need a reviewer's eye (without it they are listed as pending)",
        ),
    ] = False,
    output_format: Annotated[
        Literal["text", "json", "github", "sarif"],
        _option(
            "--output-format",
            metavar="FORMAT",
            help="text (the diff; findings on stderr), json, github or sarif, on stdout",
        ),
    ] = "text",
    report_file: Annotated[
        Optional[Path], _option("--report", metavar="FILE", help="also write a report: FILE.json or FILE.md")
    ] = None,
    config: Annotated[
        Optional[Path],
        _option(
            "--config", metavar="FILE", help="this configuration, not the nearest pyproject.toml's [tool.xrt2pjrt]"
        ),
    ] = None,
    exclude: Annotated[
        Optional[list[str]],
        _option(
            "--exclude", metavar="PATTERN", help="leave these out (gitignore patterns), instead of the default ones"
        ),
    ] = None,
    extend_exclude: Annotated[
        Optional[list[str]],
        _option("--extend-exclude", metavar="PATTERN", help="leave these out as well (gitignore patterns)"),
    ] = None,
    force_exclude: Annotated[
        bool, _option("--force-exclude", help="exclude files named on the command line too")
    ] = False,
    stdin_filename: Annotated[
        Optional[Path], _option("--stdin-filename", metavar="PATH", help="with -: the path of the text on stdin")
    ] = None,
    zone: Annotated[
        Optional[str], _option("--zone", metavar="ZONE", help="--zone of the gcloud commands written")
    ] = None,
    project: Annotated[
        Optional[str], _option("--project", metavar="PROJECT", help="--project of the gcloud commands written")
    ] = None,
    launcher: Annotated[
        Literal["gcloud", "xrt2pjrt"],
        _option("--launcher", metavar="LAUNCHER", help="what replaces xla_dist: gcloud (the default) or xrt2pjrt"),
    ] = "gcloud",
    jobs: Annotated[
        Optional[int],
        _option(
            "-j",
            "--jobs",
            metavar="N",
            parser=_at_least(1),
            help="worker processes (default: as many as the work found pays for)",
        ),
    ] = None,
    max_file_size: Annotated[
        Optional[int],
        _option(
            "--max-file-size",
            metavar="SIZE",
            parser=_size,
            help="skip, and report, a file with more to parse than this: its text, a notebook's cells, a document's "
            "code blocks (default 2M)",
        ),
    ] = None,
    no_cache: Annotated[
        bool,
        _option("--no-cache", help="neither read nor write the results cache (a rerun of unchanged files parses none)"),
    ] = False,
    cache_dir: Annotated[
        Optional[Path],
        _option(
            "--cache-dir",
            metavar="DIR",
            help=f"the results cache's folder (default: ${CACHE_DIR.name}, else ~/.cache/xrt2pjrt)",
        ),
    ] = None,
    color: Annotated[
        Literal["auto", "always", "never"],
        _option("--color", metavar="WHEN", help="auto (the default), always or never"),
    ] = "auto",
    statistics: Annotated[
        bool,
        _option(
            "--statistics", help="counts of changes and items by family and rule, instead of the diff and the items"
        ),
    ] = False,
    quiet: Annotated[
        bool, _option("-q", "--quiet", help="only the items to decide and errors (and with --check, the files)")
    ] = False,
    verbose: Annotated[bool, _option("-v", "--verbose", help="also every change, the configuration, the time")] = False,
    inventory: Annotated[
        bool,
        _option(
            "--inventory",
            help="also list every torch_xla name, setting, launcher and install line seen, with its "
            "status (on stdout; in the JSON and the --report)",
        ),
    ] = False,
) -> int:
    """A preview by default: the diff, and what a person must decide. Exit 0 when done, 1
    when --check finds changes pending or spots to decide open (neither fixed nor settled with
    their marker), 2 when a file could not be processed (it is named and left as it was) or an
    option is wrong. The options win over the configuration
    ([tool.xrt2pjrt] in pyproject.toml)."""
    out = Out(color, quiet, verbose)
    paths = paths or [Path(".")]  # as `ruff check` takes the folder it is run in
    if report_file and report_file.suffix not in (".json", ".md"):
        raise Failure(f"--report takes a .json or .md file; got {report_file}")
    from xrt2pjrt import migration, report

    reads_stdin = paths == [migration.STDIN]
    request = migration.Request(
        paths=paths,
        write=write,
        check=check,
        select=select,
        ignore=ignore,
        target=target,
        target_version=target_version,
        zone=zone,
        project=project,
        launcher=launcher,
        jobs=jobs,
        config=config,
        exclude=exclude,
        extend_exclude=extend_exclude,
        force_exclude=force_exclude,
        stdin_filename=stdin_filename,
        stdin=sys.stdin.buffer.read() if reads_stdin else None,
        report=report_file,
        max_file_size=max_file_size,
        unsafe_fixes=unsafe_fixes,
        exit_zero=exit_zero,
        no_cache=no_cache,
        cache_dir=cache_dir,
    )
    progress = Progress(out)
    try:
        done = migration.migrate(request, note=out.note, progress=progress)
    except migration.UsageError as exc:
        raise Failure(str(exc)) from None
    finally:
        progress.close()
    run = done.run
    if inventory and done.stopped_by is None:
        from xrt2pjrt import inventory as taken
        from xrt2pjrt.registry import parse_version

        run.inventory = taken.take(run, parse_version(target_version or done.settings.target_version))
    if done.stopped_by is not None:
        from xrt2pjrt.files import quoted

        written = ", ".join(quoted(p) for p in done.written)
        out.err(
            f"xrt2pjrt: interrupted: {report.plural(len(done.written), 'file')} written"
            f"{': ' + written if written else ''}; the others are as they were",
            "red",
        )
        return done.exit_code

    if verbose:
        out.err(f"xrt2pjrt: configuration: {done.settings.path or 'none found, the defaults'}")
        for line in done.listed:
            out.err(f"xrt2pjrt: {line}")
    if not run.results and not quiet:
        out.err(
            f"xrt2pjrt: no files found in {', '.join(map(str, paths))}: nothing there is a kind "
            "xrt2pjrt rewrites (Python, shell, Dockerfile, YAML, Markdown, notebook, requirements, metadata)",
            "yellow",
        )
    if statistics:
        from xrt2pjrt.registry import CHECKLIST

        out.out("\n".join(report.statistics(run, CHECKLIST)))
    elif output_format != "text":
        out.out(report.FORMATS[output_format](run), end="")
    elif reads_stdin and write:
        out.raw(done.new_stdin)
    elif not write and not check:
        for r in run.results:
            if r.changed:
                print_diff(out, r.original, r.updated, r.path)
    if inventory and output_format == "text":
        from xrt2pjrt import inventory as taken

        for line in taken.lines(run.inventory):
            out.out(line)
    out.flush()
    if verbose:
        for line in report.change_lines(run):
            out.err(line)
        for r in run.results:
            if r.skipped:
                out.err(f"{r.path}: skipped (# xrt2pjrt: skip-file)")
    # -q keeps what a person must act on (with --check, the files pending too); stdin (an
    # editor) gets no file or summary line; with a document on stdout, stderr says no more
    # than the summary.
    terse = quiet or (reads_stdin and not verbose)
    for style, line in report.to_text(run, apply=_as_write(_argv)):
        if style in ("summary", "next") and (terse or not run.results):
            continue
        if style == "next" and output_format != "text":
            continue  # (the document on stdout is the output)
        if style == "file" and terse and not (check and quiet):
            continue
        if (output_format != "text" or statistics) and style not in ("summary", "next") and not verbose:
            continue
        out.err(line, _TEXT_STYLE.get(style))
    if verbose:
        out.err(f"xrt2pjrt: {report.plural(len(run.results), 'file')} in {done.seconds:.2f} s")
    if report_file:
        render = report.to_json if report_file.suffix == ".json" else report.to_markdown
        from xrt2pjrt.files import write_atomic

        try:
            write_atomic(Path(os.path.realpath(report_file)), render(run).encode("utf-8"))  # through a link
        except OSError as exc:  # a full disk, say: checked as far as it can be before the run
            done_already = (
                f"; the {report.plural(len(done.written), 'file')} written stay written" if done.written else ""
            )
            raise Failure(f"--report {report_file}: cannot write: {exc.strerror or exc}{done_already}") from None
    return done.exit_code


def _as_write(argv: list[str]) -> str:
    """The command that applies what a preview or --check found: the same one, with --write."""
    import shlex

    command, *kept = [word for word in argv if word not in ("--check", "--exit-zero", "--statistics")] or ["migrate"]
    return shlex.join(["xrt2pjrt", command, "--write", *kept])


_JSON = _option("--json", help="machine-readable output")


@command("rules", usage="[OPTIONS] [RULE...]")
def rules(
    words: Annotated[
        Optional[list[str]],
        typer.Argument(metavar="RULE", show_default=False, help="families, rule ids or id prefixes"),
    ] = None,
    as_json: Annotated[bool, _JSON] = False,
) -> int:
    """With no RULE, every rule and its first example; with RULE, the rules it names and
    all their examples."""
    import json

    from xrt2pjrt.registry import UnknownRule, all_rules, expand, family, split_words

    every = all_rules()
    out = Out()
    try:
        ids = sorted(set().union(*(expand(word, out.note, frozenset(every)) for word in split_words(words or []))))
    except UnknownRule as exc:
        raise Failure(str(exc)) from None
    chosen = [every[rid] for rid in ids] if words else list(every.values())
    if as_json:
        rows = [
            {
                "id": rule.id,
                "family": family(rule.id),
                "kind": rule.kind,
                "fix": rule.fix,
                "safe": rule.fix != "unsafe",  # as the reports' records say it
                "summary": rule.summary,
                "why": rule.why,
                "example": {"before": rule.examples[0].before, "after": rule.examples[0].after},
                "examples": [
                    {"before": e.before, "after": e.after, "manual": list(e.manual), "options": e.options}
                    for e in rule.examples
                ],
            }
            for rule in chosen
        ]
        out.out(json.dumps(rows, indent=2, default=str))
        return EXIT_OK
    for rule in chosen:
        out.out(f"{rule.id}  [{rule.kind}, {'report only' if rule.fix == 'none' else rule.fix}]", "bold")
        out.out(f"    {rule.summary}")
        if words and rule.why:
            out.out("")
            for line in rule.why.splitlines():
                out.out(f"    {line}".rstrip())
            out.out("")
        for example in rule.examples if words else rule.examples[:1]:
            if example.options:
                out.out("    with " + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in example.options.items()))
            for prefix, text in (("-", example.before), ("+", example.after)):
                for line in text.rstrip("\n").splitlines():
                    out.out(f"    {prefix} {line}")
            out.out("")
    return EXIT_OK


@command("guide")
def guide(
    path: Annotated[bool, _option("--path", help="print where it is, not the guide")] = False,
    rules_page: Annotated[bool, _option("--rules", help="the rules page (RULES.md), not the guide")] = False,
) -> int:
    from xrt2pjrt import guide

    try:
        page = guide.installed(guide.CATALOGUE if rules_page else guide.GUIDE)
    except FileNotFoundError as exc:
        raise Failure(str(exc)) from None
    Out().out(str(page) if path else page.read_text(encoding="utf-8"), end="\n" if path else "")
    return EXIT_OK


@command("launch", usage="--tpu NAME [OPTIONS] -- COMMAND...")
def launch(
    tpu: Annotated[str, _option("--tpu", metavar="NAME", help="the TPU VM or pod")],
    words: Annotated[
        Optional[list[str]],
        typer.Argument(metavar="COMMAND", show_default=False, help="what every worker runs (after --), word for word"),
    ] = None,
    shell: Annotated[
        Optional[str], _option("--shell", metavar="CMD", help="instead of words: one string the worker's bash expands")
    ] = None,
    zone: Annotated[Optional[str], _option("--zone", metavar="ZONE", help="its zone (default: gcloud's)")] = None,
    project: Annotated[
        Optional[str], _option("--project", metavar="PROJECT", help="its project (default: gcloud's)")
    ] = None,
    env: Annotated[Optional[list[str]], _option("--env", metavar="K=V", help="set for the command; repeatable")] = None,
    conda_env: Annotated[
        Optional[str], _option("--conda-env", metavar="ENV", help="conda environment to activate first")
    ] = None,
    docker_image: Annotated[
        Optional[str], _option("--docker-image", metavar="IMAGE", help="run the command in this image")
    ] = None,
    docker_run_flags: Annotated[
        Optional[list[str]], _option("--docker-run-flag", metavar="FLAG", help="extra `docker run` flag; repeatable")
    ] = None,
    docker_container: Annotated[
        Optional[str], _option("--docker-container", metavar="NAME", help="name of the container")
    ] = None,
    restart_tpuvm_pod_server: Annotated[bool, _option("--restart-tpuvm-pod-server", help="XRT only: ignored")] = False,
    tpuvm_server_port: Annotated[
        Optional[int], _option("--tpuvm-server-port", metavar="PORT", help="XRT only: ignored")
    ] = None,
    num_workers: Annotated[
        Optional[int],
        _option("--num-workers", metavar="N", parser=_at_least(1), help="workers of the pod (default: ask gcloud)"),
    ] = None,
    max_restarts: Annotated[
        Optional[int],
        _option(
            "--max-restarts",
            metavar="N",
            parser=_at_least(0),
            help="runs again after TPU maintenance or a lost worker (default: 50, as xla_dist)",
        ),
    ] = None,
    health_poll: Annotated[
        Optional[float],
        _option(
            "--health-poll",
            metavar="SECONDS",
            parser=_seconds,
            help="how often to ask gcloud for the TPU's health (default: 10)",
        ),
    ] = None,
    health_timeout: Annotated[
        Optional[float],
        _option(
            "--health-timeout",
            metavar="SECONDS",
            parser=_seconds,
            help="how long to wait for the TPU to be READY and HEALTHY (default: 1200)",
        ),
    ] = None,
    dry_run: Annotated[bool, _option("--dry-run", help="print the gcloud commands; run nothing")] = False,
) -> int:
    """A drop-in for xla_dist: it takes xla_dist's flags, and like xla_dist it waits for a
    healthy TPU and runs the command again on every worker after maintenance or a lost
    worker (not after the program's own failure)."""
    from xrt2pjrt.runtime import launch

    request = launch.Request(
        tpu=tpu,
        command=tuple(words or ()),
        shell=shell,
        zone=zone,
        project=project,
        env=tuple(env or ()),
        conda_env=conda_env,
        docker_image=docker_image,
        docker_container=docker_container,
        docker_run_flags=tuple(docker_run_flags or ()),
        xrt_only=tuple(
            flag
            for flag, given in (
                ("--restart-tpuvm-pod-server", restart_tpuvm_pod_server),
                ("--tpuvm-server-port", tpuvm_server_port is not None),
            )
            if given
        ),
    )
    given = {"max_restarts": max_restarts, "poll": health_poll, "timeout": health_timeout}
    retries = launch.Retries(**{k: v for k, v in given.items() if v is not None})
    try:
        return launch.main(request, num_workers, dry_run, retries=retries)
    except launch.LaunchError as exc:
        raise Failure(str(exc)) from None


@command("doctor")
def doctor(as_json: Annotated[bool, _JSON] = False) -> int:
    """Packages, PJRT_DEVICE, leftover XRT variables, the TPU topology. Exit 0 when healthy,
    1 when something must be fixed. Works without torch_xla."""
    import json

    from xrt2pjrt.runtime import doctor

    diagnosis = doctor.diagnose()
    Out().out(json.dumps(doctor.to_record(diagnosis), indent=2) if as_json else doctor.render(diagnosis))
    return diagnosis.exit_code


@command("verify")
def verify(
    nprocs: Annotated[
        Optional[int],
        _option("--nprocs", metavar="N", parser=_at_least(1), help="CPU only: N replicas in the CPU replica mode"),
    ] = None,
    as_json: Annotated[bool, _JSON] = False,
) -> int:
    """Exit 0 when every check passes, 1 when one fails, 2 when the replicas could not run."""
    from xrt2pjrt.runtime import verify

    out = Out()
    return verify.main(nprocs, as_json, echo=out.out, error=lambda message: out.err(message, "red"))


# What follows SCRIPT is SCRIPT's, options included: click stops reading options at it.
@command("run", usage="--nprocs N [OPTIONS] SCRIPT [ARGS...]", context_settings={"allow_interspersed_args": False})
def run(
    script: Annotated[
        str,
        typer.Argument(
            metavar="SCRIPT", show_default=False, help="the program, run as `python SCRIPT ARGS...` would run it"
        ),
    ],
    nprocs: Annotated[int, _option("--nprocs", metavar="N", parser=_at_least(1), help="CPU replicas on this host")],
    args: Annotated[
        Optional[list[str]], typer.Argument(metavar="ARGS", show_default=False, help="its arguments")
    ] = None,
    per_process: Annotated[
        bool, _option("--per-process", help="run SCRIPT once per replica (it never spawns)")
    ] = False,
    hosts: Annotated[
        Optional[int],
        _option("--hosts", metavar="N", parser=_at_least(1), help="hosts running this command (default 1)"),
    ] = None,
    host_index: Annotated[
        Optional[int], _option("--host-index", metavar="I", parser=_at_least(0), help="this host's index")
    ] = None,
    master: Annotated[Optional[str], _option("--master", metavar="ADDR[:PORT]", help="host 0's address")] = None,
) -> int:
    """With PJRT_DEVICE=CPU. The options come before SCRIPT; what follows it is its own."""
    from xrt2pjrt.runtime import run

    args = args or []
    if args[:1] == ["--"]:  # `run --nprocs 2 train.py -- --lr 1`: the `--` is ours, as torchrun reads it
        args = args[1:]
    try:
        return run.main(script, args, nprocs, per_process, hosts, host_index, master)
    except run.RunError as exc:
        raise Failure(str(exc)) from None
