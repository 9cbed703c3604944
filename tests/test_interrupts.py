"""`migrate` stopped by a real signal: what it says, what it leaves, and its workers.

Each test runs the command as a process and signals it for real. Trees are made large
enough that the signal arrives while the run is busy planning (in a pool of workers) or
writing.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
XRT = "import torch_xla.core.xla_model as xm\n\nprint(xm.xrt_world_size())\n"
DENSE = "".join(f"n{i} = xm.xrt_world_size() + xm.get_ordinal()\n" for i in range(3000))


def start(*args: object) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "xrt2pjrt", "migrate", *map(str, args)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(entry.name))
    return out


def alive(pid: int) -> bool:
    try:
        return (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]) != "Z"
    except OSError:
        return False


def wait_for(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.fixture
def busy_tree(tmp_path: Path) -> Path:
    """Enough text to parse that a pool of two works for a good while."""
    folder = tmp_path / "busy"
    folder.mkdir()
    for i in range(24):
        (folder / f"dense{i:02d}.py").write_text(XRT + DENSE)
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("sig, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGKILL, -9)])
def test_the_pool_workers_end_with_the_parent_however_it_ends(busy_tree, sig, status):
    before = {p.name: p.read_bytes() for p in busy_tree.iterdir()}
    proc = start("--write", "--jobs", "2", busy_tree)
    wait_for(lambda: len(children(proc.pid)) >= 2)
    workers = children(proc.pid)
    time.sleep(0.5)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == status
    if sig != signal.SIGKILL:
        assert "interrupted: 0 files written" in err and "Traceback" not in err
    wait_for(lambda: not any(alive(w) for w in workers), timeout=5)
    assert {p.name: p.read_bytes() for p in busy_tree.iterdir()} == before  # stopped while planning


@pytest.mark.slow
@pytest.mark.parametrize("sig, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_the_writes_stops_between_two_files_and_names_those_written(tmp_path, sig, status):
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(3000):
        (folder / f"m{i:04d}.py").write_text(XRT)
    first = folder / "m0000.py"
    proc = start("--write", "--jobs", "1", folder)
    wait_for(lambda: first.read_text() != XRT)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == status, err
    (line,) = [line for line in err.splitlines() if "interrupted:" in line]
    named = {Path(p).name for p in line.split("written: ", 1)[1].split("; the others")[0].split(", ")}
    migrated = {p.name for p in folder.iterdir() if p.read_text() != XRT}
    assert first.name in named and named == migrated and len(migrated) < 3000
    assert all(p.read_text() == XRT for p in folder.iterdir() if p.name not in named)
    assert not [p for p in folder.iterdir() if p.name.endswith(".xrt2pjrt")]


@pytest.mark.slow
def test_after_a_sigkill_during_the_writes_no_file_is_half_written_and_a_later_run_cleans_up(tmp_path):
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(3000):
        (folder / f"m{i:04d}.py").write_text(XRT)
    proc = start("--write", "--jobs", "1", folder)
    wait_for(lambda: (folder / "m0000.py").read_text() != XRT)
    proc.kill()
    proc.communicate(timeout=60)
    migrated = (folder / "m0000.py").read_text()
    for p in folder.iterdir():
        if not p.name.endswith(".xrt2pjrt"):
            assert p.read_text() in (XRT, migrated), f"{p.name} is neither the old file nor the new one"
    left = sorted(p.name for p in folder.iterdir() if p.name.endswith(".xrt2pjrt"))
    later = start("--write", "--jobs", "1", folder)
    _, err = later.communicate(timeout=300)
    assert later.returncode == 0, err
    assert not [p for p in folder.iterdir() if p.name.endswith(".xrt2pjrt")]
    if left:
        assert f"removed {len(left)} temporary file(s) an interrupted run left" in err
    assert all(p.read_text() == migrated for p in folder.iterdir())


def test_a_stale_temporary_file_is_named_then_removed_and_a_live_one_is_left_alone(tmp_path):
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "train.py").write_text(XRT)
    stale = folder / ".train.py.abcd1234.xrt2pjrt"
    stale.write_text("half of a new train.py")
    live = folder / ".train.py.live5678.xrt2pjrt"
    live.write_text("another run's file, being written")
    holder = os.open(live, os.O_RDONLY)
    fcntl.flock(holder, fcntl.LOCK_EX)  # as the run writing it holds it
    try:
        preview = start(folder)
        _, err = preview.communicate(timeout=120)
        assert f"1 temporary file(s) an interrupted run left: {stale} (--write removes them)" in err
        assert stale.exists()
        write = start("--write", folder)
        _, err = write.communicate(timeout=120)
        assert write.returncode == 0, err
        assert f"removed 1 temporary file(s) an interrupted run left: {stale}" in err
        assert not stale.exists() and live.exists()
        stale.write_text("again")
        named = start("--write", folder / "train.py")  # a file named alone: its folder is looked at too
        _, err = named.communicate(timeout=120)
        assert not stale.exists() and live.exists()
    finally:
        os.close(holder)
