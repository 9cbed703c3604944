"""Each command hands its options to the library as the user gave them: every option of
`migrate` reaches migration.Request, `launch`'s command words and `run`'s script
arguments arrive word for word, options included. The library entry points are replaced
by recorders (in this process, through cli_runner), so nothing runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_runner import invoke
from xrt2pjrt import migration
from xrt2pjrt.runtime import launch, run


class Handed(Exception):
    """Raised by a recorder: what the command handed to the library, and no further."""


@pytest.fixture
def handed(monkeypatch):
    def recorder(*args, **kwargs):
        raise Handed(args, kwargs)

    for module, name in ((migration, "migrate"), (launch, "main"), (run, "main")):
        monkeypatch.setattr(module, name, recorder)

    def call(*argv: str) -> tuple:
        with pytest.raises(Handed) as caught:
            invoke(argv)
        return caught.value.args[0]

    return call


def test_every_migrate_option_reaches_the_request(handed, tmp_path):
    (request,) = handed(
        "migrate",
        "--write",
        "--select",
        "spawn",
        "--select",
        "api,env",
        "--ignore",
        "manual",
        "--target",
        "shim",
        "--target-version",
        "2.5",
        "--output-format",
        "json",
        "--report",
        "r.json",
        "--config",
        "c.toml",
        "--exclude",
        "a",
        "--exclude",
        "b",
        "--extend-exclude",
        "c",
        "--force-exclude",
        "--stdin-filename",
        "x.py",
        "--zone",
        "z",
        "--project",
        "p",
        "--launcher",
        "xrt2pjrt",
        "-j",
        "3",
        "--max-file-size",
        "3M",
        "--no-cache",
        "--cache-dir",
        "cached",
        "--color",
        "never",
        "-q",
        "-v",
        "a",
        "b",
    )
    assert request == migration.Request(
        paths=[Path("a"), Path("b")],
        write=True,
        select=["spawn", "api,env"],
        ignore=["manual"],
        target="shim",
        target_version="2.5",
        zone="z",
        project="p",
        launcher="xrt2pjrt",
        jobs=3,
        config=Path("c.toml"),
        exclude=["a", "b"],
        extend_exclude=["c"],
        force_exclude=True,
        stdin_filename=Path("x.py"),
        report=Path("r.json"),
        max_file_size=3_000_000,
        no_cache=True,
        cache_dir=Path("cached"),
    )


def test_migrate_options_not_given_are_left_to_the_configuration(handed):
    (request,) = handed("migrate", ".")
    assert request == migration.Request(paths=[Path(".")])  # every None: the configuration decides


@pytest.mark.parametrize(
    "argv, command",
    [
        (["--", "python3", "t.py", "--lr", "1"], ("python3", "t.py", "--lr", "1")),
        (["python3", "t.py"], ("python3", "t.py")),
        (["--", "a", "--", "b"], ("a", "--", "b")),
    ],
)
def test_launch_hands_the_command_word_for_word(handed, argv, command):
    request, num_workers, dry_run = handed("launch", "--tpu", "pod", *argv)
    assert request.command == command and (num_workers, dry_run) == (None, False)


def test_launch_takes_xla_dists_flags(handed):
    request, num_workers, dry_run = handed(
        "launch",
        "--tpu=pod",
        "--env",
        "A=1",
        "--env",
        "B=2",
        "--docker-run-flag=--privileged",
        "--restart-tpuvm-pod-server",
        "--tpuvm-server-port",
        "8470",
        "--num-workers",
        "4",
        "--dry-run",
        "--docker-image",
        "img:1",
        "--",
        "python3",
        "t.py",
    )
    assert (request.tpu, request.env, request.docker_run_flags) == ("pod", ("A=1", "B=2"), ("--privileged",))
    assert request.xrt_only == ("--restart-tpuvm-pod-server", "--tpuvm-server-port")
    assert (num_workers, dry_run) == (4, True)


def test_launch_hands_its_restart_bound_and_health_timing(handed):
    for argv, retries in (
        ([], launch.Retries(max_restarts=50, poll=10.0, timeout=1200.0)),  # xla_dist's
        (
            ["--max-restarts", "0", "--health-poll", "0.5", "--health-timeout", "60"],
            launch.Retries(max_restarts=0, poll=0.5, timeout=60.0),
        ),
    ):
        with pytest.raises(Handed) as caught:
            invoke(["launch", "--tpu", "pod", *argv, "--", "python3", "t.py"])
        assert caught.value.args[1]["retries"] == retries


@pytest.mark.parametrize(
    "argv, args",
    [
        (["s.py", "--lr", "0.1", "-x", "--nprocs", "9"], ["--lr", "0.1", "-x", "--nprocs", "9"]),  # all SCRIPT's
        (["s.py", "--", "--lr", "1"], ["--lr", "1"]),  # a `--` right after SCRIPT ends our options, as torchrun's
        (["s.py", "a", "--", "b"], ["a", "--", "b"]),
        (["--", "s.py", "x"], ["x"]),
    ],
)
def test_run_hands_what_follows_the_script_to_the_script(handed, argv, args):
    script, script_args, nprocs, *_ = handed("run", "--nprocs", "2", *argv)
    assert (script, script_args, nprocs) == ("s.py", args, 2)


@pytest.mark.parametrize(
    "argv, named",
    [
        (["migrate", "--target", "jax", "."], "'--target'"),
        (["migrate", "-j", "0", "."], "'-j' / '--jobs': must be 1 or more; got 0"),
        (["migrate", "--max-file-size", "lots", "."], "'--max-file-size'"),
        (["migrate", "--no-such-option", "."], "--no-such-option"),
        (["migrate", "--write", "--check", "."], "--write and --check exclude each other"),
        (["launch", "--", "x"], "'--tpu'"),
        (["launch", "--tpu", "p", "--max-restarts", "-1", "x"], "'--max-restarts': must be 0 or more; got -1"),
        (["launch", "--tpu", "p", "--health-poll", "0", "x"], "'--health-poll': must be more than 0; got 0"),
        (["launch", "--tpu", "p", "--health-timeout", "soon", "x"], "'--health-timeout': not a number of seconds"),
        (["run", "--nprocs", "2", "--host-index", "-1", "s.py"], "'--host-index': must be 0 or more; got -1"),
        (["verify", "--nprocs", "x"], "'--nprocs': not a whole number: 'x'"),
        (["no-such-command"], "'no-such-command'"),
    ],
)
def test_a_usage_error_names_the_option_and_exits_2(argv, named):
    result = invoke(argv)
    assert result.exit_code == 2 and named in result.stderr, result.stderr
    assert result.stdout == ""


def test_migrate_with_no_path_takes_the_folder_it_is_run_in(tmp_path, monkeypatch):
    """As `ruff check` does."""
    (tmp_path / "train.py").write_text("import torch_xla.core.xla_model as xm\n\nn = xm.xrt_world_size()\n")
    monkeypatch.chdir(tmp_path)
    preview = invoke(["migrate"])
    assert preview.exit_code == 0 and "+n = xr.world_size()" in preview.stdout
    assert "To apply them: xrt2pjrt migrate --write\n" in preview.stderr
    assert invoke(["migrate", "--write"]).exit_code == 0
    assert "xr.world_size()" in (tmp_path / "train.py").read_text()
