"""``python -m torch_xla.core.xrt_run_server``: XRT's server, gone from torch_xla 2.x.

XRT ran a server on each TPU VM (``xrt_run_server --port 51011 --restart``) that the
training processes talked to; PJRT drives the TPU from the process itself and needs none.
The command fails on 2.x (No module named ...), and nothing replaces it: it is reported, to
be deleted by hand (its arguments or its place in a script may matter to what follows).
"""

from __future__ import annotations

from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.text.rule import TextRule

_SERVER = "torch_xla.core.xrt_run_server"
_NO_SERVER = (
    f"XRT's server ({_SERVER}) is gone from torch_xla 2.x, and PJRT needs none: this command fails "
    "(No module named ...); delete it"
)


class XrtServer(TextRule):
    id = "launch-xrt-server"
    words = ("xrt_run_server",)
    fix = "none"
    summary = f"python -m {_SERVER} (XRT's server, gone in 2.x): reported"
    examples = (
        Example(
            dedent(f"""
                python3 -m {_SERVER} --port 51011 --restart
                python3 train.py
            """),
            dedent("""
                # TODO(xrt2pjrt): delete this command: no XRT server now [launch-xrt-server]
                python3 -m torch_xla.core.xrt_run_server --port 51011 --restart
                python3 train.py
            """),
            manual=("XRT's server",),
        ),
    )

    def command(self, rec, cmd, posix_sh):
        if not cmd.argv():
            return
        argv = cmd.argv_text(rec.text)
        if any(word == _SERVER and argv[k - 1] == "-m" for k, word in enumerate(argv) if k):
            rec.decide(self.id, cmd.argv()[0].start, "delete this command: no XRT server now", _NO_SERVER)
