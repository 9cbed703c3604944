"""`xrt2pjrt ...` run in this process, for the tests that replace a function of the tool
(monkeypatch) and so cannot use a subprocess: stdin, stdout and stderr are swapped for
buffers, as a terminal-less run sees them."""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass

from xrt2pjrt import cli


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def invoke(args, stdin: bytes = b"") -> Result:
    streams = [io.TextIOWrapper(io.BytesIO(stdin)), io.TextIOWrapper(io.BytesIO()), io.TextIOWrapper(io.BytesIO())]
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = streams
    try:
        try:
            code = cli.main([str(a) for a in args])
        except SystemExit as exc:  # argparse's own exits (--help, a bad option)
            code = exc.code if isinstance(exc.code, int) else 2
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
    out, err = (stream.buffer.getvalue().decode() for stream in streams[1:])
    return Result(code, out, err)
