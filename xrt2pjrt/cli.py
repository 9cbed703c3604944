"""The command line: parses options, calls the library, renders. No logic of its own.

argparse, not typer: typer 0.2x converts every option through pydantic, which made
`xrt2pjrt migrate --help` 7.5x `python -c pass` (bench/startup.py measures it); argparse
is in the standard library and costs next to nothing. Each command imports what it needs
when it runs, so `--help` and `--version` stay light.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
from pathlib import Path

from xrt2pjrt import __version__

# Exit codes shared by every command that checks or rewrites files.
EXIT_OK, EXIT_PENDING, EXIT_ERROR = 0, 1, 2
COLORS = ("auto", "always", "never")
OUTPUT_FORMATS = ("text", "json", "github", "sarif")
# A run over at least this many files shows its progress on a terminal.
PROGRESS_FROM = 100
WIDTH = 80  # help text, at most


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

    lines = diff.unified(original.splitlines(keepends=True), updated.splitlines(keepends=True),
                         fromfile=quoted(_diff_label("a", path)), tofile=quoted(_diff_label("b", path)))
    for line in lines:
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        header = line.startswith(("+++", "---"))
        out.out(line.rstrip("\n"), "bold" if header else _DIFF_STYLE.get(line[0]), end=line[len(line.rstrip("\n")):])


# --- commands ------------------------------------------------------------------------

_TEXT_STYLE = {"error": "red", "decide": "yellow", "file": "bold"}


def migrate(args) -> int:
    out = Out(args.color, args.quiet, args.verbose)
    if args.report and args.report.suffix not in (".json", ".md"):
        raise Failure(f"--report takes a .json or .md file; got {args.report}")
    from xrt2pjrt import migration, report

    reads_stdin = args.paths == [migration.STDIN]
    request = migration.Request(
        paths=args.paths, write=args.write, check=args.check, select=args.select, ignore=args.ignore,
        target=args.target, target_version=args.target_version, zone=args.zone, project=args.project,
        launcher=args.launcher, jobs=args.jobs, config=args.config, exclude=args.exclude,
        extend_exclude=args.extend_exclude, force_exclude=args.force_exclude, stdin_filename=args.stdin_filename,
        stdin=sys.stdin.buffer.read() if reads_stdin else None, report=args.report, max_file_size=args.max_file_size,
        unsafe_fixes=args.unsafe_fixes,
    )
    progress = Progress(out)
    try:
        done = migration.migrate(request, note=out.note, progress=progress)
    except migration.UsageError as exc:
        raise Failure(str(exc)) from None
    finally:
        progress.close()
    run = done.run
    if done.stopped_by is not None:
        from xrt2pjrt.files import quoted

        written = ", ".join(quoted(p) for p in done.written)
        out.err(f"xrt2pjrt: interrupted: {report.plural(len(done.written), 'file')} written"
                f"{': ' + written if written else ''}; the others are as they were", "red")
        return done.exit_code

    if args.verbose:
        out.err(f"xrt2pjrt: configuration: {done.settings.path or 'none found, the defaults'}")
    if not run.results and not args.quiet:
        out.err(f"xrt2pjrt: no files found in {', '.join(map(str, args.paths))}: nothing there is a kind "
                "xrt2pjrt rewrites (Python, shell, Dockerfile, YAML, Markdown, notebook, requirements)", "yellow")
    if args.output_format != "text":
        out.out(report.FORMATS[args.output_format](run), end="")
    elif reads_stdin and args.write:
        out.raw(done.new_stdin)
    elif not args.write and not args.check:
        for r in run.results:
            if r.changed:
                print_diff(out, r.original, r.updated, r.path)
    out.flush()
    if args.verbose:
        for line in report.change_lines(run):
            out.err(line)
        for r in run.results:
            if r.skipped:
                out.err(f"{r.path}: skipped (# xrt2pjrt: skip-file)")
    # -q keeps what a person must act on (with --check, the files pending too); stdin (an
    # editor) gets no file or summary line; with a document on stdout, stderr says no more
    # than the summary.
    terse = args.quiet or (reads_stdin and not args.verbose)
    for style, line in report.to_text(run):
        if style == "summary" and (terse or not run.results):
            continue
        if style == "file" and terse and not (args.check and args.quiet):
            continue
        if args.output_format != "text" and style != "summary" and not args.verbose:
            continue
        out.err(line, _TEXT_STYLE.get(style))
    if args.verbose:
        out.err(f"xrt2pjrt: {report.plural(len(run.results), 'file')} in {done.seconds:.2f} s")
    if args.report:
        render = report.to_json if args.report.suffix == ".json" else report.to_markdown
        from xrt2pjrt.files import write_atomic

        write_atomic(Path(os.path.realpath(args.report)), render(run).encode("utf-8"))  # through a link
    return done.exit_code


def rules(args) -> int:
    import json

    from xrt2pjrt.registry import UnknownRule, all_rules, expand, family, split_words

    every = all_rules()
    out = Out()
    try:
        ids = sorted(set().union(*(expand(word, out.note, frozenset(every)) for word in split_words(args.rules))))
    except UnknownRule as exc:
        raise Failure(str(exc)) from None
    chosen = [every[rid] for rid in ids] if args.rules else list(every.values())
    if args.json:
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
                "examples": [{"before": e.before, "after": e.after, "manual": list(e.manual), "options": e.options}
                             for e in rule.examples],
            }
            for rule in chosen
        ]
        out.out(json.dumps(rows, indent=2, default=str))
        return EXIT_OK
    for rule in chosen:
        out.out(f"{rule.id}  [{rule.kind}, {'report only' if rule.fix == 'none' else rule.fix}]", "bold")
        out.out(f"    {rule.summary}")
        if args.rules and rule.why:
            out.out("")
            for line in rule.why.splitlines():
                out.out(f"    {line}".rstrip())
            out.out("")
        for example in rule.examples if args.rules else rule.examples[:1]:
            if example.options:
                out.out("    with " + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in example.options.items()))
            for prefix, text in (("-", example.before), ("+", example.after)):
                for line in text.rstrip("\n").splitlines():
                    out.out(f"    {prefix} {line}")
            out.out("")
    return EXIT_OK


def guide(args) -> int:
    from xrt2pjrt import guide

    try:
        path = guide.installed(guide.CATALOGUE if args.rules else guide.GUIDE)
    except FileNotFoundError as exc:
        raise Failure(str(exc)) from None
    Out().out(str(path) if args.path else path.read_text(encoding="utf-8"), end="\n" if args.path else "")
    return EXIT_OK


def launch(args) -> int:
    from xrt2pjrt import launch

    request = launch.Request(
        tpu=args.tpu, command=tuple(args.command), shell=args.shell, zone=args.zone, project=args.project,
        env=tuple(args.env), conda_env=args.conda_env, docker_image=args.docker_image,
        docker_container=args.docker_container, docker_run_flags=tuple(args.docker_run_flag),
        xrt_only=tuple(flag for flag, given in (("--restart-tpuvm-pod-server", args.restart_tpuvm_pod_server),
                                                ("--tpuvm-server-port", args.tpuvm_server_port is not None)) if given),
    )
    try:
        return launch.main(request, args.num_workers, args.dry_run)
    except launch.LaunchError as exc:
        raise Failure(str(exc)) from None


def doctor(args) -> int:
    import json

    from xrt2pjrt import doctor

    diagnosis = doctor.diagnose()
    Out().out(json.dumps(doctor.to_record(diagnosis), indent=2) if args.json else doctor.render(diagnosis))
    return diagnosis.exit_code


def verify(args) -> int:
    from xrt2pjrt import verify

    out = Out()
    return verify.main(args.nprocs, args.json, echo=out.out, error=lambda message: out.err(message, "red"))


def run(args) -> int:
    from xrt2pjrt import run

    try:
        return run.main(args.script, args.args, args.nprocs, args.per_process, args.hosts, args.host_index,
                        args.master)
    except run.RunError as exc:
        raise Failure(str(exc)) from None


# --- parsing -------------------------------------------------------------------------


class _Formatter(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog: str):
        width = min(WIDTH, shutil.get_terminal_size((WIDTH, 24)).columns)
        super().__init__(prog, width=width, max_help_position=30)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more; got {value}")
    return value


def _size(text: str) -> int:
    from xrt2pjrt.files import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _wrapped(text: str) -> str:
    import textwrap

    return "\n\n".join(textwrap.fill(" ".join(p.split()), WIDTH) for p in text.split("\n\n") if p.strip())


def _index(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more; got {value}")
    return value


def _command(sub, name: str, handler, summary: str, details: str = "", usage: str = "[OPTIONS]"):
    parser = sub.add_parser(name, help=summary, description=_wrapped(f"{summary}\n\n{details}"),
                            usage=f"xrt2pjrt {name} {usage}", formatter_class=_Formatter, add_help=False)
    parser.add_argument("-h", "--help", action="help", help="show this help and exit")
    parser.set_defaults(handler=handler)
    return parser


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="xrt2pjrt", usage="xrt2pjrt [OPTIONS] COMMAND ...",
                                  description="Move PyTorch/XLA programs off XRT and onto PJRT.",
                                  formatter_class=_Formatter, add_help=False)
    top.add_argument("-h", "--help", action="help", help="show this help and exit")
    top.add_argument("--version", action="version", version=f"xrt2pjrt {__version__}",
                     help="print the version and exit")
    sub = top.add_subparsers(metavar="COMMAND", help=argparse.SUPPRESS)

    p = _command(sub, "migrate", migrate, "Rewrite XRT-era code, scripts and configs for PJRT.",
                 "A preview by default: the diff, and what a person must decide. Exit 0 when done, "
                 "1 when --check finds changes (or unsafe fixes) pending, 2 when a file could not be processed (it is "
                 "named and left as it was) or an option is wrong. The options win over the "
                 "configuration ([tool.xrt2pjrt] in pyproject.toml).",
                 usage="[OPTIONS] PATH...")
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH",
                   help="files and folders to migrate; - reads stdin (with --stdin-filename)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="apply the changes in place (with -: print the new text)")
    mode.add_argument("--check", action="store_true", help="write nothing; exit 1 when changes are pending")
    p.add_argument("--select", action="append", metavar="RULES",
                   help="only these families, rule ids or id prefixes (comma-separated)")
    p.add_argument("--ignore", action="append", metavar="RULES",
                   help="skip these families, rule ids or id prefixes (comma-separated)")
    p.add_argument("--target", choices=("native", "shim"), metavar="TARGET",
                   help="native (torch_xla 2.x APIs; the default) or shim (xrt2pjrt.shim, call sites kept)")
    p.add_argument("--target-version", metavar="X.Y", help="the torch_xla to write for: 2.1 ... 2.9 (default 2.9)")
    p.add_argument("--unsafe-fixes", action="store_true",
                   help="also make the fixes that need a reviewer's eye (without it they are listed as pending)")
    p.add_argument("--output-format", choices=OUTPUT_FORMATS, default="text", metavar="FORMAT",
                   help="text (the diff; findings on stderr), json, github or sarif, on stdout")
    p.add_argument("--report", type=Path, metavar="FILE", help="also write a report: FILE.json or FILE.md")
    p.add_argument("--config", type=Path, metavar="FILE",
                   help="this configuration, not the nearest pyproject.toml's [tool.xrt2pjrt]")
    p.add_argument("--exclude", action="append", metavar="PATTERN",
                   help="leave these out (gitignore patterns), instead of the default ones")
    p.add_argument("--extend-exclude", action="append", metavar="PATTERN",
                   help="leave these out as well (gitignore patterns)")
    p.add_argument("--force-exclude", action="store_true", help="exclude files named on the command line too")
    p.add_argument("--stdin-filename", type=Path, metavar="PATH", help="with -: the path of the text on stdin")
    p.add_argument("--zone", metavar="ZONE", help="--zone of the gcloud commands written")
    p.add_argument("--project", metavar="PROJECT", help="--project of the gcloud commands written")
    p.add_argument("--launcher", choices=("gcloud", "xrt2pjrt"), default="gcloud", metavar="LAUNCHER",
                   help="what replaces xla_dist: gcloud (the default) or xrt2pjrt")
    p.add_argument("-j", "--jobs", type=_positive, metavar="N",
                   help="worker processes (default: as many as the work found pays for)")
    p.add_argument("--max-file-size", type=_size, metavar="SIZE",
                   help="skip, and report, a file with more to parse than this: its text, a notebook's "
                        "cells, a document's code blocks (default 2M)")
    p.add_argument("--color", choices=COLORS, default="auto", metavar="WHEN", help="auto (the default), always or never")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="only the items to decide and errors (and with --check, the files)")
    p.add_argument("-v", "--verbose", action="store_true", help="also every change, the configuration, the time")

    p = _command(sub, "rules", rules, "List the rules: id, file kind, safe or unsafe, summary and examples.",
                 "With no RULE, every rule and its first example; with RULE, the rules it names "
                 "and all their examples.", usage="[OPTIONS] [RULE...]")
    p.add_argument("rules", nargs="*", metavar="RULE", help="families, rule ids or id prefixes")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    p = _command(sub, "guide", guide, "Print the migration guide (docs/MIGRATION.md), as installed.")
    p.add_argument("--path", action="store_true", help="print where it is, not the guide")
    p.add_argument("--rules", action="store_true", help="the rules page (RULES.md), not the guide")

    p = _command(sub, "launch", launch, "Run a command on every worker of a TPU pod with PJRT_DEVICE=TPU.",
                 "A drop-in for xla_dist: it takes xla_dist's flags.",
                 usage="--tpu NAME [OPTIONS] -- COMMAND...")
    p.add_argument("command", nargs="*", metavar="COMMAND", help="what every worker runs (after --), word for word")
    p.add_argument("--tpu", required=True, metavar="NAME", help="the TPU VM or pod")
    p.add_argument("--shell", metavar="CMD", help="instead of words: one string the worker's bash expands")
    p.add_argument("--zone", metavar="ZONE", help="its zone (default: gcloud's)")
    p.add_argument("--project", metavar="PROJECT", help="its project (default: gcloud's)")
    p.add_argument("--env", action="append", default=[], metavar="K=V", help="set for the command; repeatable")
    p.add_argument("--conda-env", metavar="ENV", help="conda environment to activate first")
    p.add_argument("--docker-image", metavar="IMAGE", help="run the command in this image")
    p.add_argument("--docker-run-flag", action="append", default=[], metavar="FLAG",
                   help="extra `docker run` flag; repeatable")
    p.add_argument("--docker-container", metavar="NAME", help="name of the container")
    p.add_argument("--restart-tpuvm-pod-server", action="store_true", help="XRT only: ignored")
    p.add_argument("--tpuvm-server-port", type=int, metavar="PORT", help="XRT only: ignored")
    p.add_argument("--num-workers", type=_positive, metavar="N", help="workers of the pod (default: ask gcloud)")
    p.add_argument("--dry-run", action="store_true", help="print the gcloud commands; run nothing")

    p = _command(sub, "doctor", doctor, "Read this environment and say what to fix.",
                 "Packages, PJRT_DEVICE, leftover XRT variables, the TPU topology. Exit 0 when "
                 "healthy, 1 when something must be fixed. Works without torch_xla.")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    p = _command(sub, "verify", verify, "Check ordinals, collectives and rendezvous on every replica here.",
                 "Exit 0 when every check passes, 1 when one fails, 2 when the replicas could not run.")
    p.add_argument("--nprocs", type=_positive, metavar="N", help="CPU only: N replicas in the CPU replica mode")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    p = _command(sub, "run", run, "Run a torch_xla program on N CPU replicas that form one world.",
                 "With PJRT_DEVICE=CPU. The options come before SCRIPT; what follows it is its own.",
                 usage="--nprocs N [OPTIONS] SCRIPT [ARGS...]")
    p.add_argument("script", metavar="SCRIPT", help="the program, run as `python SCRIPT ARGS...` would run it")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="its arguments")
    p.add_argument("--nprocs", type=_positive, required=True, metavar="N", help="CPU replicas on this host")
    p.add_argument("--per-process", action="store_true", help="run SCRIPT once per replica (it never spawns)")
    p.add_argument("--hosts", type=_positive, metavar="N", help="hosts running this command (default 1)")
    p.add_argument("--host-index", type=_index, metavar="I", help="this host's index")
    p.add_argument("--master", metavar="ADDR[:PORT]", help="host 0's address")

    # The commands, one line each (argparse's own listing of subcommands is unreadable).
    top.epilog = "commands:\n" + "\n".join(
        f"  {name:<9} {parser.description.split(chr(10))[0]}" for name, parser in sub.choices.items())
    top.epilog += "\n\n`xrt2pjrt COMMAND --help` tells more; the guide: `xrt2pjrt guide`."
    return top


def main(argv: list[str] | None = None) -> int:
    top = parser()
    args = top.parse_args(argv)
    if not hasattr(args, "handler"):
        top.print_help()
        return EXIT_ERROR
    try:
        return args.handler(args)
    except Failure as exc:
        Out().err(f"xrt2pjrt: {exc}", "red")
        return EXIT_ERROR
    finally:
        Out().flush()  # what is still buffered, while a reader gone away can be handled
