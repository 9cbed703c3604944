"""A checkout the user did not write (a download, vendored code, a colleague's repository):
migrating it runs none of its commands, writes nothing outside it, reads its settings with a
bound, and ends in seconds, naming what it refused (exit 2) and migrating the rest.

Real repositories made with the git on this machine, real FIFOs and links, the tool run as
a process (a crash is seen as its exit code).
"""

from __future__ import annotations

import faulthandler
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time

import pytest

from xrt2pjrt import codemod
from cli_runner import invoke
from test_git_discovery import GIT, MIGRATED_LINE, XRT, env, git  # noqa: F401 (env: a fixture)

needs_git = pytest.mark.skipif(GIT is None, reason="needs git on PATH")


# What a run may take at most here: a regression that reads /dev/zero or expands a bomb
# fails the test with a MemoryError, not the machine.
MEMORY = 3 << 30


def _bounded():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def migrate(env, *args, cwd=None, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", "migrate", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd=cwd,
        preexec_fn=_bounded,
    )


def timed_migrate(env, *args, cwd=None, within=20) -> subprocess.CompletedProcess:
    """A run that must end in seconds (it hung for minutes, or for good)."""
    started = time.monotonic()
    ran = migrate(env, *args, cwd=cwd, timeout=within * 3)
    assert time.monotonic() - started < within, f"took {time.monotonic() - started:.0f} s: {ran.stderr}"
    return ran


def said_once(ran, words: str) -> None:
    """``words`` are in exactly one line of the run's output, and no traceback is."""
    assert "Traceback" not in ran.stderr, ran.stderr
    assert sum(words in line for line in ran.stderr.splitlines()) == 1, ran.stderr


# --- 1. nothing in a checkout makes the tool run a command ---------------------------------

# Every setting of a repository's config that names a program git may run, each set to one
# that leaves a mark of its own; the filter and diff drivers are bound to every file.
RUNS_A_PROGRAM = (
    "core.fsmonitor",
    "core.hooksPath",
    "core.pager",
    "pager.ls-files",
    "diff.external",
    "core.sshCommand",
    "credential.helper",
    "core.alternateRefsCommand",
    "core.askPass",
    "filter.evil.clean",
    "filter.evil.smudge",
    "filter.evil.process",
    "diff.evil.textconv",
    "diff.evil.command",
)


@needs_git
def test_a_checkouts_config_runs_no_program_when_it_is_listed(tmp_path, env):
    """`git config core.fsmonitor 'touch /tmp/PWNED; echo'` in a repository, then `migrate .
    --check` ran it (git ls-files runs the fsmonitor hook)."""
    repo, marks = tmp_path / "repo", tmp_path / "marks"
    repo.mkdir()
    marks.mkdir()
    git(repo, env, "init", "-q")
    (repo / "train.py").write_text(XRT)
    (repo / ".gitattributes").write_text("* filter=evil diff=evil\n")
    git(repo, env, "add", ".")
    git(repo, env, "commit", "-q", "-m", "init")
    hooks = repo / "hooks"
    hooks.mkdir()
    for name in ("pre-commit", "post-checkout", "fsmonitor-watchman", "post-index-change"):
        (hooks / name).write_text(f"#!/bin/sh\ntouch {marks}/hook-{name}\n")
        (hooks / name).chmod(0o755)
    for key in RUNS_A_PROGRAM:
        value = str(hooks) if key == "core.hooksPath" else f"touch {marks}/{key}; cat"
        git(repo, env, "config", key, value)
    # and the same again from a file the config includes
    (repo / "evil.cfg").write_text(f"[core]\n\tfsmonitor = touch {marks}/included; echo\n")
    git(repo, env, "config", "include.path", str(repo / "evil.cfg"))
    (repo / "new.py").write_text(XRT)  # untracked: listed with --others
    for mode in ("--check", "--write"):
        ran = migrate(env, mode, ".", cwd=repo)
        assert ran.returncode in (0, 1), ran.stderr
        assert sorted(os.listdir(marks)) == [], f"{mode} ran: {sorted(os.listdir(marks))}"
    assert MIGRATED_LINE in (repo / "train.py").read_text() and MIGRATED_LINE in (repo / "new.py").read_text()


@needs_git
def test_git_variables_of_the_environment_name_no_program_or_other_repository(tmp_path, env):
    """A hook that runs the tool sets GIT_DIR, and a shell may carry GIT_EXTERNAL_DIFF or
    GIT_CONFIG_PARAMETERS: the listing is of the folder named, and runs nothing they name."""
    repo, other, marks = tmp_path / "repo", tmp_path / "other", tmp_path / "marks"
    marks.mkdir()
    for path in (repo, other):
        path.mkdir()
        git(path, env, "init", "-q")
    (repo / "train.py").write_text(XRT)
    (other / "elsewhere.py").write_text(XRT)
    hostile = {
        **env,
        "GIT_DIR": str(other / ".git"),
        "GIT_WORK_TREE": str(other),
        "GIT_CONFIG_PARAMETERS": f"'core.fsmonitor'='touch {marks}/parameters; echo'",
        "GIT_EXTERNAL_DIFF": f"touch {marks}/external-diff",
    }
    ran = migrate(hostile, "--check", ".", cwd=repo)
    assert ran.returncode == 1, ran.stderr
    assert "train.py: would change" in ran.stderr and "elsewhere.py" not in ran.stderr
    assert os.listdir(marks) == []


# --- 2. nothing is written outside the project ---------------------------------------------


@pytest.mark.parametrize("link", ["xrt2pjrt_shim", "xrt2pjrt_shim/cpu"])
def test_the_shims_copy_is_never_written_through_a_link(tmp_path, env, link):
    """xrt2pjrt_shim (or xrt2pjrt_shim/cpu) a link to a folder elsewhere: --target shim wrote
    the copy there (29 files), exit 0."""
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / "train.py").write_text(XRT)
    (project / link).parent.mkdir(parents=True, exist_ok=True)
    (project / link).symlink_to(elsewhere)
    ran = migrate(env, "--write", "--target", "shim", project)
    assert ran.returncode == 2, ran.stderr
    assert os.listdir(elsewhere) == []
    assert (project / "train.py").read_text() == XRT  # not pointed at a copy that is not there
    errors = [line for line in ran.stderr.splitlines() if ": error: " in line]
    assert len(errors) == 2 and "a symbolic link" in errors[1] and "train.py" in errors[0], ran.stderr


def test_a_file_where_the_shims_copy_goes_is_one_error(tmp_path, env):
    """A plain file named xrt2pjrt_shim gave 28 identical errors, and the code was still
    rewritten to import a copy that cannot exist."""
    (tmp_path / "train.py").write_text(XRT)
    (tmp_path / "xrt2pjrt_shim").write_text("mine\n")
    ran = migrate(env, "--write", "--target", "shim", tmp_path)
    assert ran.returncode == 2, ran.stderr
    assert ran.stderr.count("xrt2pjrt_shim: error: not a folder") == 1, ran.stderr
    assert ran.stderr.count(": error: ") == 2, ran.stderr
    assert (tmp_path / "train.py").read_text() == XRT and (tmp_path / "xrt2pjrt_shim").read_text() == "mine\n"


def test_a_fifo_in_the_shims_copy_is_not_waited_on(tmp_path, env):
    """The copy's files of an earlier version are looked for by their first line: a FIFO
    among them hung the run."""
    (tmp_path / "train.py").write_text(XRT)
    assert migrate(env, "--write", "--target", "shim", tmp_path).returncode == 0
    os.mkfifo(tmp_path / "xrt2pjrt_shim" / "old.py")
    ran = timed_migrate(env, "--check", "--target", "shim", tmp_path)
    assert ran.returncode == 0, ran.stderr


# --- 3 and 5. settings and ignore files: read with a bound, matched in bounded time ------------


def test_a_gitignore_that_links_to_dev_zero_is_refused_by_name(tmp_path, env):
    """It was read until the kernel killed the run (24 GB in 13 s)."""
    (tmp_path / "train.py").write_text(XRT)
    (tmp_path / "vendored").mkdir()
    (tmp_path / "vendored" / "tool.py").write_text(XRT)
    (tmp_path / "vendored" / ".gitignore").symlink_to("/dev/zero")
    ran = timed_migrate(env, "--write", tmp_path)
    assert ran.returncode == 2, ran.stderr
    said_once(ran, "vendored/.gitignore: error: cannot read: a character device, not a file")
    assert (
        MIGRATED_LINE in (tmp_path / "train.py").read_text() and (tmp_path / "vendored" / "tool.py").read_text() == XRT
    )


def test_an_oversized_gitignore_is_refused_by_name(tmp_path, env):
    (tmp_path / "train.py").write_text(XRT)
    (tmp_path / ".gitignore").write_text("data/\n" * 1_000_000)  # 6 MB
    ran = timed_migrate(env, tmp_path)
    assert ran.returncode == 2
    said_once(ran, ".gitignore: error: cannot read: larger than 2,000,000 bytes")


@pytest.mark.parametrize("in_git", [False, pytest.param(True, marks=needs_git)], ids=["folder", "git-checkout"])
def test_a_fifo_named_gitignore_is_named_without_waiting(tmp_path, env, in_git):
    """A FIFO named .gitignore hung the run, inside a git checkout (git's own open() waits
    for a writer) and outside."""
    if in_git:
        git(tmp_path, env, "init", "-q")
    (tmp_path / "train.py").write_text(XRT)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "tool.py").write_text(XRT)
    os.mkfifo(tmp_path / "sub" / ".gitignore")
    ran = timed_migrate(env, "--write", ".", cwd=tmp_path, within=15)
    assert ran.returncode == 2, ran.stderr
    said_once(ran, "sub/.gitignore: error: cannot read: a FIFO (named pipe), not a file")
    assert MIGRATED_LINE in (tmp_path / "train.py").read_text()


def test_a_gitignore_pattern_of_many_stars_matches_in_bounded_time(tmp_path, env):
    """`a**********b` outside git: 27 s a long name at 8 stars, unbounded at 12. Git reads a
    run of stars inside a name as one, and so does the run: the file it names is ignored."""
    (tmp_path / ".gitignore").write_text("a" + "*" * 12 + "b.py\n")
    (tmp_path / ("a" * 200 + "b.py")).write_text(XRT)  # ignored
    (tmp_path / ("a" * 200 + ".py")).write_text(XRT)  # not: the slow one to refuse
    ran = timed_migrate(env, "--check", tmp_path)
    assert ran.returncode == 1, ran.stderr
    assert ran.stderr.count(": would change") == 1 and "a" * 200 + ".py: would change" in ran.stderr


def test_a_pattern_too_wild_to_match_in_bounded_time_is_refused_by_name(tmp_path, env):
    """Five runs of stars with letters between them (`*a*a*a*a*b`) take 24 s for one name
    of 250 letters: such a pattern, in a .gitignore or the configuration, is refused."""
    (tmp_path / "train.py").write_text(XRT)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".gitignore").write_text("build/\n*a*a*a*a*b\n")
    ran = timed_migrate(env, "--write", tmp_path)
    assert ran.returncode == 2
    said_once(ran, "sub/.gitignore: error: cannot read: line 2: the pattern '*a*a*a*a*b' holds more than 4 runs")
    (tmp_path / "sub" / ".gitignore").unlink()
    (tmp_path / "pyproject.toml").write_text('[tool.xrt2pjrt]\nextend-exclude = ["*a*a*a*a*b"]\n')
    ran = timed_migrate(env, tmp_path)
    assert ran.returncode == 2
    said_once(ran, "pyproject.toml: [tool.xrt2pjrt] extend-exclude: the pattern '*a*a*a*a*b' holds more than 4 runs")


def test_settings_files_for_the_line_length_are_read_with_a_bound_and_named(tmp_path, env):
    """An .editorconfig with 22 {a,b} groups took over 60 s and 420 MB; a FIFO or a link to
    /dev/zero among the linters' files hangs or eats memory. Each is named, the run goes on."""
    (tmp_path / "train.py").write_text(XRT)
    (tmp_path / ".editorconfig").write_text("[" + "{a,b}" * 22 + "]\nmax_line_length = 100\n")
    os.mkfifo(tmp_path / ".flake8")  # (a FIFO named setup.cfg, a file it migrates, is an error)
    (tmp_path / "tox.ini").symlink_to("/dev/zero")
    ran = timed_migrate(env, "--write", tmp_path)
    assert ran.returncode == 0, ran.stderr
    said_once(ran, ".editorconfig: [{a,b}{a,b}")
    said_once(ran, ".flake8: a FIFO (named pipe), not a file: not read for the line length")
    said_once(ran, "tox.ini: a character device, not a file: not read for the line length")
    assert MIGRATED_LINE in (tmp_path / "train.py").read_text()


@pytest.mark.parametrize("special", ["fifo", "dev-zero"])
def test_a_pyproject_that_is_no_file_is_refused_by_name(tmp_path, env, special):
    (tmp_path / "train.py").write_text(XRT)
    if special == "fifo":
        os.mkfifo(tmp_path / "pyproject.toml")
    else:
        (tmp_path / "pyproject.toml").symlink_to("/dev/zero")
    ran = timed_migrate(env, tmp_path)
    assert ran.returncode == 2
    said_once(ran, "pyproject.toml: cannot read: a ")


@pytest.mark.parametrize("name", ["huge.py", "ignored/huge.md"])
def test_a_sparse_file_of_a_terabyte_is_not_read(tmp_path, env, name):
    """It costs a checkout no disk, and was read until memory ran out: migrated, or looked
    into as an ignored file for XRT-era words."""
    (tmp_path / ".gitignore").write_text("ignored/\n")
    (tmp_path / "train.py").write_text(XRT)
    (tmp_path / name).parent.mkdir(exist_ok=True)
    with open(tmp_path / name, "wb") as f:
        f.truncate(1 << 40)
    ran = timed_migrate(env, "--write", tmp_path)
    assert MIGRATED_LINE in (tmp_path / "train.py").read_text()
    if name == "huge.py":
        assert ran.returncode == 2
        said_once(ran, "huge.py: error: more than 100,000,000 bytes: not read")
    else:
        assert ran.returncode == 0, ran.stderr


# --- 4. crashes: a file the parser cannot take is named, the rest migrated --------------------

DEEP = "x = " + "[" * 1500 + "]" * 1500 + "\n"  # libcst's parser overflowed its stack on it (SIGSEGV)


def deep_notebook() -> str:
    cell = {"cell_type": "code", "metadata": {}, "source": XRT + DEEP, "outputs": [], "execution_count": None}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize(
    "name, text",
    [("deep.py", XRT + DEEP), ("README.md", f"# t\n\n```python\n{XRT}{DEEP}```\n"), ("deep.ipynb", deep_notebook())],
    ids=["python", "markdown", "notebook"],
)
def test_brackets_nested_past_what_python_allows_are_named_and_the_rest_migrated(tmp_path, env, name, text, jobs):
    """1,500 nested brackets crashed the run (exit 139, nothing migrated; with --jobs 2 a
    BrokenProcessPool traceback). Python allows 200."""
    (tmp_path / name).write_text(text)
    for k in range(2):
        (tmp_path / f"train{k}.py").write_text(XRT)
    ran = timed_migrate(env, "--write", "--jobs", jobs, tmp_path, within=60)
    assert ran.returncode == 2, ran.stderr
    said_once(ran, f"{name}: error: line 4")  # (of the cell or block, in a notebook or a document)
    assert "brackets nested more than 200 deep" in ran.stderr
    assert (tmp_path / name).read_text() == text
    assert all(MIGRATED_LINE in (tmp_path / f"train{k}.py").read_text() for k in range(2))


_REWRITE = codemod._rewrite


def _crashes_on_one_file(job, options):  # (a worker finds it by name: it cannot be local)
    if "CRASH" in job.source.text:
        faulthandler.disable()  # (pytest's would print the worker's stack)
        os.kill(os.getpid(), signal.SIGSEGV)
    return _REWRITE(job, options)


def test_a_worker_that_crashes_costs_only_the_file_it_crashed_on(tmp_path, monkeypatch):
    """A simulation: the parser crashes its process (a real SIGSEGV, sent to itself) on one
    file, as libcst's did on deep nesting. With workers, that file is named as not processed
    and every other file is migrated; no traceback."""
    monkeypatch.setattr(codemod, "_rewrite", _crashes_on_one_file)
    (tmp_path / "crash.py").write_text(XRT + "# CRASH\n")
    for k in range(4):
        (tmp_path / f"train{k}.py").write_text(XRT)
    done = invoke(["migrate", "--write", "--jobs", "2", tmp_path])
    assert done.exit_code == 2, done.output
    assert "Traceback" not in done.output and "BrokenProcessPool" not in done.output
    said_once(done, "crash.py: error: not processed: the process that parsed it ended abruptly")
    assert all(MIGRATED_LINE in (tmp_path / f"train{k}.py").read_text() for k in range(4))
    assert (tmp_path / "crash.py").read_text() == XRT + "# CRASH\n"


# --- 5 and 7. YAML: an alias bomb is refused in seconds, a tag of GitLab's is read ---------------


def test_a_yaml_alias_bomb_is_refused_by_name_in_seconds(tmp_path, env):
    """600 bytes, nine levels of aliases of aliases: over 120 s, nine times more a level."""
    levels = ["a0: &a0 [XRT_TPU_CONFIG]"] + [f"a{k}: &a{k} [{', '.join([f'*a{k - 1}'] * 9)}]" for k in range(1, 10)]
    (tmp_path / "bomb.yml").write_text("\n".join(levels) + "\nscript:\n  - export XRT_TPU_CONFIG=x\n")
    (tmp_path / "train.py").write_text(XRT)
    ran = timed_migrate(env, "--write", tmp_path)
    assert ran.returncode == 2, ran.stderr
    said_once(ran, "bomb.yml: error: line ")
    assert "more than 100,000 nodes (an alias bomb)" in ran.stderr
    assert MIGRATED_LINE in (tmp_path / "train.py").read_text()


def test_a_gitlab_ci_file_with_reference_tags_is_migrated(tmp_path, env):
    """`!reference` (and any tag no loader here knows) made the rewrite 'not valid yaml', exit 2."""
    text = (
        ".defaults:\n  script:\n    - echo hi\ntrain:\n  script:\n    - !reference [.defaults, script]\n"
        "    - export XRT_TPU_CONFIG=\"localservice;0;localhost:51011\"\n    - python train.py\n"
        "deploy:\n  image: !Custom {name: x}\n"
    )
    (tmp_path / ".gitlab-ci.yml").write_text(text)
    ran = timed_migrate(env, "--write", tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert (tmp_path / ".gitlab-ci.yml").read_text() == text.replace(
        'export XRT_TPU_CONFIG="localservice;0;localhost:51011"', "export PJRT_DEVICE=TPU"
    )


# --- 7. nothing passed over without a word -----------------------------------------------------


@needs_git
def test_a_fifo_or_socket_in_a_git_checkout_is_named(tmp_path, env):
    """git lists no FIFO or socket: one named like a file a rewriter handles was skipped
    without a word in a checkout (outside one it was named). An ignored one stays unsaid."""
    git(tmp_path, env, "init", "-q")
    (tmp_path / "train.py").write_text(XRT)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "tool.py").write_text(XRT)
    os.mkfifo(tmp_path / "sub" / "pipe.py")
    os.mkfifo(tmp_path / "scratch.py")
    (tmp_path / ".gitignore").write_text("scratch.py\n")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "run.sh"))
        ran = timed_migrate(env, "--write", ".", cwd=tmp_path)
    assert ran.returncode == 2, ran.stderr
    said_once(ran, "sub/pipe.py: error: a FIFO (named pipe), not a file")
    said_once(ran, "run.sh: error: a socket, not a file")
    assert "scratch.py" not in ran.stderr
    assert MIGRATED_LINE in (tmp_path / "sub" / "tool.py").read_text()


# --- 6. a named error and exit 2, never a traceback --------------------------------------------


@pytest.mark.parametrize(
    "text, words",
    [
        (b'[tool.xrt2pjrt]\nselect = ["\xff"]\n', "pyproject.toml: not valid TOML: line 2: not UTF-8 (byte 0xff)"),
        (
            b"[tool.xrt2pjrt]\nx = " + b"[" * 3000 + b"]" * 3000 + b"\n",
            "pyproject.toml: not valid TOML: nested too deeply",
        ),
    ],
    ids=["not-utf8", "nested-3000-deep"],
)
def test_a_pyproject_that_cannot_be_read_is_a_named_error(tmp_path, env, text, words):
    (tmp_path / "train.py").write_text(XRT)
    (tmp_path / "pyproject.toml").write_bytes(text)
    ran = timed_migrate(env, "--write", tmp_path)
    assert ran.returncode == 2
    said_once(ran, words)
    assert (tmp_path / "train.py").read_text() == XRT


def test_a_ruff_toml_nested_3000_deep_is_named_and_the_run_goes_on(tmp_path, env):
    """Read only for the line length: passed over, and named, not a traceback."""
    (tmp_path / "train.py").write_text(XRT)
    (tmp_path / "ruff.toml").write_text("a = " + "{b = " * 3000 + "1" + "}" * 3000 + "\n")
    ran = timed_migrate(env, "--write", tmp_path)
    assert ran.returncode == 0, ran.stderr
    said_once(ran, "ruff.toml: not valid TOML (nested too deeply to read): not read for the line length")
    assert MIGRATED_LINE in (tmp_path / "train.py").read_text()


def test_a_report_through_a_dangling_link_is_refused_before_anything_is_written(tmp_path, env):
    """It raised a traceback after --write had rewritten the files; and a dangling link may
    point anywhere (a checkout's, outside it): the report is not created through it."""
    (tmp_path / "train.py").write_text(XRT)
    (tmp_path / "migration.md").symlink_to(tmp_path / "elsewhere" / "report.md")
    ran = timed_migrate(env, "--write", "--report", tmp_path / "migration.md", tmp_path)
    assert ran.returncode == 2
    said_once(ran, "migration.md: a symbolic link to ")
    assert (tmp_path / "train.py").read_text() == XRT and not (tmp_path / "elsewhere").exists()


@pytest.fixture
def tiny_tmpfs(tmp_path):
    """A real file system of 64 KB (root mounts it here), made read-only or filled by the test."""
    folder = tmp_path / "tmpfs"
    folder.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)], capture_output=True
        ).returncode
    ):
        pytest.skip("needs to mount a tmpfs (root, with the right to mount)")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def test_a_report_in_a_read_only_folder_is_refused_before_anything_is_written(tmp_path, env, tiny_tmpfs):
    (tmp_path / "train.py").write_text(XRT)
    subprocess.run(["mount", "-o", "remount,ro", str(tiny_tmpfs)], check=True)
    ran = timed_migrate(env, "--write", "--report", tiny_tmpfs / "migration.json", tmp_path)
    assert ran.returncode == 2
    said_once(ran, "migration.json: cannot write in the folder")
    assert (tmp_path / "train.py").read_text() == XRT


def test_a_full_disk_at_report_time_is_a_named_error(tmp_path, env, tiny_tmpfs):
    """--write has rewritten the files when the report finds no room: it says so, exit 2."""
    (tmp_path / "train.py").write_text(XRT)
    with open(tiny_tmpfs / "filler", "wb", buffering=0) as filler:
        with pytest.raises(OSError):
            while True:
                filler.write(b"x" * 4096)
    ran = timed_migrate(env, "--write", "--report", tiny_tmpfs / "migration.md", tmp_path)
    assert ran.returncode == 2
    said_once(ran, "migration.md: cannot write: No space left on device; the 1 file written stay written")
    assert MIGRATED_LINE in (tmp_path / "train.py").read_text()


# --- 8. bytes and modes ------------------------------------------------------------------------


def test_cr_only_line_endings_survive_byte_for_byte(tmp_path, env):
    """A file with CR-only line endings lost its final \\r (libcst drops it)."""
    (tmp_path / "old_mac.py").write_bytes(XRT.replace("\n", "\r").encode())
    ran = timed_migrate(env, "--write", tmp_path)
    assert ran.returncode == 0, ran.stderr
    data = (tmp_path / "old_mac.py").read_bytes()
    assert data.endswith(b"\r") and b"\n" not in data
    assert data.decode().replace("\r", "\n") == XRT.replace(
        "import torch_xla.core.xla_model as xm", "import torch_xla.runtime as xr"
    ).replace("xm.xrt_world_size()", "xr.world_size()")


def test_a_read_only_file_is_named_and_left_as_it_is(tmp_path, env):
    """A 0444 file was replaced through a rename, which its mode does not stop: it says the
    file is not to be changed, so it is not, and the run says why (exit 2)."""
    (tmp_path / "train.py").write_text(XRT)
    (tmp_path / "vendored.py").write_text(XRT)
    (tmp_path / "vendored.py").chmod(0o444)
    before = os.stat(tmp_path / "vendored.py")
    ran = timed_migrate(env, "--write", tmp_path)
    assert ran.returncode == 2
    said_once(ran, "vendored.py: error: read-only (mode 0444): not rewritten; make it writable (chmod u+w)")
    after = os.stat(tmp_path / "vendored.py")
    assert (tmp_path / "vendored.py").read_text() == XRT and (after.st_ino, after.st_mode) == (
        before.st_ino,
        before.st_mode,
    )
    assert MIGRATED_LINE in (tmp_path / "train.py").read_text()
