"""The command line around the engine, as a user runs it: `python -m xrt2pjrt` in a real
subprocess on real files. Version and help, configuration, exclusions, output formats,
what the text output names and counts, colour, -q/-v, progress, stdin, pre-commit."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from test_migrate_cli import LEGACY  # the XRT-era program of the migrate tests
from xrt2pjrt import __version__

ROOT = Path(__file__).resolve().parent.parent
SHELL = 'export XRT_TPU_CONFIG="localservice;0;localhost:51011"\npython3 train.py\n'
# Only an item to decide: the file gains a TODO line and nothing else.
TODO_ONLY = (
    "import torch_xla.core.xla_model as xm\n\ndef save(m):\n    xm.save(m, '/tmp/m.pt')\n"
    "    return torch.load('/tmp/m.pt')\n"
)


def xrt2pjrt(*args, cwd: Path, env: dict | None = None, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("XRT_", "PJRT_", "NO_COLOR", "FORCE_COLOR"))}
    ran = subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", *map(str, args)],
        cwd=cwd,
        env={**clean, **(env or {})},
        input=stdin,
        capture_output=True,
        timeout=300,
    )
    return subprocess.CompletedProcess(ran.args, ran.returncode, ran.stdout.decode(), ran.stderr.decode())


@pytest.fixture
def tree(tmp_path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "train.py").write_text(LEGACY)
    (root / "run.sh").write_text(SHELL)
    return root


# --- version and help --------------------------------------------------------------------


def test_version(tmp_path):
    ran = xrt2pjrt("--version", cwd=tmp_path)
    assert ran.returncode == 0 and ran.stdout == f"xrt2pjrt {__version__}\n"


COMMANDS = ["migrate", "rules", "guide", "launch", "doctor", "verify", "run"]


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_names_values_not_types_and_fits_80_columns(tmp_path, command):
    ran = xrt2pjrt(*([command] if command else []), "--help", cwd=tmp_path, env={"COLUMNS": "200"})
    assert ran.returncode == 0, ran.stderr
    for typed in ("<bool>", "<str>", "<int", "<path>", "<list[", "{"):
        assert typed not in ran.stdout, (typed, ran.stdout)
    assert max(map(len, ran.stdout.splitlines())) <= 80
    if command == "migrate":
        assert "Usage: xrt2pjrt migrate [OPTIONS] [PATH...]" in ran.stdout and "--select RULES" in ran.stdout
    if command is None:
        assert all(f"  {name} " in ran.stdout for name in COMMANDS)


# --- configuration -------------------------------------------------------------------------


def _pyproject(folder: Path, table: str) -> Path:
    path = folder / "pyproject.toml"
    path.write_text("[project]\nname = 'x'\n\n" + textwrap.dedent(table))
    return path


def test_pyproject_table_is_found_from_a_subfolder_and_applied(tree):
    _pyproject(tree, '[tool.xrt2pjrt]\nselect = ["env"]\n')
    sub = tree / "scripts"
    sub.mkdir()
    (sub / "pyproject.toml").write_text("[project]\nname = 'y'\n")  # no table: passed over, as ruff does
    (sub / "run.sh").write_text(SHELL)
    ran = xrt2pjrt("migrate", "--write", ".", cwd=sub)
    assert ran.returncode == 0, ran.stderr
    assert "PJRT_DEVICE=TPU" in (sub / "run.sh").read_text()
    ran = xrt2pjrt("migrate", "--write", "-v", ".", cwd=tree)
    assert f"configuration: {tree / 'pyproject.toml'}" in ran.stderr
    assert (tree / "train.py").read_text() == LEGACY  # only env was selected


def test_command_line_wins_over_the_configuration(tree):
    _pyproject(tree, '[tool.xrt2pjrt]\nselect = ["env"]\nignore = ["manual"]\ntarget = "shim"\n')
    ran = xrt2pjrt("migrate", "--write", "--select", "api,spawn,manual", "--target", "native", ".", cwd=tree)
    assert ran.returncode == 0, ran.stderr
    text = (tree / "train.py").read_text()
    assert "xr.global_ordinal()" in text and "nprocs" not in text  # native target, the CLI's selection
    assert "TODO" not in text  # ... less the configured ignore
    assert "XRT_TPU_CONFIG" in (tree / "run.sh").read_text()


def test_per_file_ignores_and_excludes_from_the_configuration(tree):
    _pyproject(
        tree,
        """\
        [tool.xrt2pjrt]
        extend-exclude = ["vendor/"]
        target-version = "2.5"

        [tool.xrt2pjrt.per-file-ignores]
        "legacy/*.py" = ["api", "manual"]
        """,
    )
    for folder in ("legacy", "vendor"):
        (tree / folder).mkdir()
        (tree / folder / "old.py").write_text(LEGACY)
    ran = xrt2pjrt("migrate", "--write", ".", cwd=tree)
    assert ran.returncode == 0, ran.stderr
    legacy = (tree / "legacy" / "old.py").read_text()
    assert "xm.get_ordinal()" in legacy and "nprocs" not in legacy and "TODO" not in legacy
    assert (tree / "vendor" / "old.py").read_text() == LEGACY
    assert "xr.global_ordinal()" in (tree / "train.py").read_text()


def test_config_option_reads_a_toml_file_of_its_own(tree, tmp_path):
    config = tmp_path / "xrt2pjrt.toml"
    config.write_text('select = ["spawn"]\n')
    ran = xrt2pjrt("migrate", "--write", "--config", config, ".", cwd=tree)
    assert ran.returncode == 0, ran.stderr
    text = (tree / "train.py").read_text()
    assert "nprocs" not in text and "xm.get_ordinal()" in text


@pytest.mark.parametrize(
    "table, problem",
    [
        ('selct = ["env"]\n', "unknown key 'selct'"),
        ('select = "env"\n', "select: must be a list of strings"),
        ('select = ["no-such-family"]\n', "select: no rule id starts with 'no-such-family'"),
        ('target = "jax"\n', "target: must be one of 'native', 'shim'"),
        ("target-version = 2.9\n", 'target-version: must be a string such as "2.9"'),
        ('target-version = "1.13"\n', "target-version: must be one of 2.1"),
        ('[tool.xrt2pjrt.per-file-ignores]\n"a.py" = "api"\n', "per-file-ignores 'a.py': must be a list of rule ids"),
    ],
)
def test_a_bad_configuration_is_an_error_naming_the_file(tree, table, problem):
    path = _pyproject(tree, "[tool.xrt2pjrt]\n" + table)
    ran = xrt2pjrt("migrate", "--write", ".", cwd=tree)
    assert ran.returncode == 2
    assert str(path) in ran.stderr and problem in ran.stderr, ran.stderr
    assert (tree / "train.py").read_text() == LEGACY


def test_invalid_toml_is_an_error_naming_the_file(tree):
    path = tree / "pyproject.toml"
    path.write_text("[tool.xrt2pjrt\nselect = 1\n")
    ran = xrt2pjrt("migrate", ".", cwd=tree)
    assert ran.returncode == 2 and f"{path}: not valid TOML" in ran.stderr


# --- exclusions ----------------------------------------------------------------------------


def test_exclude_and_extend_exclude_take_gitignore_patterns(tree):
    for name in ("build/gen.py", "third_party/lib/x.py", "keep/x.py"):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(LEGACY)
    ran = xrt2pjrt("migrate", "--check", "--extend-exclude", "third_party/", "--extend-exclude", "*.sh", ".", cwd=tree)
    named = {line.split(":")[0] for line in ran.stderr.splitlines() if ": would change" in line}
    assert named == {"train.py", "keep/x.py"}  # build/ is out by default
    ran = xrt2pjrt("migrate", "--check", "--exclude", "keep", ".", cwd=tree)
    named = {line.split(":")[0] for line in ran.stderr.splitlines() if ": would change" in line}
    assert named == {"train.py", "run.sh", "build/gen.py", "third_party/lib/x.py"}  # the defaults replaced


def test_force_exclude_applies_the_exclusions_to_files_named(tree):
    (tree / "vendor").mkdir()
    (tree / "vendor" / "x.py").write_text(LEGACY)
    named = xrt2pjrt("migrate", "--check", "--extend-exclude", "vendor/", "vendor/x.py", cwd=tree)
    assert named.returncode == 1  # a file named is taken ...
    forced = xrt2pjrt("migrate", "--check", "--extend-exclude", "vendor/", "--force-exclude", "vendor/x.py", cwd=tree)
    assert forced.returncode == 0  # ... unless the exclusions are forced (pre-commit names every file)


# --- inline suppression --------------------------------------------------------------------


SUPPRESSED = {
    "keep.py": (
        "import torch_xla.core.xla_model as xm\n"
        "import torch_xla.distributed.xla_multiprocessing as xmp\n"
        "def f(index):\n"
        "    a = xm.get_ordinal()  # xrt2pjrt: ignore\n"
        "    b = xm.get_ordinal()\n"
        "    c = xm.xrt_world_size()  # xrt2pjrt: ignore[spawn]\n"
        "    xm.save({}, 'x')  # xrt2pjrt: ignore[manual]\n"
        "xmp.spawn(\n"
        "    f,\n"
        "    nprocs=8,  # xrt2pjrt: ignore[spawn-nprocs-literal]\n"
        ")\n",
        [
            "    a = xm.get_ordinal()  # xrt2pjrt: ignore\n",
            "    b = xr.global_ordinal()\n",
            "    c = xr.world_size()  # xrt2pjrt: ignore[spawn]\n",
            "    nprocs=8,  # xrt2pjrt: ignore[spawn-nprocs-literal]\n",
            "    xm.save({}, 'x')  # xrt2pjrt: ignore[manual]\n",
        ],
    ),
    "run.sh": (
        'export XRT_TPU_CONFIG="localservice;0;localhost:51011"  # xrt2pjrt: ignore[env]\n'
        "XRT_TPU_CONFIG=x \\\n  python3 train.py  # xrt2pjrt: ignore\n"
        'export XRT_TPU_CONFIG="localservice;0;localhost:51011"\n',
        [
            'export XRT_TPU_CONFIG="localservice;0;localhost:51011"  # xrt2pjrt: ignore[env]\n',
            "XRT_TPU_CONFIG=x \\\n  python3 train.py  # xrt2pjrt: ignore\n",
            "export PJRT_DEVICE=TPU\n",
        ],
    ),
    "Dockerfile": (
        "FROM python:3.11\nENV XRT_TPU_CONFIG=a  # xrt2pjrt: ignore[shell-env-xrt-tpu-config]\n"
        "ENV XRT_START_LOCAL_SERVER=1\n",
        ["ENV XRT_TPU_CONFIG=a  # xrt2pjrt: ignore[shell-env-xrt-tpu-config]\n"],
    ),
    "job.yaml": (
        "env:\n  - name: XRT_TPU_CONFIG  # xrt2pjrt: ignore\n    value: x\n  - name: XRT_WORKERS\n    value: y\n",
        ["  - name: XRT_TPU_CONFIG  # xrt2pjrt: ignore\n    value: x\n"],
    ),
    "skipped.py": ("# xrt2pjrt: skip-file\n" + LEGACY, ["# xrt2pjrt: skip-file\n" + LEGACY]),
}


def test_suppression_comments_keep_what_they_mark_in_every_file_kind(tmp_path):
    for name, (text, _) in SUPPRESSED.items():
        (tmp_path / name).write_text(text)
    ran = xrt2pjrt("migrate", "--write", ".", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    for name, (_, kept) in SUPPRESSED.items():
        text = (tmp_path / name).read_text()
        for piece in kept:
            assert piece in text, (name, piece, text)
    assert "XRT_START_LOCAL_SERVER" not in (tmp_path / "Dockerfile").read_text()
    assert "XRT_WORKERS" not in (tmp_path / "job.yaml").read_text()
    assert "TODO" not in (tmp_path / "keep.py").read_text()
    # What is kept stays kept: nothing is pending afterwards; but a marker that keeps nothing
    # off (no spawn rule speaks of world_size, no manual one of a save never loaded) is an item.
    check = xrt2pjrt("migrate", "--check", ".", cwd=tmp_path)
    assert check.returncode == 1 and "0 would change (0 changes)" in check.stderr
    assert [line.split(": decide ")[0] for line in check.stderr.splitlines() if "manual-unused-marker" in line] == [
        "keep.py:7:5",
        "keep.py:8:5",
    ]
    assert "skipped.py: skipped" in xrt2pjrt("migrate", "-v", ".", cwd=tmp_path).stderr


# --- output formats ------------------------------------------------------------------------


def _counts(tree: Path) -> int:
    data = json.loads(xrt2pjrt("migrate", "--output-format", "json", ".", cwd=tree).stdout)
    return sum(len(f["changes"]) + len(f["manual"]) for f in data["files"])


def test_json_on_stdout_places_every_item(tree):
    ran = xrt2pjrt("migrate", "--output-format", "json", ".", cwd=tree)
    data = json.loads(ran.stdout)  # stdout holds the document alone
    assert data["mode"] == "preview" and data["summary"]["files_changed"] == 2
    by_path = {f["path"]: f for f in data["files"]}
    change = next(c for c in by_path["train.py"]["changes"] if c["rule"] == "api-ordinal")
    assert change["range"] == {
        "start": {"line": 5, "column": 5},
        "end": {"line": 5, "column": len(LEGACY.splitlines()[4]) + 1},
    }
    assert change["fix"] == {"safety": "safe", "applied": True}
    (decide,) = by_path["train.py"]["manual"]
    assert (decide["rule"], decide["range"]["start"]) == ("manual-save-barrier", {"line": 6, "column": 5})


def test_github_annotations_one_per_change_and_decision(tree):
    ran = xrt2pjrt("migrate", "--output-format", "github", ".", cwd=tree)
    assert ran.stderr.splitlines() == ["2 files seen, 2 would change (4 changes), 1 item to decide by hand."]
    lines = ran.stdout.splitlines()
    assert len(lines) == _counts(tree)
    pattern = re.compile(
        r"^::(warning|notice|error) file=[^,]+,line=\d+,col=\d+,endLine=\d+,endColumn=\d+,"
        r"title=xrt2pjrt [a-z0-9.-]+::(would change|decide by hand): .+$"
    )
    assert all(pattern.match(line) for line in lines), lines
    assert (
        "::warning file=train.py,line=6,col=5,endLine=6,endColumn=29,title=xrt2pjrt manual-save-barrier::"
        "decide by hand: add xm.rendezvous('saved')" in ran.stdout
    )


def _check_sarif(document: dict) -> list[dict]:
    """The fields SARIF 2.1.0 requires, and the consistency of what refers to what."""
    assert document["version"] == "2.1.0" and document["$schema"].endswith("sarif-2.1.0.json")
    (run,) = document["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "xrt2pjrt" and driver["version"] == __version__
    rule_ids = [rule["id"] for rule in driver["rules"]]
    assert all(rule["shortDescription"]["text"] for rule in driver["rules"])
    for result in run["results"]:
        assert result["message"]["text"]
        assert result["level"] in ("none", "note", "warning", "error")
        assert rule_ids[result["ruleIndex"]] == result["ruleId"]
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"]["uri"] and "\\" not in physical["artifactLocation"]["uri"]
        region = physical["region"]
        assert region["startLine"] >= 1 and region["startColumn"] >= 1
        assert (region["endLine"], region["endColumn"]) >= (region["startLine"], region["startColumn"])
    for invocation in run["invocations"]:
        assert isinstance(invocation["executionSuccessful"], bool)
    return run["results"]


def test_sarif_is_sarif_2_1_0(tree):
    (tree / "broken.py").write_text("import torch_xla\ndef f(:\n")
    ran = xrt2pjrt("migrate", "--output-format", "sarif", ".", cwd=tree)
    assert ran.returncode == 2
    document = json.loads(ran.stdout)
    results = _check_sarif(document)
    assert len(results) == _counts(tree)
    (invocation,) = document["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    (notification,) = invocation["toolExecutionNotifications"]
    assert (
        notification["level"] == "error"
        and notification["locations"][0]["physicalLocation"]["region"]["startLine"] == 2
    )


# --- what the text output names and counts ----------------------------------------------------


def test_check_and_write_name_the_files_and_say_how_to_fix(tree):
    (tree / "clean.py").write_text("print(1)\n")
    check = xrt2pjrt("migrate", "--check", ".", cwd=tree)
    assert check.returncode == 1
    assert "train.py: would change (3 changes, 1 item to decide)" in check.stderr
    assert "run.sh: would change (1 change)" in check.stderr and "clean.py" not in check.stderr
    assert "To apply them: xrt2pjrt migrate --write .\n" in check.stderr  # the same command, to paste
    write = xrt2pjrt("migrate", "--write", ".", cwd=tree)
    assert "train.py: changed (3 changes, 1 item to decide)" in write.stderr
    assert write.stderr.splitlines()[-2].endswith(
        "3 files seen, 2 changed (4 changes), 1 item to decide by hand, "
        "1 TODO(xrt2pjrt) line in 1 file (grep -rn 'TODO(xrt2pjrt)' finds them)."
    )
    assert write.stderr.splitlines()[-1].startswith("To settle a spot to decide: ")


def test_decide_lines_come_with_their_file_and_the_line_as_written(tree):
    preview = xrt2pjrt("migrate", ".", cwd=tree).stderr.splitlines()
    at = preview.index("train.py: would change (3 changes, 1 item to decide)")
    assert preview[at + 1].startswith("train.py:6:5: decide [manual-save-barrier]")
    write = xrt2pjrt("migrate", "--write", ".", cwd=tree).stderr
    (line,) = [line for line in write.splitlines() if "decide [manual-save-barrier]" in line]
    number = int(line.split(":")[1])
    written = (tree / "train.py").read_text().splitlines()
    assert written[number - 1].strip() == "xm.save({}, '/tmp/x.pt')"  # the statement, below its TODO
    assert "TODO(xrt2pjrt)" in written[number - 2]


def test_counts_say_what_they_mean(tmp_path):
    (tmp_path / "save.py").write_text(TODO_ONLY)
    preview = xrt2pjrt("migrate", ".", "--report", tmp_path / "r.md", cwd=tmp_path)
    assert "save.py: would gain TODO lines only (1 item to decide)" in preview.stderr
    assert (
        "1 file seen, 0 would change (0 changes), 1 would gain TODO lines only, 1 item to decide by hand.\n"
        "To apply them: xrt2pjrt migrate --write . --report " in preview.stderr
    )
    markdown = (tmp_path / "r.md").read_text()
    assert "would change" in markdown.lower() and "changed" not in markdown.replace("unchanged", "")
    write = xrt2pjrt("migrate", "--write", "save.py", cwd=tmp_path)
    assert "save.py: gained TODO lines only" in write.stderr and "1 gained TODO lines only" in write.stderr


def test_statistics_count_changes_and_items_by_family_and_rule(tree):
    ran = xrt2pjrt("migrate", "--statistics", ".", cwd=tree)
    assert ran.returncode == 0 and "---" not in ran.stdout  # the counts instead of the diff
    rows = {line.split()[0]: line.split()[1:] for line in ran.stdout.splitlines()[1:]}
    assert ran.stdout.splitlines()[0].split() == ["changes", "items"]
    assert rows["api"] == ["2", "0"] and rows["api-ordinal"] == ["1", "0"]
    assert rows["manual"] == ["0", "1"] and rows["manual-save-barrier"] == ["0", "1"]
    assert rows["total"] == ["4", "1"]
    assert list(rows).index("api") < list(rows).index("env") < list(rows).index("manual")  # the checklist's order
    assert "decide [" not in ran.stderr and "1 item to decide by hand" in ran.stderr


def test_a_change_says_what_it_does_not_keep_and_an_item_the_line_to_use(tmp_path):
    (tmp_path / "pod.sh").write_text("python3 -m torch_xla.distributed.xla_dist --tpu=pod -- python3 train.py\n")
    (tmp_path / "Dockerfile").write_text("FROM gcr.io/tpu-pytorch/xla:r1.13_3.8_tpuvm\n")
    ran = xrt2pjrt("migrate", ".", cwd=tmp_path)
    lines = ran.stderr.splitlines()
    assert (
        "pod.sh:1:1: note [launch-xla-dist] gcloud neither waits for a healthy TPU nor restarts after "
        "maintenance, as xla_dist did (50 tries): `xrt2pjrt launch` does (--launcher xrt2pjrt)" in lines
    )
    at = lines.index("Dockerfile:1:1: decide [install-xrt-era-release] use an xla:r2.9.0_* image instead")
    assert lines[at + 1] == "    use: us-central1-docker.pkg.dev/tpu-pytorch-releases/docker/xla:r2.9.0_3.10_tpuvm"
    document = json.loads(xrt2pjrt("migrate", "--output-format", "json", ".", cwd=tmp_path).stdout)
    by_path = {f["path"]: f for f in document["files"]}
    assert by_path["Dockerfile"]["manual"][0]["use"].endswith("/xla:r2.9.0_3.10_tpuvm")
    assert "restarts after maintenance" in by_path["pod.sh"]["changes"][0]["caveat"]
    # what xrt2pjrt launch keeps needs no note
    kept = xrt2pjrt("migrate", "--launcher", "xrt2pjrt", "pod.sh", cwd=tmp_path)
    assert "note [" not in kept.stderr and "+xrt2pjrt launch --tpu=pod -- python3 train.py" in kept.stdout


def test_no_files_found_is_said_plainly(tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    ran = xrt2pjrt("migrate", "--check", ".", cwd=tmp_path)
    assert ran.returncode == 0  # as ruff: nothing to check is no failure, but it is said
    assert "no files found in ." in ran.stderr and "files seen" not in ran.stderr


# --- terminal --------------------------------------------------------------------------------


ESC = "\033["


@pytest.mark.parametrize(
    "env, flags, colored",
    [
        ({}, (), False),  # a pipe
        ({"FORCE_COLOR": "1"}, (), True),
        ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, (), False),
        ({"NO_COLOR": "1"}, ("--color", "always"), True),
        ({"FORCE_COLOR": "1"}, ("--color", "never"), False),
    ],
)
def test_color_follows_no_color_force_color_and_the_option(tree, env, flags, colored):
    ran = xrt2pjrt("migrate", *flags, ".", cwd=tree, env=env)
    assert (ESC in ran.stdout) is colored and (ESC in ran.stderr) is colored


def test_quiet_and_verbose(tree):
    quiet = xrt2pjrt("migrate", "-q", ".", cwd=tree)
    assert quiet.stderr.splitlines() == [line for line in quiet.stderr.splitlines() if ": decide [" in line]
    assert len(quiet.stderr.splitlines()) == 1
    verbose = xrt2pjrt("migrate", "-v", ".", cwd=tree)
    assert "train.py:5:5: change [api-ordinal]" in verbose.stderr
    assert "configuration: none found" in verbose.stderr and re.search(r"2 files in \d+\.\d\d s", verbose.stderr)
    # --check -q fails naming the files, never in silence
    (tree / "train.py").write_text("import torch_xla.core.xla_model as xm\nxm.mark_step()\n")
    quiet_check = xrt2pjrt("migrate", "--check", "-q", ".", cwd=tree)
    assert quiet_check.returncode == 1
    assert quiet_check.stderr.splitlines() == ["run.sh: would change (1 change)", "train.py: would change (1 change)"]


def test_progress_shows_on_a_terminal_only(tmp_path):
    for n in range(120):
        (tmp_path / f"m{n}.py").write_text("print(1)\n")
    controller, terminal = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NO_COLOR", "FORCE_COLOR"))}
    done = subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", "migrate", "-j", "1", "."],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=terminal,
        timeout=300,
    )
    os.close(terminal)
    seen = b""
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(controller)
    assert done.returncode == 0
    assert b"\r120/120 files" in seen and b"\r\x1b[K" in seen
    piped = xrt2pjrt("migrate", "-j", "1", ".", cwd=tmp_path)
    assert "/120 files" not in piped.stderr


# --- stdin -----------------------------------------------------------------------------------


def test_stdin_preview_write_and_check(tmp_path):
    _pyproject(tmp_path, '[tool.xrt2pjrt]\nignore = ["manual"]\n')
    (tmp_path / "src").mkdir()
    preview = xrt2pjrt("migrate", "-", "--stdin-filename", "src/train.py", cwd=tmp_path, stdin=LEGACY.encode())
    assert preview.returncode == 0
    assert preview.stdout.startswith("--- a/src/train.py\n+++ b/src/train.py\n")
    write = xrt2pjrt("migrate", "-", "--stdin-filename", "src/train.py", "--write", cwd=tmp_path, stdin=LEGACY.encode())
    assert write.returncode == 0 and "xr.global_ordinal()" in write.stdout
    assert "TODO" not in write.stdout  # the configuration of the stdin file's folder applies
    assert not (tmp_path / "src" / "train.py").exists()  # stdin is never written to disk
    check = xrt2pjrt("migrate", "-", "--stdin-filename", "src/train.py", "--check", cwd=tmp_path, stdin=LEGACY.encode())
    assert check.returncode == 1
    unchanged = xrt2pjrt("migrate", "-", "--stdin-filename", "a.sh", "--write", cwd=tmp_path, stdin=b"echo hi\r\n")
    assert unchanged.returncode == 0 and unchanged.stdout == "echo hi\r\n"
    missing = xrt2pjrt("migrate", "-", cwd=tmp_path, stdin=b"")
    assert missing.returncode == 2 and "--stdin-filename" in missing.stderr


# --- pre-commit ------------------------------------------------------------------------------


def _hook(hook_id: str) -> list[str]:
    hooks = {hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    words = shlex.split(hooks[hook_id]["entry"])
    assert words[0] == "xrt2pjrt"
    return words[1:]


def test_pre_commit_hooks_check_then_fix(tree):
    # pre-commit runs the entry with the names of the files being committed.
    check = xrt2pjrt(*_hook("xrt2pjrt"), "train.py", "run.sh", cwd=tree)
    assert check.returncode == 1
    assert "train.py: would change" in check.stderr
    assert "To apply them: xrt2pjrt migrate --write --force-exclude train.py run.sh" in check.stderr
    fix = xrt2pjrt(*_hook("xrt2pjrt-fix"), "train.py", "run.sh", cwd=tree)
    assert fix.returncode == 0 and (tree / "train.py").read_text() != LEGACY
    # the spot to decide it marked keeps the commit out until it is settled
    still = xrt2pjrt(*_hook("xrt2pjrt"), "train.py", "run.sh", cwd=tree)
    assert still.returncode == 1 and "decide [manual-save-barrier]" in still.stderr
    train = tree / "train.py"
    train.write_text(re.sub(r"# TODO\(xrt2pjrt\): .* \[(.*)\]", r"# xrt2pjrt: ignore[\1]", train.read_text()))
    assert xrt2pjrt(*_hook("xrt2pjrt"), "train.py", "run.sh", cwd=tree).returncode == 0


def test_guide_command_prints_the_guide_of_this_checkout(tmp_path):
    where = xrt2pjrt("guide", "--path", cwd=tmp_path)
    assert where.returncode == 0 and Path(where.stdout.strip()) == ROOT / "docs" / "MIGRATION.md"
    shown = xrt2pjrt("guide", cwd=tmp_path)
    assert shown.stdout == (ROOT / "docs" / "MIGRATION.md").read_text(encoding="utf-8")


F_SETPIPE_SZ = 1031  # Linux's fcntl: the size of a pipe's buffer


@pytest.mark.parametrize("args", [("migrate", "--report", "{report}", "{tree}"), ("rules",)], ids=lambda a: a[0])
def test_a_reader_that_leaves_early_ends_no_run(tmp_path, args):
    """`xrt2pjrt migrate . | head -1`: more output than the pipe holds (a pipe of one page),
    a reader that stops after one line. No traceback; the run ends as it would have (exit 0
    for a preview, the report written)."""
    tree = tmp_path / "project"
    tree.mkdir()
    for k in range(20):
        (tree / f"train_{k}.py").write_text(LEGACY)
    report_file = tmp_path / "report.json"
    argv = [a.format(report=report_file, tree=tree) for a in args]
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, F_SETPIPE_SZ, 4096)
    with open(tmp_path / "stderr", "wb") as stderr:
        ran = subprocess.Popen([sys.executable, "-m", "xrt2pjrt", *argv], cwd=tmp_path, stdout=write_end, stderr=stderr)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as reader:
            assert reader.readline()
        assert ran.wait(timeout=300) == 0
    said = (tmp_path / "stderr").read_text()
    assert "Traceback" not in said and "BrokenPipe" not in said, said[-2000:]
    if "--report" in args:
        assert len(json.loads(report_file.read_text())["files"]) == 20
