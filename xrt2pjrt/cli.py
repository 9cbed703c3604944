"""The command line: parses options, calls the library, renders. No logic of its own."""

from __future__ import annotations

import difflib
import json
import sys
from pathlib import Path
from typing import List, Optional

import typer

from xrt2pjrt import codemod, files, report
from xrt2pjrt.registry import TARGETS, Options, UnknownRule, all_rules, parse_version, select

app = typer.Typer(
    help="Move PyTorch/XLA programs off XRT and onto PJRT.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Exit codes shared by every command that checks or rewrites files.
EXIT_OK, EXIT_PENDING, EXIT_ERROR = 0, 1, 2


def _fail(message: str) -> None:
    typer.secho(f"xrt2pjrt: {message}", err=True, fg=typer.colors.RED)
    raise typer.Exit(EXIT_ERROR)


def _print_diff(result: report.FileResult, color: bool) -> None:
    lines = difflib.unified_diff(
        result.original.splitlines(keepends=True),
        result.updated.splitlines(keepends=True),
        fromfile=f"a/{result.path}",
        tofile=f"b/{result.path}",
    )
    for line in lines:
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        style = None
        if color:
            style = {"+": typer.colors.GREEN, "-": typer.colors.RED, "@": typer.colors.CYAN}.get(line[0])
            if line.startswith(("+++", "---")):
                style = None
        typer.secho(line, nl=False, fg=style, bold=line.startswith(("+++", "---")) and color)


def _print_findings(results: list[report.FileResult]) -> None:
    for r in results:
        if r.error:
            typer.secho(f"{r.path}: error: {r.error}", err=True, fg=typer.colors.RED)
        for f in r.manual:
            typer.secho(f"{r.path}:{f.line}: decide [{f.rule}] {f.message}", err=True, fg=typer.colors.YELLOW)


@app.command()
def migrate(
    paths: List[Path] = typer.Argument(..., help="Files and folders to migrate."),
    write: bool = typer.Option(False, "--write", help="Apply the changes in place."),
    check: bool = typer.Option(False, "--check", help="Write nothing; exit 1 when changes are pending."),
    report_file: Optional[Path] = typer.Option(None, "--report", help="Write a report: FILE.json or FILE.md."),
    chosen: Optional[List[str]] = typer.Option(None, "--select", help="Only these rule ids or id prefixes."),
    ignored: Optional[List[str]] = typer.Option(None, "--ignore", help="Skip these rule ids or id prefixes."),
    target: str = typer.Option("native", help="native: torch_xla 2.x APIs; shim: xrt2pjrt.shim, call sites kept."),
    target_version: str = typer.Option("2.9", help="The torch_xla release to write for (2.1 … 2.9)."),
    zone: Optional[str] = typer.Option(None, help="--zone for generated gcloud commands."),
    project: Optional[str] = typer.Option(None, help="--project for generated gcloud commands."),
    launcher: str = typer.Option("gcloud", help="What replaces xla_dist: gcloud (default) or xrt2pjrt."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, help="Worker processes (default: all cores)."),
) -> None:
    """Rewrite XRT-era code, scripts and configs for PJRT. Preview by default."""
    if write and check:
        _fail("--write and --check exclude each other")
    if target not in TARGETS:
        _fail(f"--target must be one of {', '.join(TARGETS)}; got {target!r}")
    if launcher not in ("gcloud", "xrt2pjrt"):
        _fail(f"--launcher must be gcloud or xrt2pjrt; got {launcher!r}")
    if report_file and report_file.suffix not in (".json", ".md"):
        _fail(f"--report takes a .json or .md file; got {report_file}")
    try:
        options = Options(
            rules=select(chosen, ignored),
            target=target,
            target_version=parse_version(target_version),
            zone=zone,
            project=project,
            launcher=launcher,
        )
        targets = files.discover(paths)
    except (UnknownRule, ValueError, FileNotFoundError) as exc:
        _fail(str(exc))

    plans = codemod.plan_all(targets, options, jobs)
    results = [p.result for p in plans]
    if write:
        for p in plans:
            codemod.apply(p)
    elif not check:
        color = sys.stdout.isatty()
        for r in results:
            if r.changed:
                _print_diff(r, color)

    _print_findings(results)
    summary = report.Summary.of(results)
    verb = "changed" if write else "would change"
    typer.echo(
        f"{summary.files_seen} files seen, {summary.files_changed} {verb} "
        f"({summary.changes} changes), {summary.manual} to decide by hand, "
        f"{summary.files_failed} could not be processed.",
        err=True,
    )
    if report_file:
        render = report.to_json if report_file.suffix == ".json" else report.to_markdown
        report_file.write_text(render(results), encoding="utf-8")

    if summary.files_failed:
        raise typer.Exit(EXIT_ERROR)
    if check and summary.files_changed:
        raise typer.Exit(EXIT_PENDING)


@app.command("rules")
def list_rules(as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
    """List every rule: id, file kind, safe or unsafe, summary and an example."""
    rules = all_rules()
    if as_json:
        rows = [
            {
                "id": rule.id,
                "kind": rule.kind,
                "safe": rule.safe,
                "summary": rule.summary,
                "example": {"before": rule.examples[0].before, "after": rule.examples[0].after},
            }
            for rule in rules.values()
        ]
        typer.echo(json.dumps(rows, indent=2))
        return
    for rule in rules.values():
        safety = "safe" if rule.safe else "unsafe"
        typer.secho(f"{rule.id}  [{rule.kind}, {safety}]", bold=True)
        typer.echo(f"    {rule.summary}")
        example = rule.examples[0]
        for prefix, text in (("-", example.before), ("+", example.after)):
            for line in text.rstrip("\n").splitlines():
                typer.echo(f"    {prefix} {line}")
        typer.echo("")


def main() -> None:
    app()
