"""Writes that fail: the user's file stays as it was, the error names it, the run exits 2.

Real faults where this machine allows them: a full file system (a small tmpfs, needs
root), a folder the user may not write to (the tool run as an unprivileged user). Where
a fault cannot be produced for real in a test, it is injected in-process and the test
says so in its name (``simulated``): the disk filling up on every machine, and another
program editing the file between xrt2pjrt reading it and writing it back.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from xrt2pjrt import codemod, files
from cli_runner import invoke

XRT_PROGRAM = b"import torch_xla.core.xla_model as xm\n\nprint(xm.xrt_world_size())\n"


def run_cli(*args, prefix=()) -> subprocess.CompletedProcess:
    command = [*prefix, sys.executable, "-m", "xrt2pjrt", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True)


def assert_failed_cleanly(run_stderr: str, exit_code: int, path: Path, original: bytes) -> None:
    assert exit_code == 2, run_stderr
    assert f"{path}: error:" in run_stderr
    assert path.read_bytes() == original
    leftovers = [p.name for p in path.parent.iterdir() if p.name.endswith(".xrt2pjrt")]
    assert not leftovers, f"temporary files left behind: {leftovers}"


def test_the_program_used_here_is_one_the_rules_change(tmp_path):
    """Guards the tests below: they are only meaningful if a write is attempted."""
    (tmp_path / "train.py").write_bytes(XRT_PROGRAM)
    run = run_cli("migrate", "--check", tmp_path)
    assert run.returncode == 1, run.stderr


# --- a full file system ------------------------------------------------------------


@pytest.fixture
def tiny_filesystem():
    """A 64 KiB tmpfs, mounted for the test (needs root); skipped where mounting is not allowed."""
    mount_point = Path(tempfile.mkdtemp(prefix="xrt2pjrt-full-"))
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount_point)], capture_output=True)
    if done.returncode != 0:
        mount_point.rmdir()
        pytest.skip("needs root to mount a small tmpfs (mount -t tmpfs); the simulated disk-full test still runs")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], check=True)
        mount_point.rmdir()


def fill(folder: Path) -> None:
    """Write to ``folder`` until its file system has no byte left."""
    with open(folder / "filler", "wb", buffering=0) as f:
        with pytest.raises(OSError) as full:
            while True:
                f.write(b"\0" * 512)
    assert full.value.errno == errno.ENOSPC


def test_disk_full_on_a_real_full_file_system(tiny_filesystem):
    target = tiny_filesystem / "train.py"
    target.write_bytes(XRT_PROGRAM)
    fill(tiny_filesystem)
    report = tiny_filesystem.parent / f"{tiny_filesystem.name}.json"
    try:
        run = run_cli("migrate", "--write", "--report", report, target)
        assert_failed_cleanly(run.stderr, run.returncode, target, XRT_PROGRAM)
        assert "No space left on device" in run.stderr
        [entry] = json.loads(report.read_text())["files"]
        assert entry["path"] == str(target) and "No space left" in entry["error"]
    finally:
        report.unlink(missing_ok=True)


def test_disk_full_simulated_at_fsync(tmp_path, monkeypatch):
    """Simulated: ENOSPC raised when the new bytes are flushed, as a full disk reports it."""
    target = tmp_path / "train.py"
    target.write_bytes(XRT_PROGRAM)

    def full_disk(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files.os, "fsync", full_disk)
    run = invoke(["migrate", "--write", str(target)])
    assert_failed_cleanly(run.stderr, run.exit_code, target, XRT_PROGRAM)
    assert "No space left on device" in run.stderr


# --- permission denied -------------------------------------------------------------


def test_a_folder_the_user_cannot_write_fails_that_file_only(unprivileged, shared_folder):
    locked, open_ = shared_folder / "locked", shared_folder / "open"
    for folder in (locked, open_):
        folder.mkdir()
        (folder / "train.py").write_bytes(XRT_PROGRAM)
    for path in (open_, open_ / "train.py", locked / "train.py"):
        os.chown(path, 65534, 65534) if unprivileged else None
    locked.chmod(0o555)  # the file is readable, but no new file may be made beside it

    run = run_cli("migrate", "--write", shared_folder, prefix=unprivileged)

    assert_failed_cleanly(run.stderr, run.returncode, locked / "train.py", XRT_PROGRAM)
    assert "Permission denied" in run.stderr
    migrated = (open_ / "train.py").read_bytes()
    assert migrated != XRT_PROGRAM and b"xrt_world_size" not in migrated


def test_file_mode_survives_a_rewrite(tmp_path):
    target = tmp_path / "train.py"
    target.write_bytes(XRT_PROGRAM)
    target.chmod(0o751)
    run = run_cli("migrate", "--write", target)
    assert run.returncode == 0, run.stderr
    assert target.read_bytes() != XRT_PROGRAM
    assert stat.S_IMODE(target.stat().st_mode) == 0o751


# --- a file changed while the tool ran ---------------------------------------------


def test_a_file_edited_during_the_run_is_not_overwritten_simulated(tmp_path, monkeypatch):
    """Simulated concurrent edit: the file changes after it was read, before it is written."""
    target = tmp_path / "train.py"
    target.write_bytes(XRT_PROGRAM)
    edited = XRT_PROGRAM + b"# saved in the editor meanwhile\n"
    plan_all = codemod.plan_all

    def plan_then_edit(*args, **kwargs):
        plans = plan_all(*args, **kwargs)
        target.write_bytes(edited)
        return plans

    monkeypatch.setattr(codemod, "plan_all", plan_then_edit)
    run = invoke(["migrate", "--write", str(target)])
    assert_failed_cleanly(run.stderr, run.exit_code, target, edited)
    assert "changed on disk" in run.stderr
