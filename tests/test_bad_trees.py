"""Trees with parts that cannot be read: each part is named in one line, everything else is
still migrated, the run exits 2, and no traceback is printed.

Real file modes, FIFOs, sockets and links. Root reads whatever the modes say, so the runs
that meet a mode are made as a user the modes bind (``unprivileged``, from conftest). A file
that vanishes mid-run is deleted for real, at the moment named in the test's name, by
wrapping the step that comes next.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from xrt2pjrt import codemod, migration
from cli_runner import invoke

ROOT = Path(__file__).resolve().parents[1]
XRT = "import torch_xla.core.xla_model as xm\n\nprint(xm.xrt_world_size())\n"
MIGRATED_LINE = "print(xr.world_size())"


def migrate(*args, prefix=()) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [*prefix, sys.executable, "-m", "xrt2pjrt", "migrate", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def assert_said_once_and_went_on(ran, line: str, migrated: Path) -> None:
    assert ran.returncode == 2, ran.stderr
    assert "Traceback" not in ran.stderr
    assert ran.stderr.splitlines().count(line) == 1, ran.stderr
    assert MIGRATED_LINE in migrated.read_text()


@pytest.fixture
def user_tree(shared_folder, unprivileged):
    """(tree, prefix): a tree with one XRT-era program, owned by the user the prefix runs as."""
    (shared_folder / "train.py").write_text(XRT)
    yield shared_folder, unprivileged
    for path in [shared_folder, *shared_folder.rglob("*")]:
        os.chmod(path, 0o755, follow_symlinks=False) if not path.is_symlink() else None


def _owned_by_the_user(prefix, tree: Path) -> None:
    if prefix:  # run as nobody: the files are theirs, as a user's own tree is
        for path in [tree, *tree.rglob("*")]:
            os.chown(path, 65534, 65534, follow_symlinks=False)


def test_an_unreadable_folder_is_named_and_the_rest_migrated(user_tree):
    """It gave a PermissionError traceback and exit 1 ('changes pending'), nothing migrated."""
    tree, prefix = user_tree
    locked = tree / "locked"
    locked.mkdir()
    (locked / "a.py").write_text(XRT)
    _owned_by_the_user(prefix, tree)
    locked.chmod(0)
    ran = migrate("--write", tree, prefix=prefix)
    assert_said_once_and_went_on(
        ran,
        f"{locked}: error: cannot read the folder: Permission denied; nothing in it was migrated",
        tree / "train.py",
    )
    assert migrate("--check", tree, prefix=prefix).returncode == 2  # not 1: an error, not changes pending


def test_an_unreadable_folder_named_on_the_command_line_is_said(user_tree):
    tree, prefix = user_tree
    locked = tree / "locked"
    locked.mkdir()
    _owned_by_the_user(prefix, tree)
    locked.chmod(0)
    ran = migrate("--write", locked, tree / "train.py", prefix=prefix)
    assert_said_once_and_went_on(
        ran,
        f"{locked}: error: cannot read the folder: Permission denied; nothing in it was migrated",
        tree / "train.py",
    )


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git on PATH")
def test_an_unreadable_folder_in_a_git_checkout_is_named_once(user_tree):
    """git lists what it can and warns of the rest on its stderr: that folder went unsaid."""
    tree, prefix = user_tree
    locked = tree / "locked"
    locked.mkdir()
    (locked / "tracked.py").write_text(XRT)
    env = {**os.environ, "HOME": str(tree), "GIT_CONFIG_NOSYSTEM": "1"}
    for command in (
        ["init", "-q"],
        ["add", "."],
        ["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "init"],
    ):
        subprocess.run(["git", "-C", str(tree), *command], env=env, check=True, capture_output=True)
    (locked / "untracked.py").write_text(XRT)
    (tree / "train.py").write_text(XRT)  # committed as it was: migrated now
    _owned_by_the_user(prefix, tree)
    locked.chmod(0)
    ran = subprocess.run(
        [*prefix, sys.executable, "-m", "xrt2pjrt", "migrate", "--write", "-v", str(tree)],
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert "as git lists them" in ran.stderr
    assert_said_once_and_went_on(
        ran,
        f"{locked}: error: cannot read the folder: Permission denied; nothing in it was migrated",
        tree / "train.py",
    )
    assert "tracked.py" not in ran.stderr


def test_an_unreadable_file_inside_a_folder_is_said(user_tree):
    tree, prefix = user_tree
    (tree / "secret.py").write_text(XRT)
    _owned_by_the_user(prefix, tree)
    (tree / "secret.py").chmod(0)
    ran = migrate("--write", tree, prefix=prefix)
    assert_said_once_and_went_on(ran, f"{tree / 'secret.py'}: error: cannot read: Permission denied", tree / "train.py")


def test_an_unreadable_gitignore_leaves_its_folder_alone_and_says_why(user_tree):
    """Walked without its rules, the run could rewrite files it ignores, which no history keeps."""
    tree, prefix = user_tree
    sub = tree / "sub"
    sub.mkdir()
    (sub / "generated.py").write_text(XRT)
    (sub / ".gitignore").write_text("generated.py\n")
    _owned_by_the_user(prefix, tree)
    (sub / ".gitignore").chmod(0)
    ran = migrate("--write", tree, prefix=prefix)
    assert_said_once_and_went_on(
        ran,
        f"{sub / '.gitignore'}: error: cannot read: Permission denied; {sub} was not "
        "migrated, as its ignore rules are unknown",
        tree / "train.py",
    )
    assert (sub / "generated.py").read_text() == XRT


def test_a_fifo_and_a_socket_inside_a_folder_are_named_without_blocking(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text(XRT)
    os.mkfifo(tmp_path / "pipe.py")
    os.mkfifo(tmp_path / "events")  # of no kind migrated here: not a word about it
    monkeypatch.chdir(tmp_path)  # a socket's path must be short: bound by a relative name
    server = socket.socket(socket.AF_UNIX)
    server.bind("agent.sh")
    try:
        ran = migrate("--write", tmp_path)
    finally:
        server.close()
    assert ran.returncode == 2 and "Traceback" not in ran.stderr
    assert f"{tmp_path / 'pipe.py'}: error: a FIFO (named pipe), not a file: not read" in ran.stderr.splitlines()
    assert f"{tmp_path / 'agent.sh'}: error: a socket, not a file: not read" in ran.stderr.splitlines()
    assert "events" not in ran.stderr
    assert MIGRATED_LINE in (tmp_path / "train.py").read_text()


def test_a_symbolic_link_loop_named_on_the_command_line_is_said(tmp_path):
    (tmp_path / "train.py").write_text(XRT)
    (tmp_path / "a.py").symlink_to(tmp_path / "b.py")
    (tmp_path / "b.py").symlink_to(tmp_path / "a.py")
    ran = migrate("--write", tmp_path / "a.py", tmp_path / "train.py")
    assert_said_once_and_went_on(
        ran, f"{tmp_path / 'a.py'}: error: a loop of symbolic links: not read", tmp_path / "train.py"
    )


@pytest.fixture
def two_programs(tmp_path):
    for name in ("gone.py", "train.py"):
        (tmp_path / name).write_text(XRT)
    return tmp_path


def test_a_file_deleted_between_discovery_and_reading_is_said(two_programs, monkeypatch):
    found_then_deleted = migration.files.discover

    def discover(*args, **kwargs):
        found = found_then_deleted(*args, **kwargs)
        (two_programs / "gone.py").unlink()
        return found

    monkeypatch.setattr(migration.files, "discover", discover)
    ran = invoke(["migrate", "--write", two_programs])
    assert ran.exit_code == 2 and "Traceback" not in ran.stderr
    assert f"{two_programs / 'gone.py'}: error: deleted while xrt2pjrt ran: not read" in ran.stderr.splitlines()
    assert MIGRATED_LINE in (two_programs / "train.py").read_text()
    assert not (two_programs / "gone.py").exists()


def test_a_file_deleted_between_reading_and_writing_is_not_brought_back(two_programs, monkeypatch):
    """It said 'cannot write: No such file or directory; the file is unchanged'."""
    apply = codemod.apply

    def deleted_first(plan, held=None):
        if plan.result.path.endswith("gone.py"):
            (two_programs / "gone.py").unlink()
        return apply(plan, held)

    monkeypatch.setattr(codemod, "apply", deleted_first)
    ran = invoke(["migrate", "--write", two_programs])
    assert ran.exit_code == 2 and "Traceback" not in ran.stderr
    assert f"{two_programs / 'gone.py'}: error: deleted while xrt2pjrt ran: not written" in ran.stderr.splitlines()
    assert MIGRATED_LINE in (two_programs / "train.py").read_text()
    assert sorted(p.name for p in two_programs.iterdir()) == ["train.py"]  # no file made again, no temporary one
