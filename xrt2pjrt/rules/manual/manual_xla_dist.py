"""XRT's pod launcher, torch_xla.distributed.xla_dist, used from Python: reported.

torch_xla 2.1 removed xla_dist. Code that drives it as a library (``xla_dist.get_args_parser()``,
``resolve_and_execute(args)``) fails on import, and a command string that starts it
(``subprocess.run([..., 'torch_xla.distributed.xla_dist', ...])``) fails when run. Each is
reported, not rewritten: the arguments are built by the program (launch-xla-dist translates the
lines of shell files). Launch with ``gcloud compute tpus tpu-vm ssh NAME --worker=all
--command=...`` or ``xrt2pjrt launch``. A docstring or a string standing alone is not reported,
nor text told to a person: an argparse help or epilog (a project's copy of xla_dist.py shows
its usage so), a printed or logged line.
"""

from __future__ import annotations

import re

import libcst as cst

from xrt2pjrt.python.ipython_calls import is_magic_call
from xrt2pjrt.python.rule import says
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.rules.manual._manual import ImportedModuleRule


class XlaDist(ImportedModuleRule):
    id = "manual-xla-dist"
    fix = "none"
    words = ("torch_xla", "xla_dist")  # also in strings: subprocess.run("python -m ...xla_dist ...")
    summary = "torch_xla.distributed.xla_dist used from Python (removed in 2.1): reported"
    prefixes = ("torch_xla.distributed.xla_dist.",)
    examples = (
        Example(  # started from Python: the module is gone, the command fails
            dedent("""
                import subprocess
                import torch_xla

                subprocess.run(['python3', '-m', 'torch_xla.distributed.xla_dist', '--tpu=p', '--', 'python3', 't.py'])
            """),
            dedent("""
                import subprocess
                import torch_xla

                # TODO(xrt2pjrt): launch with `xrt2pjrt launch` or gcloud [manual-xla-dist]
                subprocess.run(['python3', '-m', 'torch_xla.distributed.xla_dist', '--tpu=p', '--', 'python3', 't.py'])
            """),
            manual=("this command starts xla_dist",),
        ),
        Example(
            dedent("""
                from torch_xla.distributed import xla_dist

                xla_dist.resolve_and_execute(args)
            """),
            dedent("""
                # TODO(xrt2pjrt): launch with `xrt2pjrt launch` or gcloud [manual-xla-dist]
                from torch_xla.distributed import xla_dist

                # TODO(xrt2pjrt): launch with `xrt2pjrt launch` or gcloud [manual-xla-dist]
                xla_dist.resolve_and_execute(args)
            """),
            manual=("xla_dist is gone",),
        ),
    )

    nodes = (cst.Import, cst.ImportFrom, cst.SimpleString)

    def matches(self, module):
        return module == "torch_xla.distributed.xla_dist" or module.startswith("torch_xla.distributed.xla_dist.")

    def item(self, module):
        return _LAUNCH, f"xla_dist is gone from torch_xla 2.1: {_LAUNCH_PODS}"

    def leave(self, ctx, original, updated):
        if not isinstance(original, cst.SimpleString):
            return super().leave(ctx, original, updated)
        # a command that runs it: subprocess.run(['python', '-m', 'torch_xla.distributed.xla_dist', ...]),
        # os.system('python -m torch_xla.distributed.xla_dist ...')
        text = original.evaluated_value
        if isinstance(ctx.parent(1), cst.Expr) or is_magic_call(ctx.parent(2)) or _told(ctx):
            return updated  # a docstring, a string standing alone; a magic's, migrated as the command it is
        if isinstance(text, str) and _XLA_DIST_COMMAND.search(text):
            ctx.decide(
                _LAUNCH, detail=f"this command starts xla_dist, which is gone from torch_xla 2.1: {_LAUNCH_PODS}"
            )
        return updated


# Keywords whose text is for a person: argparse's help=, epilog=, description=, usage=.
_TOLD = frozenset({"help", "epilog", "description", "usage"})


def _told(ctx) -> bool:
    """Whether the string is text told to a person: an argparse help or epilog (``epilog=('Usage
    example: python3 -m' ' torch_xla.distributed.xla_dist --tpu=...')``), a printed or logged line."""
    for node in ctx.ancestors():
        if isinstance(node, cst.Arg):
            if node.keyword is not None and node.keyword.value in _TOLD:
                return True
        elif isinstance(node, cst.Call):  # (a file's write() may be a script's line: not told)
            return says(node) and not (isinstance(node.func, cst.Attribute) and node.func.attr.value == "write")
        elif not isinstance(node, (cst.ConcatenatedString, cst.FormattedString, cst.FormattedStringExpression)):
            return False
    return False


_LAUNCH = "launch with `xrt2pjrt launch` or gcloud"
_LAUNCH_PODS = "launch with `gcloud compute tpus tpu-vm ssh NAME --worker=all --command=...` (or `xrt2pjrt launch`)"
_XLA_DIST_COMMAND = re.compile(r"(?<![\w.])torch_xla\.distributed\.xla_dist\b")
