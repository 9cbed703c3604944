"""Which files a run reads in a git checkout: the ones git lists (tracked, and untracked
ones no ignore rule matches), whatever a .gitignore says of a tracked one; the .gitignore
files where git cannot answer, and -v says why.

Real repositories made with the git on this machine, and the tool run as a process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
XRT = "import torch_xla.core.xla_model as xm\n\nprint(xm.xrt_world_size())\n"
MIGRATED_LINE = "print(xr.world_size())"
GIT = shutil.which("git")

pytestmark = pytest.mark.skipif(GIT is None, reason="needs git on PATH")


@pytest.fixture
def env(tmp_path):
    """git and the tool with no configuration of this machine's (identity, safe.directory)."""
    home = tmp_path / "home"
    home.mkdir()
    return {
        **os.environ,
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "PYTHONPATH": str(ROOT),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }


def git(repo: Path, env, *args: str) -> str:
    return subprocess.run([GIT, "-C", str(repo), *args], env=env, check=True, capture_output=True, text=True).stdout


def repository(path: Path, env, files: dict[str, str], ignore: str = "", force: tuple[str, ...] = ()) -> Path:
    """A checkout holding ``files``, committed, with ``ignore`` as its .gitignore; the files
    in ``force`` are added with ``git add -f`` (ignored, yet tracked)."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, env, "init", "-q")
    if ignore:
        (path / ".gitignore").write_text(ignore)
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, env, "add", ".")
    if force:
        git(path, env, "add", "-f", *force)
    git(path, env, "commit", "-q", "-m", "init")
    return path


def migrate(env, *args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", "migrate", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=cwd,
    )


def seen(env, *paths, cwd=None) -> set[str]:
    """The files a preview reports on (each file here holds XRT-era code, so each is listed)."""
    ran = migrate(env, "--output-format", "json", *paths, cwd=cwd)
    assert ran.returncode in (0, 1), ran.stderr
    return {f["path"] for f in json.loads(ran.stdout)["files"]}


def test_a_tracked_file_an_ignore_rule_matches_is_migrated(tmp_path, env):
    """A repository that ignores notebooks/ but committed its notebooks with git add -f:
    their XRT code went unreported."""
    repo = repository(
        tmp_path / "repo",
        env,
        {"train.py": XRT, "notebooks/tpu.py": XRT},
        ignore="notebooks/\n",
        force=("notebooks/tpu.py",),
    )
    (repo / "notebooks" / "scratch.py").write_text(XRT)  # untracked and ignored: left out
    (repo / "new.py").write_text(XRT)  # untracked, not ignored: a file the user is writing
    assert seen(env, ".", cwd=repo) == {"train.py", "notebooks/tpu.py", "new.py"}
    ran = migrate(env, "--write", repo)
    assert ran.returncode == 0, ran.stderr
    assert MIGRATED_LINE in (repo / "notebooks" / "tpu.py").read_text()
    assert (repo / "notebooks" / "scratch.py").read_text() == XRT


def test_a_folder_below_the_root_of_the_checkout_is_listed_by_git(tmp_path, env):
    repo = repository(
        tmp_path / "repo",
        env,
        {"train.py": XRT, "notebooks/tpu.py": XRT},
        ignore="notebooks/\n",
        force=("notebooks/tpu.py",),
    )
    (repo / "notebooks" / "scratch.py").write_text(XRT)
    assert seen(env, repo / "notebooks") == {str(repo / "notebooks" / "tpu.py")}
    assert seen(env, "tpu.py", ".", cwd=repo / "notebooks") == {"tpu.py"}  # relative, named twice: once


def test_a_folder_above_checkouts_lists_each_by_its_git(tmp_path, env):
    """Two checkouts and a plain folder below the path named: each checkout by its own git,
    the plain folder by its .gitignore."""
    top = tmp_path / "work"
    repository(top / "a", env, {"nb/x.py": XRT}, ignore="nb/\n", force=("nb/x.py",))
    repository(top / "b", env, {"y.py": XRT, "gen/z.py": XRT}, ignore="gen/\n")
    (top / "plain" / "gen").mkdir(parents=True)
    (top / "plain" / ".gitignore").write_text("gen/\n")
    (top / "plain" / "gen" / "w.py").write_text(XRT)
    (top / "plain" / "v.py").write_text(XRT)
    assert seen(env, ".", cwd=top) == {"a/nb/x.py", "b/y.py", "plain/v.py"}


def test_nested_repositories_and_submodules_answer_for_their_own_files(tmp_path, env):
    library = repository(
        tmp_path / "library", env, {"lib.py": XRT, "nb/old.py": XRT}, ignore="nb/\n", force=("nb/old.py",)
    )
    repo = repository(tmp_path / "repo", env, {"train.py": XRT}, ignore="*.log\n")
    git(repo, env, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "vendor/library")
    git(repo, env, "commit", "-q", "-m", "submodule")
    repository(repo / "scratch", env, {"s.py": XRT, "out/o.py": XRT}, ignore="out/\n")  # untracked, a repository
    assert seen(env, ".", cwd=repo) == {"train.py", "vendor/library/lib.py", "vendor/library/nb/old.py", "scratch/s.py"}


def test_names_with_any_bytes_are_read_from_git_as_they_are(tmp_path, env):
    odd = os.fsdecode(b"odd\nname \xff\x01.py")
    repo = repository(
        tmp_path / "repo", env, {odd: XRT, "\u00e9t\u00e9.py": XRT}, ignore="*.py\n", force=(odd, "\u00e9t\u00e9.py")
    )
    ran = migrate(env, "--write", repo)
    assert ran.returncode == 0, ran.stderr
    assert MIGRATED_LINE in (repo / odd).read_text() and MIGRATED_LINE in (repo / "\u00e9t\u00e9.py").read_text()


def test_a_tracked_file_deleted_from_the_work_tree_is_not_an_error(tmp_path, env):
    repo = repository(tmp_path / "repo", env, {"gone.py": XRT, "train.py": XRT})
    (repo / "gone.py").unlink()  # removed, not yet with git rm: still in git's index
    ran = migrate(env, "--check", repo)
    assert ran.returncode == 1 and "gone.py" not in ran.stderr, ran.stderr


def test_a_hook_s_git_variables_do_not_point_the_listing_elsewhere(tmp_path, env):
    """A git hook runs with GIT_DIR and GIT_INDEX_FILE set: a submodule's files were listed
    from the superproject's index."""
    library = repository(
        tmp_path / "library", env, {"lib.py": XRT, "nb/old.py": XRT}, ignore="nb/\n", force=("nb/old.py",)
    )
    repo = repository(tmp_path / "repo", env, {"train.py": XRT})
    git(repo, env, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "library")
    hook = {**env, "GIT_DIR": str(repo / ".git"), "GIT_INDEX_FILE": str(repo / ".git" / "index")}
    assert seen(hook, ".", cwd=repo) == {"train.py", "library/lib.py", "library/nb/old.py"}


def test_a_tracked_file_in_a_folder_skipped_by_default_is_the_user_s_code(tmp_path, env):
    """build/, env/, dist/ skip what git does not track (build output, environments); a
    committed build/ script or env/ setup is the user's own. A committed virtualenv is not."""
    repo = repository(
        tmp_path / "repo",
        env,
        {
            "build/make_image.sh": "export XRT_TPU_CONFIG=localservice;0;localhost:51011\n",
            "env/setup.py": XRT,
            "venv/pyvenv.cfg": "home = /usr\n",
            "venv/lib/site.py": XRT,
            "train.py": XRT,
        },
    )
    (repo / "build" / "lib").mkdir()
    (repo / "build" / "lib" / "train.py").write_text(XRT)  # build output, untracked
    assert seen(env, ".", cwd=repo) == {"build/make_image.sh", "env/setup.py", "train.py"}


def test_the_user_s_own_exclude_patterns_leave_tracked_files_out_too(tmp_path, env):
    repo = repository(
        tmp_path / "repo",
        env,
        {
            "build/make.sh": "export XRT_TPU_CONFIG=localservice;0;localhost:51011\n",
            "third_party/x.py": XRT,
            "train.py": XRT,
        },
    )
    assert seen(env, "--extend-exclude", "third_party/", ".", cwd=repo) == {"build/make.sh", "train.py"}
    (repo / "pyproject.toml").write_text('[tool.xrt2pjrt]\nexclude = ["build/"]\n')
    assert seen(env, ".", cwd=repo) == {"third_party/x.py", "train.py"}


# --- what is ignored: counted, and the places with XRT-era words named ----------------

NOTEBOOK = json.dumps(
    {
        "cells": [
            {
                "cell_type": "code",
                "metadata": {},
                "outputs": [],
                "execution_count": None,
                "source": ["!pip install cloud-tpu-client==0.10 torch_xla==1.13\n"],
            }
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
)


def test_the_summary_counts_the_ignored_files_and_the_note_names_where_xrt_code_is(tmp_path, env):
    repo = repository(
        tmp_path / "repo",
        env,
        {"notebooks/tpu.ipynb": NOTEBOOK, "train.py": XRT},
        ignore="notebooks/\noutputs/\nlogs/\n.venv/\n",
        force=("notebooks/tpu.ipynb",),
    )
    (repo / "notebooks" / "scratch.ipynb").write_text(NOTEBOOK)  # beside a tracked one: named itself
    (repo / "outputs" / "run1").mkdir(parents=True)
    (repo / "outputs" / "run1" / "config.yaml").write_text("env:\n  XRT_TPU_CONFIG: localservice;0;localhost:51011\n")
    (repo / "logs").mkdir()
    (repo / "logs" / "plot.py").write_text("print('loss')\n")  # ignored, counted, no XRT-era word: not named
    (repo / ".venv" / "lib").mkdir(parents=True)
    (repo / ".venv" / "lib" / "x.py").write_text(XRT)  # an environment: skipped as such, not counted
    ran = migrate(env, "--check", ".", cwd=repo)
    assert ran.returncode == 1, ran.stderr
    assert (
        "xrt2pjrt: note: XRT-era words in ignored files, not migrated: notebooks/scratch.ipynb, outputs/ "
        "(name a file to migrate it)"
    ) in ran.stderr.splitlines()
    (summary,) = [line for line in ran.stderr.splitlines() if " files seen, " in line]
    assert summary.endswith(", 3 skipped as ignored.")
    assert json.loads(migrate(env, "--output-format", "json", ".", cwd=repo).stdout)["summary"]["files_ignored"] == 3


def test_the_note_names_the_ignored_folder_not_another_file(tmp_path, env):
    """The note named only files an ignore pattern matched one by one: in a tree that
    ignores notebooks/ and local.yaml it named local.yaml, and never the notebooks, as the
    walk did not look inside an ignored folder."""
    tree = tmp_path / "tree"  # no checkout: the .gitignore files
    (tree / "notebooks").mkdir(parents=True)
    (tree / ".gitignore").write_text("notebooks/\nlocal.yaml\n")
    (tree / "notebooks" / "tpu.ipynb").write_text(NOTEBOOK)
    (tree / "local.yaml").write_text("port: 8080\n")
    (tree / "train.py").write_text(XRT)
    ran = migrate(env, "--check", tree)
    assert (
        f"xrt2pjrt: note: XRT-era words in ignored files, not migrated: {tree / 'notebooks'}/ (name a file to "
        "migrate it)" in ran.stderr.splitlines()
    )
    assert "local.yaml" not in ran.stderr and ", 2 skipped as ignored." in ran.stderr


def test_a_huge_ignored_folder_is_looked_into_only_so_far_and_v_says_so(tmp_path, monkeypatch):
    from cli_runner import invoke
    from xrt2pjrt import files

    monkeypatch.setattr(files, "IGNORED_LOOKS", 10)
    (tmp_path / ".gitignore").write_text("data/\n")
    (tmp_path / "data").mkdir()
    for i in range(30):
        (tmp_path / "data" / f"{i}.py").write_text(XRT)
    (tmp_path / "train.py").write_text(XRT)
    ran = invoke(["migrate", "--check", "-v", tmp_path])
    assert "xrt2pjrt: ignored folders: more than 10 entries, not all looked into for XRT-era words" in ran.stderr
    assert "1 file seen" in ran.stderr


# --- where git cannot answer: the .gitignore files, and -v says why ------------------


def _verbose(env, path) -> str:
    ran = migrate(env, "--check", "-v", path)
    assert ran.returncode == 1, ran.stderr
    return ran.stderr


def test_git_lists_the_files_and_v_says_so(tmp_path, env):
    repo = repository(tmp_path / "repo", env, {"train.py": XRT})
    assert (
        f"xrt2pjrt: files of {repo}: as git lists them (tracked, and untracked ones not ignored)"
        in _verbose(env, repo).splitlines()
    )


def test_without_git_on_path_the_gitignore_files_are_read(tmp_path, env):
    repo = repository(tmp_path / "repo", env, {"train.py": XRT, "nb/x.py": XRT}, ignore="nb/\n", force=("nb/x.py",))
    no_git = tmp_path / "bin"
    no_git.mkdir()
    without = {**env, "PATH": str(no_git)}
    assert (
        f"xrt2pjrt: files of {repo}: git cannot list them (git is not on PATH); its .gitignore files are read instead"
    ) in _verbose(without, repo).splitlines()
    assert seen(without, repo) == {str(repo / "train.py")}  # (the rules say nb/ is ignored)


def test_a_bare_checkout_falls_back_to_the_gitignore_files(tmp_path, env):
    repo = repository(tmp_path / "repo", env, {"train.py": XRT, "gen/g.py": XRT}, ignore="gen/\n")
    git(repo, env, "config", "core.bare", "true")
    said = _verbose(env, repo)
    assert f"xrt2pjrt: files of {repo}: git cannot list them (fatal: this operation must be run in a work tree)" in said
    assert "gen/g.py" not in said and "train.py" in said


def test_a_broken_checkout_link_falls_back_to_the_gitignore_files(tmp_path, env):
    """A worktree whose .git file points at a repository that has moved away."""
    (tmp_path / "wt").mkdir()
    (tmp_path / "wt" / ".git").write_text(f"gitdir: {tmp_path / 'moved' / '.git' / 'worktrees' / 'wt'}\n")
    (tmp_path / "wt" / "train.py").write_text(XRT)
    said = _verbose(env, tmp_path / "wt")
    assert f"xrt2pjrt: files of {tmp_path / 'wt'}: git cannot list them (fatal: not a git repository:" in said


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the checkout to another user")
def test_a_checkout_git_does_not_trust_is_not_trusted_here(tmp_path, env):
    """safe.directory: git refuses a checkout another user owns (its configuration could run
    commands); the listing does not override that, and falls back."""
    repo = repository(tmp_path / "repo", env, {"train.py": XRT, "nb/x.py": XRT}, ignore="nb/\n", force=("nb/x.py",))
    for path in [repo, *repo.rglob("*")]:
        os.chown(path, 12345, 12345, follow_symlinks=False)
    said = _verbose(env, repo)
    assert f"xrt2pjrt: files of {repo}: git cannot list them (fatal: detected dubious ownership in repository" in said
