"""The real corpus: released XRT-era library code, fetched from the package registry with pip.

Used by tests/test_corpus_robustness.py and by bench/. Nothing of it is committed: each
release is downloaded once with ``pip download --no-deps`` into a cache outside the
repository (``$XRT2PJRT_CORPUS_CACHE``, else ``${XDG_CACHE_HOME:-~/.cache}/xrt2pjrt-corpus``)
and unpacked there. ``CorpusUnavailable`` means the registry could not be reached; any
other pip failure is raised as it is, so a broken pin shows up instead of a silent skip.

Wheels are preferred: they need no build step, while fetching an old sdist makes pip run
its setup.py, which today's setuptools often rejects. An sdist is taken where it carries
more (tests, setup scripts) or where no wheel was released.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Release:
    name: str
    version: str
    form: str  # "wheel" or "sdist"
    holds: str  # the XRT-era code it carries, for the reader of this table

    @property
    def folder(self) -> str:
        return f"{self.name}-{self.version}-{self.form}"


# The corpus: exact pins, so every run sees the same bytes. Together 2,519 files (2,378
# Python, 766k lines); 92 mention torch_xla, XRT_ or xla_dist. timm is the control: no XLA code.
RELEASES = (
    Release("transformers", "4.20.1", "wheel", "Trainer: xm.xrt_world_size, xm.get_ordinal, xm.rendezvous"),
    Release("pytorch-lightning", "1.9.5", "wheel", "TPU strategies: xmp.spawn, xm.rendezvous, xla_dist probes"),
    Release("lightning", "1.8.6", "wheel", "lite/pytorch/app; XLA strategies and TPU accelerator"),
    Release("accelerate", "0.12.0", "sdist", "xmp.spawn launcher, xm.xrt_world_size state, tests"),
    Release("accelerate", "0.16.0", "wheel", "xmp.spawn launcher, TPU state, xm.rendezvous"),
    Release("pytorch-ignite", "0.4.8", "sdist", "native XLA computation model: xmp.spawn, xm.rendezvous"),
    Release("pytorch-ignite", "0.4.11", "wheel", "native XLA computation model: xmp.spawn, xm.all_reduce"),
    Release("torchmetrics", "0.11.4", "wheel", "one torch_xla probe among 200 metric modules"),
    Release("fastai-xla-extensions", "0.0.12", "wheel", "xmp.spawn(start_method='fork'), xm.rendezvous"),
    Release("tpu-util", "0.1.3", "sdist", "xmp.spawn nprocs=8 fork, xm.xrt_world_size, rendezvous"),
    Release("tpu-star", "0.0.1rc10", "wheel", "xm.xrt_world_size in a TPU experiment runner"),
    Release("tez", "0.7.2", "sdist", "optional torch_xla trainer"),
    Release("timm", "0.6.13", "wheel", "control: no XLA code"),
)

# Words in pip's output that mean the registry was not reached at all.
_UNREACHABLE = (
    "NewConnectionError",
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Network is unreachable",
    "ConnectTimeoutError",
    "ProxyError",
    "Connection refused",
)


class CorpusUnavailable(Exception):
    """The package registry could not be reached, so the corpus cannot be fetched."""


def cache_dir() -> Path:
    explicit = os.environ.get("XRT2PJRT_CORPUS_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "xrt2pjrt-corpus"


def corpus_paths(releases=RELEASES, cache: Path | None = None) -> list[Path]:
    """One unpacked folder per release, fetching and unpacking what the cache lacks."""
    cache = cache or cache_dir()
    return [_unpacked(release, cache) for release in releases]


def _unpacked(release: Release, cache: Path) -> Path:
    target = cache / "unpacked" / release.folder
    if target.is_dir():
        return target
    archive = _downloaded(release, cache)
    (cache / "unpacked").mkdir(parents=True, exist_ok=True)
    # Unpack beside the target and rename: a half-unpacked folder is never taken as done.
    staging = Path(tempfile.mkdtemp(dir=cache / "unpacked", prefix=f".{release.folder}."))
    try:
        if archive.suffix == ".whl":
            with zipfile.ZipFile(archive) as z:
                z.extractall(staging)
        else:
            with tarfile.open(archive) as t:
                t.extractall(staging, filter="data")
        os.replace(staging, target)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if not target.is_dir():  # another process may have finished first
            raise
    return target


def _downloaded(release: Release, cache: Path) -> Path:
    folder = cache / "archives" / release.folder
    found = _archives_in(folder)
    if found:
        return found[0]
    folder.mkdir(parents=True, exist_ok=True)
    form = ["--only-binary", ":all:"] if release.form == "wheel" else ["--no-binary", ":all:"]
    command = [
        sys.executable, "-m", "pip", "download", "--no-deps", *form,
        "--retries", "1", "--timeout", "30", "--disable-pip-version-check",
        "-d", str(folder), f"{release.name}=={release.version}",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    found = _archives_in(folder)
    if done.returncode == 0 and found:
        return found[0]
    output = done.stdout + done.stderr
    if any(marker in output for marker in _UNREACHABLE):
        raise CorpusUnavailable(f"package registry unreachable while fetching {release.name}=={release.version}")
    raise RuntimeError(f"pip could not fetch {release.name}=={release.version}:\n{output[-3000:]}")


def _archives_in(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.name.endswith((".whl", ".tar.gz", ".zip", ".tar.bz2")))


if __name__ == "__main__":  # python tests/_corpus.py: fetch, then print what is there
    for release, path in zip(RELEASES, corpus_paths()):
        count = sum(1 for p in path.rglob("*") if p.is_file())
        print(f"{release.name}=={release.version} ({release.form}): {count} files in {path}")
