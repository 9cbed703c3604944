"""A checkout the user did not write (a download, vendored code, a colleague's repository):
migrating it runs none of its commands, writes nothing outside it, reads its settings with a
bound, and ends in seconds, naming what it refused (exit 2) and migrating the rest.

Real repositories made with the git on this machine, real FIFOs and links, the tool run as
a process (a crash is seen as its exit code).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from test_git_discovery import GIT, MIGRATED_LINE, XRT, env, git  # noqa: F401 (env: a fixture)

needs_git = pytest.mark.skipif(GIT is None, reason="needs git on PATH")


def migrate(env, *args, cwd=None, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "xrt2pjrt", "migrate", *map(str, args)], capture_output=True,
                          text=True, env=env, timeout=timeout, cwd=cwd)


# --- 1. nothing in a checkout makes the tool run a command ---------------------------------

# Every setting of a repository's config that names a program git may run, each set to one
# that leaves a mark of its own; the filter and diff drivers are bound to every file.
RUNS_A_PROGRAM = ("core.fsmonitor", "core.hooksPath", "core.pager", "pager.ls-files", "diff.external",
                  "core.sshCommand", "credential.helper", "core.alternateRefsCommand", "core.askPass",
                  "filter.evil.clean", "filter.evil.smudge", "filter.evil.process", "diff.evil.textconv",
                  "diff.evil.command")


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
    hostile = {**env, "GIT_DIR": str(other / ".git"), "GIT_WORK_TREE": str(other),
               "GIT_CONFIG_PARAMETERS": f"'core.fsmonitor'='touch {marks}/parameters; echo'",
               "GIT_EXTERNAL_DIFF": f"touch {marks}/external-diff"}
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

