"""`xrt2pjrt migrate` and `xrt2pjrt rules` as a user runs them, on real files on disk."""

from __future__ import annotations

import codecs
import json
import os
import stat
import subprocess
import time
from pathlib import Path

import pytest

from xrt2pjrt.registry import all_rules
from cli_runner import invoke

LEGACY = (
    "import torch_xla.core.xla_model as xm\n"
    "import torch_xla.distributed.xla_multiprocessing as xmp\n"
    "\n"
    "def _mp_fn(index):\n"
    "    print(xm.get_ordinal(), xm.xrt_world_size())\n"
    "    xm.save({}, '/tmp/x.pt')\n"
    "    print(torch.load('/tmp/x.pt'))\n"
    "\n"
    "xmp.spawn(_mp_fn, nprocs=8, start_method='fork')\n"
)
MIGRATED = (
    "import torch_xla.core.xla_model as xm\n"
    "import torch_xla.distributed.xla_multiprocessing as xmp\n"
    "import torch_xla.runtime as xr\n"
    "\n"
    "def _mp_fn(index):\n"
    "    print(xr.global_ordinal(), xr.world_size())\n"
    "    # TODO(xrt2pjrt): add xm.rendezvous('saved') for readers [manual-save-barrier]\n"
    "    xm.save({}, '/tmp/x.pt')\n"
    "    print(torch.load('/tmp/x.pt'))\n"
    "\n"
    "xmp.spawn(_mp_fn, start_method='fork')\n"
)
CLEAN = "import torch\n\nprint(torch.ones(2))\n"


def run(*args: str):
    return invoke([str(a) for a in args])


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(LEGACY)
    (tmp_path / "clean.py").write_text(CLEAN)
    return tmp_path


def _old_mtime(path: Path) -> int:
    past = time.time_ns() - 3_600 * 10**9
    os.utime(path, ns=(past, past))
    return path.stat().st_mtime_ns


def test_preview_shows_a_diff_and_writes_nothing(tree):
    result = run("migrate", tree)
    assert result.exit_code == 0
    assert "-    print(xm.get_ordinal(), xm.xrt_world_size())" in result.stdout
    assert "+    print(xr.global_ordinal(), xr.world_size())" in result.stdout
    assert "clean.py" not in result.stdout
    assert "would change" in result.stderr and "manual-save-barrier" in result.stderr
    assert (tree / "train.py").read_text() == LEGACY


def test_write_applies_atomically_keeps_mode_and_leaves_unchanged_files_alone(tree):
    train, clean = tree / "train.py", tree / "clean.py"
    train.chmod(0o750)
    clean_mtime = _old_mtime(clean)
    inode = train.stat().st_ino
    result = run("migrate", "--write", tree)
    assert result.exit_code == 0, result.stderr
    assert train.read_text() == MIGRATED
    assert stat.S_IMODE(train.stat().st_mode) == 0o750
    assert train.stat().st_ino != inode  # replaced by rename, never truncated in place
    assert clean.stat().st_mtime_ns == clean_mtime
    assert not [p for p in tree.iterdir() if p.name.startswith(".")]  # no temporary files left
    # A second run finds nothing to do and rewrites nothing.
    mtime = _old_mtime(train)
    assert run("migrate", "--write", tree).exit_code == 0
    assert train.stat().st_mtime_ns == mtime


def test_check_is_red_while_a_spot_is_open_and_green_once_settled(tree):
    """As `ruff check` fails on any open finding: the TODO line is a reminder, not a settlement."""
    assert run("migrate", "--check", tree).exit_code == 1
    assert (tree / "train.py").read_text() == LEGACY
    assert run("migrate", "--write", tree).exit_code == 0
    check = run("migrate", "--check", tree)
    assert check.exit_code == 1 and "decide [manual-save-barrier]" in check.stderr
    assert run("migrate", "--check", "--exit-zero", tree).exit_code == 0
    marker = "    # xrt2pjrt: ignore[manual-save-barrier]\n"
    settled = MIGRATED.replace(MIGRATED.splitlines(keepends=True)[6], marker)
    (tree / "train.py").write_text(settled)
    assert run("migrate", "--check", tree).exit_code == 0
    # the code fixed later (no save any more): the marker settles nothing, and says so
    (tree / "train.py").write_text(settled.replace("    xm.save({}, '/tmp/x.pt')\n", "    pass\n"))
    stale = run("migrate", "--check", tree)
    assert stale.exit_code == 1 and "decide [manual-unused-marker] remove this marker" in stale.stderr


@pytest.mark.parametrize(
    "bad_bytes, line",
    [
        (b"import torch_xla.core.xla_model as xm\n\ndef f(:\n    xm.get_ordinal()\n", 3),
        (b"import torch_xla.core.xla_model as xm\nx = 1\nname = '\xff\xfe'\n", 3),
    ],
)
def test_bad_file_is_reported_with_line_left_identical_and_others_still_processed(tree, bad_bytes, line):
    bad = tree / "broken.py"
    bad.write_bytes(bad_bytes)
    result = run("migrate", "--write", tree)
    assert result.exit_code == 2
    assert f"broken.py: error: line {line}" in result.stderr
    assert bad.read_bytes() == bad_bytes
    assert (tree / "train.py").read_text() == MIGRATED


def test_a_rewriter_bug_costs_one_file_not_the_run(tree, monkeypatch):
    """An exception of ours (simulated here: an AttributeError) is reported for its file,
    which stays as it is; every other file is still done."""
    from xrt2pjrt.python import rewriter as python

    real = python.rewrite

    def failing_on_one_file(text, options, **kwargs):
        if "buggy = " in text:
            raise AttributeError("'NoneType' object has no attribute 'value'")
        return real(text, options, **kwargs)

    monkeypatch.setattr(python, "rewrite", failing_on_one_file)
    buggy = tree / "buggy.py"
    buggy.write_text("import torch_xla.core.xla_model as xm\nbuggy = xm.get_ordinal()\n")
    result = run("migrate", "--write", tree)
    assert result.exit_code == 2
    assert "buggy.py: error: internal error of the python rewriter (AttributeError: " in result.stderr
    assert buggy.read_text() == "import torch_xla.core.xla_model as xm\nbuggy = xm.get_ordinal()\n"
    assert (tree / "train.py").read_text() == MIGRATED


def test_each_item_to_decide_is_one_line_of_output(tree):
    """FILE:LINE: lines are what editors and CI read; a quoted bash error spans several."""
    (tree / "README.md").write_text(
        "Run:\n\n```\nexport XRT_TPU_CONFIG=\"localservice;0;localhost:51011\"\nif true; then\n```\n"
    )
    result = run("migrate", tree)
    (line,) = [line for line in result.stderr.splitlines() if "README.md" in line]
    assert line.startswith(f"{tree / 'README.md'}:4:1: decide [env-shell-xrt-tpu-config] code block left as it was")
    assert "syntax error" in line
    assert all(out.startswith((str(tree), "To ")) or "files seen" in out for out in result.stderr.splitlines())


def test_lines_a_message_cites_are_those_of_the_file_as_written(tmp_path):
    # spawn-nprocs-expression quotes the uses it means, spawn-runtime-before names lines: after
    # --write the lines have moved (new imports, TODO lines) and the quoted use was rewritten
    (tmp_path / "train.py").write_text(
        "import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
        "NUM_CORES = 8\nDEVICE = xm.xla_device()\n\ndef _mp_fn(index):\n"
        "    sampler = DistributedSampler(data, num_replicas=NUM_CORES, rank=xm.get_ordinal())\n\n"
        "if __name__ == '__main__':\n    xmp.spawn(_mp_fn, nprocs=NUM_CORES)\n"
    )

    def decided(*options: str) -> list[str]:
        return [
            line.split(": decide ", 1)[1]
            for line in run("migrate", *options, tmp_path / "train.py").stderr.splitlines()
            if ": decide " in line
        ]

    preview, written, second = decided(), decided("--write"), decided()
    assert any(
        "(line 8: `sampler = DistributedSampler(data, num_replicas=NUM_CORES, rank=xm.get_ordinal())`)" in item
        for item in preview
    ) and any(item.endswith("spawned fn (line 5)") for item in preview)
    assert written == second  # the second pass reads the file as written, and says the same
    lines = (tmp_path / "train.py").read_text().splitlines()
    assert lines[8] == "    sampler = DistributedSampler(data, num_replicas=NUM_CORES, rank=xr.global_ordinal())"
    assert lines[5] == "DEVICE = torch_xla.device()"
    assert any(f"(line 9: `{lines[8].strip()}`)" in item for item in written)
    assert any(item.endswith("spawned fn (line 6)") for item in written)


def test_lines_of_a_notebooks_cell_a_message_cites_are_those_of_the_cell_as_written(tmp_path):
    source = [
        "import torch_xla.core.xla_model as xm\n",
        "import torch_xla.distributed.xla_multiprocessing as xmp\n",
        "NUM_CORES = 8\n",
        "DEVICE = xm.xla_device()\n",
        "def _mp_fn(index):\n",
        "    sampler = DistributedSampler(data, num_replicas=NUM_CORES, rank=xm.get_ordinal())\n",
        "xmp.spawn(_mp_fn, nprocs=NUM_CORES)\n",
    ]
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Train\n"]},
        {"cell_type": "code", "metadata": {}, "source": source, "outputs": [], "execution_count": None},
    ]
    (tmp_path / "train.ipynb").write_text(
        json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )

    def decided(*options: str) -> list[str]:
        return [
            line.split(": decide ", 1)[1]
            for line in run("migrate", *options, tmp_path / "train.ipynb").stderr.splitlines()
            if ": decide " in line
        ]

    preview, written, second = decided(), decided("--write"), decided()
    assert any(
        "(line 6 of cell 2: `sampler = DistributedSampler(data, num_replicas=NUM_CORES, rank=xm.get_ordinal())`)"
        in item
        for item in preview
    ) and any(item.endswith("(line 4 of cell 2)") for item in preview)
    assert written == second
    cell = "".join(json.loads((tmp_path / "train.ipynb").read_text())["cells"][1]["source"]).splitlines()
    device = cell.index("DEVICE = torch_xla.device()") + 1
    (sampler,) = [k + 1 for k, line in enumerate(cell) if "rank=xr.global_ordinal()" in line]
    assert (device, sampler) == (5, 7)  # a new import above them
    assert any(f"(line 7 of cell 2: `{cell[6].strip()}`)" in item for item in written)
    assert any(item.endswith("(line 5 of cell 2)") for item in written)


def test_a_todo_line_stays_an_item_where_a_second_pass_no_longer_reports_its_spot(tmp_path):
    """After --write, xm.xrt_world_size(4) is xr.world_size() under a TODO line about the
    dropped defval; a second pass sees nothing to report there. Its summary said "0 items
    to decide by hand", and --check passed, as if the migration were done."""
    (tmp_path / "a.py").write_text(
        "import torch_xla.core.xla_model as xm\n\nn = xm.xrt_world_size(4)\nsteps = 100 // n\n"
    )
    (tmp_path / "b.py").write_text(
        "# xrt2pjrt: skip-file\n# TODO(xrt2pjrt): the owner's own [api-ordinal]\nimport torch_xla\n"
    )
    (tmp_path / "README.md").write_text("Each decision gets a `# TODO(xrt2pjrt): ...` line.\n")  # prose: not one
    written = run("migrate", "--write", tmp_path, "--report", tmp_path.parent / "written.json")
    assert written.stderr.splitlines()[-2].endswith(
        "1 item to decide by hand, 1 TODO(xrt2pjrt) line in 1 file (grep -rn 'TODO(xrt2pjrt)' finds them)."
    )
    report = tmp_path.parent / "second.json"
    second = run("migrate", "--check", tmp_path, "--report", report)
    assert second.exit_code == 1
    assert f"{tmp_path / 'a.py'}:4:1: decide [api-world-size] check nothing relied on defval=" in second.stderr
    assert second.stderr.splitlines()[-2] == (
        "3 files seen, 0 would change (0 changes), 1 item to decide by hand, "
        "1 TODO(xrt2pjrt) line already in 1 file (grep -rn 'TODO(xrt2pjrt)' finds them)."
    )
    summary = json.loads(report.read_text())["summary"]
    assert (summary["manual"], summary["todo_lines"], summary["files_with_todo_lines"]) == (1, 1, 1)
    (tmp_path / "a.py").write_text(
        "import torch_xla.runtime as xr\n\nn = xr.world_size()\nsteps = 100 // n\n"
    )  # settled
    assert "TODO" not in run("migrate", tmp_path).stderr
    assert run("migrate", "--check", tmp_path).exit_code == 0


def test_json_report_shape(tree, tmp_path):
    (tree / "broken.py").write_bytes(b"import torch_xla\ndef f(:\n")
    report = tmp_path / "report.json"
    assert run("migrate", tree, "--report", report).exit_code == 2
    data = json.loads(report.read_text())
    assert set(data) == {"mode", "files", "summary"} and data["mode"] == "preview"
    by_path = {Path(f["path"]).name: f for f in data["files"]}
    assert set(by_path) == {"train.py", "broken.py"}  # files with nothing to say stay out
    train = by_path["train.py"]
    assert {"path", "changes", "manual", "error"} <= set(train)
    assert train["error"] is None
    for finding in train["changes"] + train["manual"]:
        assert set(finding) == {"rule", "range", "message", "fix", "detail"}
    assert {c["rule"] for c in train["changes"]} == {"api-ordinal", "api-world-size", "spawn-nprocs-literal"}
    assert [(m["rule"], m["range"]["start"]["line"]) for m in train["manual"]] == [("manual-save-barrier", 6)]
    assert by_path["broken.py"]["error"].startswith("line 2")
    assert by_path["broken.py"]["error_range"]["start"]["line"] == 2
    assert data["summary"]["files_seen"] == 3
    assert data["summary"]["files_failed"] == 1
    assert data["summary"]["manual"] == 1


def test_markdown_report(tree, tmp_path):
    report = tmp_path / "report.md"
    assert run("migrate", tree, "--report", report).exit_code == 0
    text = report.read_text()
    assert text.startswith("# xrt2pjrt migration report")
    assert "`manual-save-barrier`" in text and "line 6" in text


def test_select_and_ignore_take_prefixes(tree):
    result = run("migrate", "--write", "--select", "spawn", tree)
    assert result.exit_code == 0
    text = (tree / "train.py").read_text()
    assert "xmp.spawn(_mp_fn, start_method='fork')" in text and "xm.get_ordinal()" in text
    run("migrate", "--write", "--ignore", "api-", "--ignore", "manual", tree)
    assert "xm.get_ordinal()" in (tree / "train.py").read_text()
    assert "TODO" not in (tree / "train.py").read_text()
    result = run("migrate", "--select", "no-such-rule", tree)
    assert result.exit_code == 2 and "no rule id starts with" in result.stderr


def test_rules_json_lists_every_rule():
    result = run("rules", "--json")
    assert result.exit_code == 0
    rows = json.loads(result.stdout)
    assert [row["id"] for row in rows] == sorted(all_rules())
    for row in rows:
        assert set(row) == {"id", "family", "kind", "fix", "safe", "summary", "why", "example", "examples"}
        assert set(row["example"]) == {"before", "after"} and row["id"].startswith(row["family"] + "-")
        assert row["fix"] in ("safe", "unsafe", "none") and row["safe"] is (row["fix"] != "unsafe")
    assert {"spawn-nprocs-literal", "api-world-size", "env-xrt-tpu-config", "dist-init-method"} <= {
        r["id"] for r in rows
    }


@pytest.mark.parametrize(
    "name, raw",
    [
        ("crlf.py", LEGACY.replace("\n", "\r\n").encode()),
        ("bom.py", codecs.BOM_UTF8 + ("# café\n" + LEGACY).encode()),
        ("latin1.py", ("# -*- coding: latin-1 -*-\n# café\n" + LEGACY).encode("latin-1")),
    ],
)
def test_encoding_line_endings_and_bom_survive(tmp_path, name, raw):
    path = tmp_path / name
    path.write_bytes(raw)
    assert run("migrate", "--write", path).exit_code == 0
    data = path.read_bytes()
    assert data != raw
    if name == "crlf.py":
        assert data.count(b"\r\n") == data.count(b"\n") and MIGRATED.replace("\n", "\r\n").encode() == data
    elif name == "bom.py":
        assert data.startswith(codecs.BOM_UTF8) and data.count(codecs.BOM_UTF8) == 1
        assert data[3:].decode("utf-8") == "# café\n" + MIGRATED
    else:
        assert data.decode("latin-1") == "# -*- coding: latin-1 -*-\n# café\n" + MIGRATED


def test_parallel_jobs_give_the_same_result(tmp_path):
    trees = []
    for jobs in ("1", "4"):
        root = tmp_path / f"jobs{jobs}"
        root.mkdir()
        for i in range(24):  # enough files for the process pool to be used
            (root / f"m{i:02d}.py").write_text(LEGACY if i % 3 else CLEAN)
        report = tmp_path / f"report{jobs}.json"
        assert run("migrate", "--write", "--jobs", jobs, root, "--report", report).exit_code == 0
        trees.append(({p.name: p.read_text() for p in root.iterdir()}, json.loads(report.read_text())))
    (files_1, report_1), (files_4, report_4) = trees
    assert files_1 == files_4
    assert report_1["summary"] == report_4["summary"]
    assert [Path(f["path"]).name for f in report_1["files"]] == [Path(f["path"]).name for f in report_4["files"]]
    assert sum(text == MIGRATED for text in files_1.values()) == 16


def test_target_shim_points_imports_at_the_shim(tree):
    assert run("migrate", "--write", "--target", "shim", tree).exit_code == 0
    text = (tree / "train.py").read_text()
    assert text.startswith("import xrt2pjrt_shim.xla_model as xm\nimport xrt2pjrt_shim.xla_multiprocessing as xmp\n")
    assert "xm.get_ordinal(), xm.xrt_world_size()" in text and "nprocs=8" in text


def test_pre_commit_hook_runs_the_check(tree):
    import yaml

    hooks = yaml.safe_load((Path(__file__).parents[1] / ".pre-commit-hooks.yaml").read_text())
    (hook,) = [h for h in hooks if h["id"] == "xrt2pjrt"]
    program, *args = hook["entry"].split()
    assert program == "xrt2pjrt"
    # pre-commit appends the staged file names to the entry.
    assert run(*args, tree / "train.py").exit_code == 1
    assert run(*args, tree / "clean.py").exit_code == 0


def test_preview_of_a_relative_path_applies_with_git_apply(tree, monkeypatch):
    monkeypatch.chdir(tree)
    preview = run("migrate", "train.py").stdout
    assert preview.startswith("--- a/train.py\n+++ b/train.py\n")
    subprocess.run(["git", "apply", "-p1", "-"], input=preview, text=True, check=True, cwd=tree)
    assert (tree / "train.py").read_text() == MIGRATED


def test_preview_of_an_absolute_path_names_it_as_it_is(tree):
    preview = run("migrate", tree / "train.py").stdout
    assert preview.startswith(f"--- {tree / 'train.py'}\n")


@pytest.mark.parametrize(
    "source, item, cited",
    [
        # an import added in the block of the rewritten call it serves: 'line 2' named the import
        (
            "import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n"
            "n = xm.xrt_world_size()\nxmp.spawn(main, nprocs=8)\n",
            5,
            3,
        ),
        # two functions alike: the TODO line above the first spawn split it from its def, and the
        # item went to the second function's spawn
        (
            "import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n"
            "n = xm.xrt_world_size()\ndef main(index):\n    xmp.spawn(main, nprocs=8)\ndef main(index):\n"
            "    xmp.spawn(main, nprocs=8)\n",
            6,
            3,
        ),
    ],
)
def test_an_item_and_the_lines_it_cites_are_placed_in_the_file_as_written(tmp_path, source, item, cited):
    (tmp_path / "t.py").write_text(source)
    written = run("migrate", "--write", tmp_path / "t.py").stderr
    (decided,) = [line for line in written.splitlines() if "decide [spawn-runtime-before]" in line]
    lines = (tmp_path / "t.py").read_text().splitlines()
    assert decided.split(":")[1] == str(item) and lines[item - 1].lstrip().startswith("xmp.spawn(")
    assert decided.endswith(f"(line {cited})") and lines[cited - 1] == "n = xr.world_size()"
    assert decided.split(": decide ")[1] in run("migrate", tmp_path / "t.py").stderr  # a second pass says the same


def test_files_a_gitignore_passes_over_are_named_not_skipped_without_a_word(tmp_path):
    """catalyst ignores '*.ipynb' and commits XLA_ddp.ipynb, which calls xmp.spawn(nprocs=8):
    the run said 'no files found' and --check passed."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("*.ipynb\n*.log\nbuild/\n")
    cell = {
        "cell_type": "code",
        "metadata": {},
        "outputs": [],
        "execution_count": None,
        "source": ["import torch_xla.distributed.xla_multiprocessing as xmp\n", "xmp.spawn(f, nprocs=8)\n"],
    }
    (tmp_path / "XLA_ddp.ipynb").write_text(
        json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    (tmp_path / "run.log").write_text("not a kind any rewriter reads\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "t.py").write_text(LEGACY)  # an ignored folder is not walked, as git would not
    (tmp_path / "train.py").write_text(CLEAN)
    ran = run("migrate", "--check", tmp_path)
    assert ran.exit_code == 0
    assert (
        f"XRT-era words in ignored files, not migrated: {tmp_path / 'XLA_ddp.ipynb'} (name a file to migrate it)"
    ) in ran.stderr
    assert ran.stderr.endswith("1 skipped as ignored.\n")  # build/ is skipped as build output, not counted
    assert run("migrate", "--check", tmp_path / "XLA_ddp.ipynb").exit_code == 1  # named, it is migrated
