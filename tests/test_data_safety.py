"""`migrate` never loses a byte of the user's: reports, concurrent editors, owners, links.

Everything here is real: files on disk, the command run as a process, another process
editing files while it writes, files owned by another user (the tests run as root here;
that one is skipped elsewhere).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

XRT = "import torch_xla.core.xla_model as xm\n\nprint(xm.xrt_world_size())\n"
README = "Run with `python -m torch_xla.distributed.xla_dist --tpu=pod -- python3 t.py`.\n"
ROOT = Path(__file__).resolve().parents[1]


def migrate(*args, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", "migrate", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        **kwargs,
    )


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "train.py").write_text(XRT)
    (root / "README.md").write_text(README)
    return root


# --- --report ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [[], ["--check"], ["--write"]])
def test_a_report_onto_a_file_of_the_run_is_refused_before_anything_is_touched(tree, mode):
    before = snapshot(tree)
    ran = migrate(tree, *mode, "--report", tree / "README.md")
    assert ran.returncode == 2
    assert "a file of this run" in ran.stderr
    assert snapshot(tree) == before


@pytest.mark.parametrize("where", ["folder", "missing folder"])
def test_a_report_path_that_cannot_be_written_is_refused_before_write_changes_anything(tree, tmp_path, where):
    report = tmp_path / "report.json"
    if where == "folder":
        report.mkdir()
    else:
        report = tmp_path / "no" / "such" / "report.json"
    before = snapshot(tree)
    ran = migrate(tree, "--write", "--report", report)
    assert ran.returncode == 2 and "Traceback" not in ran.stderr
    assert ("is a folder" if where == "folder" else "does not exist") in ran.stderr
    assert snapshot(tree) == before


def test_the_report_replaces_an_old_one_atomically_and_keeps_its_mode(tree, tmp_path):
    report = tmp_path / "report.json"
    report.write_text("old report\n")
    report.chmod(0o640)
    inode = report.stat().st_ino
    assert migrate(tree, "--report", report).returncode == 0
    assert json.loads(report.read_text())["summary"]["files_seen"] == 2
    assert report.stat().st_ino != inode and report.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".xrt2pjrt")] == []


# --- another program editing files during --write -------------------------------------------

EDITOR = textwrap.dedent('''
    """Edits the files of a folder until told to stop, the way that loses edits if anything
    does: it watches for xrt2pjrt's temporary files and, when one appears for one of the
    even-numbered files (a file is being replaced), appends to that file again and again.
    The odd-numbered ones it leaves to be written, so that the run writes files while it
    edits others however fast either side runs. Now and then it also edits a file at
    random, in place or by writing a new file over it as editors do. Logs each edit done."""
    import os, random, re, sys
    folder, log, stop = sys.argv[1:4]
    names = sorted(os.listdir(folder))
    watched = set(names[::2])
    temporary = re.compile(r"\\.(.+)\\.[a-z0-9_]{8}\\.xrt2pjrt")
    random.seed(0)
    k = 0
    with open(log, "w") as out:
        def append(name):
            global k
            with open(os.path.join(folder, name), "a") as f:
                f.write(f"# edit {k}\\n")
            out.write(f"{name} {k}\\n")
            k += 1
        scans = 0
        while not os.path.exists(stop):
            for entry in os.scandir(folder):
                m = temporary.fullmatch(entry.name)
                if m and m.group(1) in watched:
                    for _ in range(20):
                        append(m.group(1))
            scans += 1
            if scans % 500 == 0:
                name = random.choice(names)
                if scans % 1000:
                    append(name)
                else:
                    path = os.path.join(folder, name)
                    with open(path) as f:
                        text = f.read()
                    with open(path + ".new", "w") as f:
                        f.write(text + f"# edit {k}\\n")
                    os.replace(path + ".new", path)
                    out.write(f"{name} {k}\\n")
                    k += 1
''')


@pytest.mark.slow
def test_no_edit_of_another_program_is_lost_during_write(tmp_path):
    """A real second process edits the files of a large tree while `--write` rewrites it.
    Every edit it made must be in the file at the end: in the migrated text when it landed
    before xrt2pjrt read the file or after it replaced it, in the untouched file when
    xrt2pjrt saw the change and refused to write ("changed on disk")."""
    folder = tmp_path / "tree"
    folder.mkdir()
    body = "".join(f"def step_{i}(x):\n    return x * {i}\n\n" for i in range(200))
    for i in range(400):
        (folder / f"m{i:03d}.py").write_text(XRT + body)
    editor, log, stop = tmp_path / "editor.py", tmp_path / "edits.log", tmp_path / "stop"
    editor.write_text(EDITOR)
    proc = subprocess.Popen([sys.executable, str(editor), str(folder), str(log), str(stop)])
    try:
        time.sleep(0.5)
        ran = migrate("--write", "--jobs", "2", folder)
    finally:
        stop.touch()
        proc.wait(timeout=60)
    assert ran.returncode in (0, 2), ran.stderr
    edits = [line.split() for line in log.read_text().splitlines()]

    def kept(name: str) -> str:  # the file, and any copy saved of it as edited during its rename
        return "".join(p.read_text() for p in folder.glob(f"{name}*") if not p.name.endswith(".xrt2pjrt"))

    lost = [(name, k) for name, k in edits if f"# edit {k}\n" not in kept(name)]
    saved = len(list(folder.glob("*.edited-while-xrt2pjrt-wrote*")))
    written = sum("xrt_world_size" not in p.read_text() for p in folder.glob("m*.py"))
    refused = ran.stderr.count("changed on disk while xrt2pjrt ran")
    print(
        f"{len(edits)} edits, {written} files written, {refused} refused as changed, {saved} saved beside, "
        f"{len(lost)} edits lost"
    )
    assert written > 0 and refused > 0, "the edits and the writes overlapped"
    assert lost == []
    assert not [p for p in folder.iterdir() if p.name.endswith(".xrt2pjrt")]


# --- owner, links -----------------------------------------------------------------------------


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: only root can give a file to another user")
def test_owner_and_group_survive_a_rewrite_by_root(tree):
    target = tree / "train.py"
    os.chown(target, 12345, 54321)
    assert migrate("--write", target).returncode == 0
    assert "xrt_world_size" not in target.read_text()
    assert (target.stat().st_uid, target.stat().st_gid) == (12345, 54321)


def test_a_symbolic_link_named_is_written_through_and_stays_a_link(tree, tmp_path):
    real = tmp_path / "elsewhere" / "real_train.py"
    real.parent.mkdir()
    real.write_text(XRT)
    link = tree / "link.py"
    link.symlink_to(real)
    ran = migrate("--write", link)
    assert ran.returncode == 0, ran.stderr
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert "xrt_world_size" not in real.read_text()


def test_a_file_with_several_hard_links_is_reported_and_left_alone(tree):
    target = tree / "train.py"
    other = tree / "copy_of_train.py"
    os.link(target, other)
    ran = migrate("--write", target)
    assert ran.returncode == 2
    assert "has 2 hard links: not rewritten" in ran.stderr
    assert target.read_text() == other.read_text() == XRT
    assert target.stat().st_ino == other.stat().st_ino


def test_symbolic_links_inside_a_folder_are_counted_and_said(tree, tmp_path):
    outside = tmp_path / "outside.py"
    outside.write_text(XRT)
    (tree / "to_outside.py").symlink_to(outside)
    (tree / "to_folder").symlink_to(tmp_path)
    ran = migrate("--check", tree)
    assert "2 symbolic links inside the folders not followed" in ran.stderr
    assert outside.read_text() == XRT


@pytest.mark.parametrize("checkout", [False, True])
def test_a_copy_of_torch_xla_itself_is_left_as_it_is_and_named(tree, checkout):
    """issue 32's eighth round: a project holding an unpacked torch_xla 1.10 wheel got 77 items
    and 27 changes that broke the copy (an import of torch_xla.runtime it lacks)."""
    library = tree / "sm" / "torch_xla"
    (library / "core").mkdir(parents=True)
    (library / "core" / "xla_model.py").write_text("def xrt_world_size(defval=1):\n    return defval\n")
    (library / "distributed").mkdir()
    (library / "distributed" / "xla_multiprocessing.py").write_text(XRT + "os.environ['XRT_SHARD_ORDINAL'] = '0'\n")
    own = library / "distributed" / "vendor_launch.py"  # a file of the vendor's, no release ships
    own.write_text(XRT)
    (tree / "sm" / "torch_xla-1.10.0.dist-info").mkdir()
    (tree / "sm" / "torch_xla-1.10.0.dist-info" / "entry_points.txt").write_text("[console_scripts]\n")
    if checkout:
        subprocess.run(["git", "init", "-q", str(tree)], check=True)
        subprocess.run(["git", "-C", str(tree), "add", "-A"], check=True)
    before = snapshot(tree / "sm")
    ran = migrate("--write", tree)
    assert ran.returncode == 0, ran.stderr
    after = snapshot(tree / "sm")
    assert after.pop("torch_xla/distributed/vendor_launch.py") != before.pop("torch_xla/distributed/vendor_launch.py")
    assert after == before
    assert "xr.world_size()" in (tree / "train.py").read_text() and "xr.world_size()" in own.read_text()
    assert "a copy of torch_xla itself: the files its releases ship are left as they are:" in ran.stderr
    assert "sm/torch_xla/" in ran.stderr and "sm/torch_xla-1.10.0.dist-info/" in ran.stderr


def test_a_symbolic_link_loop_under_a_gitignore_does_not_crash(tree):
    (tree / ".gitignore").write_text("*.log\n")
    (tree / "loop").symlink_to(tree / "loop")
    (tree / "a").symlink_to(tree / "b")
    (tree / "b").symlink_to(tree / "a")
    ran = migrate("--check", tree)
    assert ran.returncode == 1, ran.stderr  # train.py would change; nothing crashed
    assert "Traceback" not in ran.stderr and "3 symbolic links" in ran.stderr
