"""The simulated pod (workers.py) set up for one test: PATHs, records, and readers.

Tests put ``stand_ins/`` first on PATH, so a script's ``gcloud`` is the stand-in, and
``xla_dist_1_13/`` on PYTHONPATH, so ``python3 -m torch_xla.distributed.xla_dist`` is the
XRT-era simulation. The local environment carries no PJRT_DEVICE or XRT_* variable: what a
worker sees must come from the command it was given.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
XLA_DIST_1_13 = HERE / "xla_dist_1_13"  # the stand-in torch_xla 1.13 with its xla_dist


@dataclass(frozen=True)
class Call:
    """One run of a worker tool (python3, conda, docker): its argv and environment."""

    argv: list[str]
    env: dict[str, str]


class Pod:
    def __init__(self, root: Path, workers: int = 4):
        self.root = root
        self.records = root / "records"
        self.records.mkdir(parents=True, exist_ok=True)
        self.gcloud_log = root / "gcloud.log"
        base = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("XRT_", "PJRT_", "STAND_IN_", "TPU_")) and k != "PYTHONPATH"
        }
        self.env = {
            **base,
            "PATH": f"{HERE}{os.pathsep}{base.get('PATH', '/usr/bin:/bin')}",
            # the stand-in torch_xla first; then this checkout, so that `python -m xrt2pjrt` is
            # the code under test even where the installed package points elsewhere
            "PYTHONPATH": f"{XLA_DIST_1_13}{os.pathsep}{HERE.parents[1]}",
            "STAND_IN_RECORDS": str(self.records),
            "STAND_IN_WORKER_PATH": f"{HERE / 'worker_bin'}{os.pathsep}/usr/bin{os.pathsep}/bin",
            "STAND_IN_WORKERS": str(workers),
            "STAND_IN_GCLOUD_LOG": str(self.gcloud_log),
        }

    def run(self, argv: list[str], timeout: float = 60, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            argv, cwd=self.root, env={**self.env, **env}, capture_output=True, text=True, timeout=timeout
        )

    def run_script(self, text: str, name: str = "script.sh", **env: str) -> subprocess.CompletedProcess:
        path = self.root / name
        path.write_text(text)
        return self.run(["bash", str(path)], **env)

    def calls(self) -> dict[int, list[Call]]:
        """Every worker's tool runs, in order."""
        out: dict[int, list[Call]] = {}
        for folder in sorted(self.records.glob("worker-*")):
            worker = int(folder.name.split("-")[1])
            runs = sorted(folder.glob("*.argv"), key=lambda p: int(p.stem))
            out[worker] = [
                Call(
                    p.read_text().split("\0")[:-1],
                    dict(kv.split("=", 1) for kv in p.with_suffix(".env").read_text().split("\0") if "=" in kv),
                )
                for p in runs
            ]
        return out

    def commands(self) -> dict[int, list[str]]:
        """The shell commands each worker was given (by gcloud's --command, or xla_dist), in order."""
        return {
            int(p.name.split("-")[1]): [json.loads(line) for line in p.read_text().splitlines()]
            for p in sorted(self.records.glob("commands-*"))
        }

    def gcloud_calls(self) -> list[list[str]]:
        if not self.gcloud_log.exists():
            return []
        return [json.loads(line) for line in self.gcloud_log.read_text().splitlines()]

    def clear(self) -> None:
        for path in sorted(self.records.rglob("*"), reverse=True):
            path.rmdir() if path.is_dir() else path.unlink()
        if self.gcloud_log.exists():
            self.gcloud_log.unlink()


def statements(command: str) -> list[list[str]]:
    """A worker's command as the words of each of its statements (split at `;` and `&&`)."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&")
    lexer.whitespace_split = True
    out: list[list[str]] = [[]]
    for token in lexer:
        if token in (";", "&&"):
            out.append([])
        else:
            out[-1].append(token)
    return [s for s in out if s]


def set_up(command: str) -> list[list[str]]:
    """What a worker's command does from reading /etc/profile up to the program (not included)."""
    done = statements(command)
    return done[done.index([".", "/etc/profile"]) : -1]
