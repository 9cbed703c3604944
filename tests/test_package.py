"""The package as people get it: `python -m build` makes an sdist and a wheel; both carry the
LICENSE, the wheel carries the guide (and `xrt2pjrt guide` finds it in an installed copy),
the metadata says what the project is and what `[tpu]` installs, and the sdist's own test
suite collects and runs from the unpacked sdist.

Built with --no-isolation from this environment's setuptools and build (the `dev` extra),
so no network is needed."""

from __future__ import annotations

import email
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from xrt2pjrt import __version__

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
NAME = f"xrt2pjrt-{__version__}"


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    work = tmp_path_factory.mktemp("checkout")
    # Build from a copy of the tracked files, as a release would from a clean checkout.
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True)
    if listed.returncode != 0 or not listed.stdout:  # an unpacked sdist, say
        pytest.skip("needs a git checkout: the package is built from its tracked files")
    tracked = listed.stdout
    for name in filter(None, tracked.decode().split("\0")):
        source = ROOT / name
        if source.is_file():
            target = work / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
            target.chmod(source.stat().st_mode)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(work)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def test_the_wheel_carries_license_guide_and_data(dist):
    with zipfile.ZipFile(next(dist.glob("*.whl"))) as wheel:
        names = set(wheel.namelist())
        info = f"xrt2pjrt-{__version__}.dist-info"
        assert f"{info}/licenses/LICENSE" in names
        assert wheel.read(f"{info}/licenses/LICENSE") == (ROOT / "LICENSE").read_bytes()
        for page in ("MIGRATION.md", "RULES.md"):
            assert wheel.read(f"xrt2pjrt/docs/{page}") == (ROOT / "docs" / page).read_bytes()
        # the generated index, the API tables, and every family package of rules (`import` too)
        assert {
            "xrt2pjrt/rule_index.py",
            "xrt2pjrt/python/api_surface.txt",
            "xrt2pjrt/python/settings_surface.txt",
            "xrt2pjrt/rules/import/import_gone_module.py",
        } <= names
        assert not [n for n in names if n.startswith(("tests/", "bench/"))]
        metadata = email.message_from_bytes(wheel.read(f"{info}/METADATA"))
    assert metadata["License-Expression"] == "Apache-2.0" and metadata["Version"] == __version__
    classifiers = metadata.get_all("Classifier")
    assert "Programming Language :: Python :: 3.10" in classifiers and "Environment :: Console" in classifiers
    assert "torch_xla" in metadata["Keywords"] and "pjrt" in metadata["Keywords"]
    requires = metadata.get_all("Requires-Dist")
    assert 'torch==2.9.0; extra == "tpu"' in requires and 'torch-xla[tpu]==2.9.0; extra == "tpu"' in requires
    assert "typer<0.29,>=0.26" in requires  # typer 0.29 brings pydantic: see pyproject.toml
    description = metadata.get_payload()
    links = re.findall(r"\]\(([^)]+)\)", description)
    assert all(link.startswith("https://") for link in links), links  # they must work off the repository
    assert "xrt2pjrt guide" in description


def test_an_installed_wheel_shows_the_guide(dist, tmp_path):
    site = tmp_path / "site"
    wheel = next(dist.glob("*.whl"))
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "PYTHONPATH": str(site)}
    where = subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", "guide", "--path"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()) == site / "xrt2pjrt" / "docs" / "MIGRATION.md"
    shown = subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", "guide", "--rules"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.stdout == (ROOT / "docs" / "RULES.md").read_text(encoding="utf-8")


def test_the_sdist_holds_a_test_suite_that_runs(dist, tmp_path):
    with tarfile.open(dist / f"{NAME}.tar.gz") as sdist:
        names = set(sdist.getnames())
        for needed in (
            "LICENSE",
            "tests/conftest.py",
            "tests/stand_ins/gcloud",
            "tests/fixtures",
            "docs/RULES.md",
            "examples/legacy_mnist/train.py",
            ".pre-commit-hooks.yaml",
            "setup.py",
        ):
            assert f"{NAME}/{needed}" in names, needed
        assert not [n for n in names if "__pycache__" in n or ".hypothesis" in n]
        sdist.extractall(tmp_path, filter="tar")
    unpacked = tmp_path / NAME
    assert os.access(unpacked / "tests" / "stand_ins" / "gcloud", os.X_OK)  # modes survive
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "PYTHONPATH": str(unpacked)}
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider"],
        cwd=unpacked,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert collected.returncode == 0, collected.stdout[-3000:]
    assert re.search(r"\d{3,} tests collected", collected.stdout), collected.stdout[-500:]
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_guide.py",
            "tests/test_rule_families.py",
            "tests/runtime/test_launch.py",
        ],
        cwd=unpacked,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert ran.returncode == 0, ran.stdout[-3000:]
    # ... and it is the sdist's code that ran, not this checkout's.
    where = subprocess.run(
        [sys.executable, "-c", "import xrt2pjrt; print(xrt2pjrt.__file__)"],
        cwd=unpacked,
        env=env,
        capture_output=True,
        text=True,
    )
    assert where.stdout.strip() == str(unpacked / "xrt2pjrt" / "__init__.py")
