"""The results cache (xrt2pjrt/cache.py): a rerun over unchanged files parses none of them
and reports what the first run did; a change to a file, an option or the tool is a miss; an
entry that is not whole and well-formed is a miss; runs that share the folder at once both
finish; --no-cache writes nothing there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cli_runner import invoke
from xrt2pjrt import cache, codemod, width
from xrt2pjrt.registry import Options, Selection

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "legacy_mnist"
NOTEBOOK = {
    "cells": [
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "source": [
                "!pip install cloud-tpu-client==0.10\n",
                "import torch_xla.core.xla_model as xm\n",
                "n = xm.xrt_world_size()\n",
            ],
        }
    ],
    "metadata": {},
    "nbformat": 4,
    "nbformat_minor": 5,
}
FILES = ("Dockerfile", "README.md", "kernel.ipynb", "run_pod.sh", "train.py")  # each one rewritten


@pytest.fixture
def tree(tmp_path):
    """An XRT-era project: the example's script, launcher, Dockerfile and README, a notebook."""
    project = tmp_path / "project"
    shutil.copytree(EXAMPLE, project)
    (project / "kernel.ipynb").write_text(json.dumps(NOTEBOOK))
    return project


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """The cache folder of these tests' runs (the suite's conftest turns the cache off)."""
    monkeypatch.delenv(cache.OFF_ENV, raising=False)
    monkeypatch.setenv(cache.ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def rewrites(monkeypatch):
    """The paths of the files rewritten (parsed) since the last ``clear()``."""
    seen = []
    real = codemod._rewrite

    def counted(job, options):
        seen.append(job.path.name)
        return real(job, options)

    monkeypatch.setattr(codemod, "_rewrite", counted)
    return seen


def migrate(*args) -> tuple[int, dict]:
    ran = invoke(["migrate", "--jobs", "1", "--output-format", "json", *args])
    return ran.exit_code, json.loads(ran.stdout)


def entries(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".tmp-"))


def rewrite_entries(folder: Path) -> list[Path]:
    """The entries of rewrites, not of what code_trees.py asks of the files that use torch_xla."""
    return [p for p in entries(folder) if b'"needs": [' not in p.read_bytes()]


def test_a_rerun_parses_nothing_and_reports_what_the_first_run_did(tree, folder, rewrites):
    first = migrate(tree)
    assert sorted(rewrites) == sorted(FILES)
    assert len(rewrite_entries(folder)) == len(FILES)
    rewrites.clear()
    assert migrate(tree) == first and rewrites == []
    assert invoke(["migrate", "--check", tree]).exit_code == 1 and rewrites == []  # pending changes, still said


def test_a_rerun_imports_no_rule_nor_libcst(tree, folder):
    """What code_trees.py asks of each file's code (the oldest release its migrated code
    needs, which every rule answers) is kept too: an unchanged rerun loads no rule."""
    listing = folder.parent / "modules.json"
    code = (
        "import json, sys\nfrom xrt2pjrt.cli import main\n"
        f"code = main(['migrate', '--check', {str(tree)!r}])\n"
        f"open({str(listing)!r}, 'w').write(json.dumps(sorted(sys.modules)))\nsys.exit(code)\n"
    )
    env = {**os.environ, cache.ENV: str(folder)}
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env) for _ in range(2)]
    assert [run.returncode for run in runs] == [1, 1] and runs[0].stdout == runs[1].stdout
    modules = set(json.loads(listing.read_text()))
    assert not {m for m in modules if m.split(".")[0] == "libcst" or m.startswith("xrt2pjrt.rules.")}


def test_a_kept_need_is_the_computed_one_and_a_spoiled_one_is_computed_again(folder):
    store, options = cache.Cache(folder), Options(Selection())
    assert store.needs(b"head", options, lambda: (2, 5)) == (2, 5)
    assert store.needs(b"head", options, lambda: (9, 9)) == (2, 5)  # kept
    (entry,) = entries(folder)
    entry.write_bytes(entry.read_bytes().replace(b"[2, 5]", b"[2, 6]"))  # the checksum no longer holds
    assert store.needs(b"head", options, lambda: (2, 7)) == (2, 7)
    assert store.needs(b"other head", options, lambda: (2, 1)) == (2, 1)


def test_a_hit_gives_what_a_run_without_the_cache_gives(tree, folder):
    migrate(tree)
    for flags in ([], ["--target", "shim"], ["--unsafe-fixes"]):
        ran = invoke(["migrate", "--jobs", "1", *flags, tree])  # the diff and the findings
        cold = invoke(["migrate", "--jobs", "1", "--no-cache", *flags, tree])
        assert (ran.exit_code, ran.stdout) == (cold.exit_code, cold.stdout)
        # (the next step it gives is the command it was run with)
        assert ran.stderr == cold.stderr.replace(" --no-cache", "")


def test_a_changed_file_misses_and_the_others_hit(tree, folder, rewrites):
    def changes(report: dict) -> int:
        return next(len(f["changes"]) for f in report["files"] if f["path"].endswith("train.py"))

    before = changes(migrate(tree)[1])
    rewrites.clear()
    script = tree / "train.py"
    script.write_text(script.read_text() + "\nprint(xm.get_ordinal())\n")
    after = changes(migrate(tree)[1])
    assert rewrites == ["train.py"] and after == before + 1


@pytest.mark.parametrize(
    "flags",
    [
        ["--target", "shim"],
        ["--target-version", "2.5"],
        ["--select", "env"],
        ["--ignore", "manual"],
        ["--unsafe-fixes"],
        ["--launcher", "xrt2pjrt"],
        ["--zone", "europe-west4-a"],
    ],
)
def test_another_option_misses(tree, folder, rewrites, flags):
    migrate(tree)
    rewrites.clear()
    migrate(*flags, tree)
    assert sorted(rewrites) == sorted(FILES)


def test_the_configuration_around_a_file_counts(tree, folder, rewrites):
    """Per-file-ignores and a formatter's line length change what a rewrite writes."""
    migrate(tree)
    rewrites.clear()
    (tree / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n")
    width.of.cache_clear()  # (read once a process)
    migrate(tree)
    assert "train.py" in rewrites
    rewrites.clear()
    (tree / "pyproject.toml").write_text(
        "[tool.ruff]\nline-length = 100\n\n[tool.xrt2pjrt]\nper-file-ignores = {'train.py' = ['api']}\n"
    )
    migrate(tree)
    assert rewrites == ["train.py"]


@pytest.mark.parametrize(
    "name, value", [("xrt2pjrt.__version__", "99.0"), ("xrt2pjrt.cache._libcst_version", lambda: "version = '99.0'")]
)
def test_another_release_of_the_tool_or_of_libcst_misses(tree, folder, rewrites, monkeypatch, name, value):
    migrate(tree)
    rewrites.clear()
    monkeypatch.setattr(name, value)
    cache._tool.cache_clear()
    try:
        migrate(tree)
    finally:
        cache._tool.cache_clear()
    assert len(rewrites) == len(FILES)


def _with_checksum(payload: bytes) -> bytes:
    import hashlib

    return cache.MAGIC + hashlib.blake2b(payload).hexdigest().encode() + b"\n" + payload


@pytest.mark.parametrize(
    "spoil",
    [
        lambda raw: raw[: len(raw) // 2],  # cut short
        lambda raw: raw[:-3] + bytes([raw[-3] ^ 1]) + raw[-2:],  # a bit flipped
        lambda raw: raw.replace(b'"error": null', b'"error": "x"'),  # of the right shape, but not what was written
        lambda raw: b"",
        lambda raw: b"\x00" * 64,
        lambda raw: _with_checksum(b'{"key": "another", "changes": []}'),  # whole, but another key's
        lambda raw: _with_checksum(
            json.dumps({**json.loads(raw.split(b"\n", 2)[2]), "changes": [{"rule": 1}]}).encode()
        ),
        lambda raw: _with_checksum(
            json.dumps({**json.loads(raw.split(b"\n", 2)[2]), "text": ["not", "text"]}).encode()
        ),
    ],
)
def test_a_spoiled_entry_is_a_miss_never_trusted(tree, folder, rewrites, spoil):
    first = migrate(tree)
    for entry in entries(folder):
        entry.write_bytes(spoil(entry.read_bytes()))
    rewrites.clear()
    assert migrate(tree) == first
    assert len(rewrites) == len(FILES)  # each parsed again, and its entry written anew
    rewrites.clear()
    assert migrate(tree) == first and rewrites == []


def test_two_runs_sharing_the_cache_at_once_both_finish(tree, tmp_path):
    for k in range(40):  # enough files that the two runs overlap
        (tree / f"worker_{k}.py").write_text(f"import torch_xla.core.xla_model as xm\nrank_{k} = xm.get_ordinal()\n")
    env = {k: v for k, v in os.environ.items() if k != cache.OFF_ENV}
    command = [
        sys.executable,
        "-m",
        "xrt2pjrt",
        "migrate",
        "--jobs",
        "1",
        "--output-format",
        "json",
        "--cache-dir",
        str(tmp_path / "shared"),
        str(tree),
    ]
    runs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for _ in range(2)]
    outputs = [run.communicate(timeout=300) for run in runs]
    cold = subprocess.run([*command, "--no-cache"], capture_output=True, env=env)
    assert [run.returncode for run in runs] == [0, 0], [err.decode()[-2000:] for _, err in outputs]
    assert [out for out, _ in outputs] == [cold.stdout, cold.stdout]
    for entry in entries(tmp_path / "shared"):
        assert cache._decoded(entry.read_bytes(), entry.name) is not None  # each one whole


def test_no_cache_writes_nothing(tree, folder, monkeypatch):
    migrate("--no-cache", tree)
    assert not folder.exists()
    monkeypatch.setenv(cache.OFF_ENV, "1")
    migrate(tree)
    assert not folder.exists()


def test_cache_dir_chooses_the_folder(tree, folder, tmp_path):
    migrate("--cache-dir", tmp_path / "elsewhere", tree)
    assert len(rewrite_entries(tmp_path / "elsewhere")) == len(FILES) and not folder.exists()


def test_a_folder_of_another_user_is_not_used(tree, folder, rewrites):
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("needs root to give the folder to another user")
    folder.mkdir()
    os.chown(folder, 65534, 65534)
    first = migrate(tree)
    rewrites.clear()
    assert migrate(tree) == first and len(rewrites) == len(FILES)
    assert entries(folder) == []


def test_the_folder_stays_under_its_bound(tree, tmp_path):
    store = cache.Cache(tmp_path / "bounded")
    rewrite = cache.Rewrite(text="x" * 1000)
    for k in range(20):
        store.put(f"{k:040x}", rewrite)
        os.utime(store._path(f"{k:040x}"), (1000 + k, 1000 + k))  # older first
    store.get(f"{0:040x}")  # used now: the last to go
    size = store._path(f"{0:040x}").stat().st_size
    store.prune(max_bytes=10 * size)
    kept = {p.name for p in entries(tmp_path / "bounded")}
    assert len(kept) == 8 and f"{0:040x}" in kept and f"{19:040x}" in kept and f"{1:040x}" not in kept
