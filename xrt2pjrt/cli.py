"""The command line: parses options, calls the library, renders. No logic of its own."""

from __future__ import annotations

import difflib
import json
import sys
from pathlib import Path
from typing import List, Optional

import typer

from xrt2pjrt import codemod, files, report
from xrt2pjrt.registry import (TARGETS, Options, UnknownRule, all_rules, expand, family, parse_version, select,
                               split_words)

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


def _note(message: str) -> None:
    typer.secho(f"xrt2pjrt: note: {message}", err=True, fg=typer.colors.YELLOW)


def _diff_label(side: str, path: str) -> str:
    # git's a/ b/ prefixes, so `git apply -p1` takes the preview of a relative path;
    # an absolute path is shown as it is.
    return path if Path(path).is_absolute() else f"{side}/{path}"


def _print_diff(result: report.FileResult, color: bool) -> None:
    lines = difflib.unified_diff(
        result.original.splitlines(keepends=True),
        result.updated.splitlines(keepends=True),
        fromfile=_diff_label("a", result.path),
        tofile=_diff_label("b", result.path),
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
    # One line per item, as editors and CI annotations read FILE:LINE: (a message may
    # quote a tool's error output over several lines).
    for r in results:
        if r.error:
            typer.secho(f"{r.path}: error: {_one_line(r.error)}", err=True, fg=typer.colors.RED)
        for f in r.manual:
            typer.secho(f"{r.path}:{f.line}: decide [{f.rule}] {_one_line(f.message)}", err=True,
                        fg=typer.colors.YELLOW)


def _one_line(message: str) -> str:
    return " / ".join(line.strip() for line in message.splitlines() if line.strip())


@app.command()
def migrate(
    paths: List[Path] = typer.Argument(..., help="Files and folders to migrate."),
    write: bool = typer.Option(False, "--write", help="Apply the changes in place."),
    check: bool = typer.Option(False, "--check", help="Write nothing; exit 1 when changes are pending."),
    report_file: Optional[Path] = typer.Option(None, "--report", help="Write a report: FILE.json or FILE.md."),
    chosen: Optional[List[str]] = typer.Option(None, "--select", help="Only these families, rule ids or id prefixes (comma-separated, repeatable)."),
    ignored: Optional[List[str]] = typer.Option(None, "--ignore", help="Skip these families, rule ids or id prefixes (comma-separated, repeatable)."),
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
            rules=select(chosen, ignored, note=_note),
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
def list_rules(
    words: Optional[List[str]] = typer.Argument(None, metavar="[RULE]...", help="Families, rule ids or id prefixes (default: all)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """List the rules: id, file kind, safe or unsafe, summary and examples.

    With no RULE, every rule and its first example; with RULE, the rules it names and all
    their examples.
    """
    rules = all_rules()
    try:
        ids = sorted(set().union(*(expand(word, _note) for word in split_words(words)))) if words else list(rules)
    except UnknownRule as exc:
        _fail(str(exc))
    chosen = [rules[rid] for rid in ids]
    if as_json:
        rows = [
            {
                "id": rule.id,
                "family": family(rule.id),
                "kind": rule.kind,
                "safe": rule.safe,
                "summary": rule.summary,
                "example": {"before": rule.examples[0].before, "after": rule.examples[0].after},
                "examples": [{"before": e.before, "after": e.after, "manual": list(e.manual), "options": e.options}
                             for e in rule.examples],
            }
            for rule in chosen
        ]
        typer.echo(json.dumps(rows, indent=2, default=str))
        return
    for rule in chosen:
        safety = "safe" if rule.safe else "unsafe"
        typer.secho(f"{rule.id}  [{rule.kind}, {safety}]", bold=True)
        typer.echo(f"    {rule.summary}")
        for example in rule.examples if words else rule.examples[:1]:
            if example.options:
                typer.echo("    with " + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in example.options.items()))
            for prefix, text in (("-", example.before), ("+", example.after)):
                for line in text.rstrip("\n").splitlines():
                    typer.echo(f"    {prefix} {line}")
            typer.echo("")


@app.command("launch")
def launch_command(
    command: Optional[List[str]] = typer.Argument(None, help="The command every worker runs (after `--`), word for word."),
    tpu: str = typer.Option(..., "--tpu", help="Name of the TPU VM or pod."),
    shell: Optional[str] = typer.Option(None, "--shell", help="Instead of words: one string the worker's bash expands."),
    zone: Optional[str] = typer.Option(None, help="Its zone (default: gcloud's)."),
    project: Optional[str] = typer.Option(None, help="Its project (default: gcloud's)."),
    env: Optional[List[str]] = typer.Option(None, "--env", help="K=V set for the command; repeatable."),
    conda_env: Optional[str] = typer.Option(None, "--conda-env", help="Conda environment to activate first."),
    docker_image: Optional[str] = typer.Option(None, "--docker-image", help="Run the command in this image."),
    docker_run_flag: Optional[List[str]] = typer.Option(None, "--docker-run-flag", help="Extra `docker run` flag; repeatable."),
    docker_container: Optional[str] = typer.Option(None, "--docker-container", help="Name of the container."),
    restart_tpuvm_pod_server: bool = typer.Option(False, "--restart-tpuvm-pod-server", help="XRT only: ignored."),
    tpuvm_server_port: Optional[int] = typer.Option(None, "--tpuvm-server-port", help="XRT only: ignored."),
    num_workers: Optional[int] = typer.Option(None, "--num-workers", min=1, help="Workers of the pod (default: ask gcloud describe)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the gcloud commands; run nothing."),
) -> None:
    """Run a command on every worker of a TPU pod with PJRT_DEVICE=TPU: a drop-in for xla_dist."""
    from xrt2pjrt import launch

    request = launch.Request(
        tpu=tpu, command=tuple(command or ()), shell=shell, zone=zone, project=project, env=tuple(env or ()),
        conda_env=conda_env, docker_image=docker_image, docker_container=docker_container,
        docker_run_flags=tuple(docker_run_flag or ()),
        xrt_only=tuple(flag for flag, given in (("--restart-tpuvm-pod-server", restart_tpuvm_pod_server),
                                                ("--tpuvm-server-port", tpuvm_server_port is not None)) if given),
    )
    try:
        raise typer.Exit(launch.main(request, num_workers, dry_run))
    except launch.LaunchError as exc:
        _fail(str(exc))


@app.command("doctor")
def doctor_command(as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
    """Read this environment (packages, PJRT_DEVICE, XRT leftovers, TPU topology); say what to fix.

    Exit 0 when healthy, 1 when something must be fixed. Works without torch_xla.
    """
    from xrt2pjrt import doctor

    diagnosis = doctor.diagnose()
    typer.echo(json.dumps(doctor.to_record(diagnosis), indent=2) if as_json else doctor.render(diagnosis))
    raise typer.Exit(diagnosis.exit_code)


@app.command("verify")
def verify_command(
    nprocs: Optional[int] = typer.Option(None, "--nprocs", min=1, help="CPU only: run N replicas in the CPU replica mode."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Run the ordinal, collective and rendezvous checks on every replica of this machine.

    Exit 0 when every check passes, 1 when one fails, 2 when the replicas could not run.
    """
    from xrt2pjrt import verify

    raise typer.Exit(verify.main(nprocs, as_json, echo=typer.echo,
                                 error=lambda message: typer.secho(message, err=True, fg=typer.colors.RED)))


@app.command("run", context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True})
def run_command(
    script: str = typer.Argument(..., help="The program, run as `python SCRIPT ARGS...` would run it."),
    args: Optional[List[str]] = typer.Argument(None, help="Its arguments."),
    nprocs: int = typer.Option(..., "--nprocs", min=1, help="CPU replicas on this host."),
    per_process: bool = typer.Option(False, "--per-process", help="Run SCRIPT once per replica (it never spawns)."),
    hosts: Optional[int] = typer.Option(None, "--hosts", min=1, help="Hosts running this command (default 1)."),
    host_index: Optional[int] = typer.Option(None, "--host-index", min=0, help="This host's index."),
    master: Optional[str] = typer.Option(None, "--master", help="Host 0's ADDR[:PORT]."),
) -> None:
    """Run a torch_xla program on N CPU replicas that form one world (PJRT_DEVICE=CPU)."""
    from xrt2pjrt import run

    try:
        raise typer.Exit(run.main(script, args or [], nprocs, per_process, hosts, host_index, master))
    except run.RunError as exc:
        _fail(str(exc))


def main() -> None:
    app()
