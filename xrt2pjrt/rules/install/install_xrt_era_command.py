"""Commands written in Python that install an XRT-era torch_xla: reported, as install lines
are.

Set-up code run on Colab and Kaggle installs from strings: ``os.system('python
pytorch-xla-env-setup.py --version 1.8.1')``, ``subprocess.run(['pip', 'install',
'torch_xla==1.13'])``, or a helper of the project's own (``quietly_run(...)``); a package's
``setup(install_requires=[...], extras_require={...})`` lists what pip installs beside it; a
notebook's variable that a ``!`` command expands (``!gsutil cp "$DIST_BUCKET/$WHEEL" .``) is read
too, and so is a variable of a file that runs commands as argument lists (a project's copy of the
XRT-era env-setup installer: ``['gsutil', 'cp', DIST_BUCKET + '/' + wheel, '.']``). Each string is
read as a shell command (text/words.py), unless it is only said (printed, logged), and its words are
checked as install lines are (text/installs.py). A ``--write`` leaves the command alone: which
torch, torchvision and torch_xla to install together is a person's decision.
"""

from __future__ import annotations

import re

import libcst as cst

from xrt2pjrt.python.ipython_calls import is_magic_call
from xrt2pjrt.python.rule import PythonRule, says
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.text import installs, words

# What a command's string may sit in, inside the call that runs it (a dict: setup()'s extras_require).
_PARTS = (
    cst.Arg,
    cst.List,
    cst.Tuple,
    cst.Element,
    cst.Dict,
    cst.DictElement,
    cst.ConcatenatedString,
    cst.BinaryOperation,
    cst.FormattedString,
)
# An f-string's replacement field: an expansion, so the word holding it has no value.
_FIELD = "${field}"


class InstallXrtEraCommand(PythonRule):
    id = "install-xrt-era-command"
    fix = "none"
    summary = "Install commands in Python strings (os.system, subprocess) fetching XRT-era torch_xla: reported"
    words = ("torch_xla", "torch-xla", "env-setup.py", "tpu-pytorch", "libtpu", "cloud-tpu-client", "tpu-vm-")
    nodes = (cst.SimpleString, cst.FormattedString)
    examples = (
        Example(  # yellowdolphin/deeptrane's train.py: the installer's download and its run, one spot
            dedent("""
                import sys

                quietly_run(
                    'curl -o pytorch-xla-env-setup.py https://example.com/env-setup.py',
                    f'{sys.executable} pytorch-xla-env-setup.py --version {xla_version}',
                )
            """),
            dedent("""
                import sys

                # TODO(xrt2pjrt): install torch and torch_xla 2.9.0 [install-xrt-era-command]
                quietly_run(
                    'curl -o pytorch-xla-env-setup.py https://example.com/env-setup.py',
                    f'{sys.executable} pytorch-xla-env-setup.py --version {xla_version}',
                )
            """),
            manual=("install torch and torch_xla 2.9.0",),
        ),
        Example(
            dedent("""
                import subprocess

                subprocess.run(['pip', 'install', 'torch_xla==1.13'], check=True)
            """),
            dedent("""
                import subprocess

                # TODO(xrt2pjrt): install torch and torch_xla 2.9.0 [install-xrt-era-command]
                subprocess.run(['pip', 'install', 'torch_xla==1.13'], check=True)
            """),
            manual=("install torch and torch_xla 2.9.0",),
        ),
        Example(  # the current release; a docstring, a message and a constant that name an old one
            dedent('''
                import os

                """Needs torch_xla==1.13."""
                os.system("pip install 'torch_xla[tpu]~=2.9.0'")
                print('first run pytorch-xla-env-setup.py')
                BUCKET = 'gs://tpu-pytorch/wheels'
            '''),
            dedent('''
                import os

                """Needs torch_xla==1.13."""
                os.system("pip install 'torch_xla[tpu]~=2.9.0'")
                print('first run pytorch-xla-env-setup.py')
                BUCKET = 'gs://tpu-pytorch/wheels'
            '''),
        ),
    )

    def leave(self, ctx, original, updated):
        if isinstance(ctx.parent(1), cst.Expr) or is_magic_call(ctx.parent(2)):
            return updated  # a docstring, a string standing alone; a magic's, migrated as the command it is
        if not (_run_by_a_call(ctx) or _names_an_install(original, self.words) and _a_command_reads_it(ctx)):
            return updated
        if ctx.block.get(self.id) is ctx.statement:
            return updated  # one item a statement: a download of the installer and its run are one spot
        torch = ctx.options.uses_torch(ctx.source)
        for command in words.commands(_command_text(original)):
            for word in command.words:
                problem = word.value and installs.finding(word.value, ctx.target_version, torch, ctx.options.code_needs)
                if problem:
                    ctx.decide(problem.do, detail=problem.more, use=problem.use)
                    ctx.block[self.id] = ctx.statement
                    return updated
        return updated


def _run_by_a_call(ctx) -> bool:
    """Whether the string is (part of) an argument of a call that does not just say it."""
    level = 1
    while isinstance(ctx.parent(level), _PARTS):
        level += 1
    call = ctx.parent(level)
    return isinstance(call, cst.Call) and not says(call)


def _names_an_install(string: cst.SimpleString | cst.FormattedString, words: tuple[str, ...]) -> bool:
    """Whether the string holds a word of the rule: the file's text is searched only then."""
    text = _command_text(string)
    return any(word in text for word in words)


def _a_command_reads_it(ctx) -> bool:
    """Whether the string is a variable's value that a command of the file reads: a ``!``
    command of the notebook that expands it (``DIST_BUCKET = 'gs://tpu-pytorch/wheels'``, then
    ``!gsutil cp "$DIST_BUCKET/$WHEEL" .``: IPython puts the kernel's variables into the line), or
    in a file that runs fetches and installs as argument lists (``['gsutil', 'cp', ...]``, a copy
    of the XRT-era env-setup installer)."""
    assign = ctx.parent(1)
    if not (
        isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name)
    ):
        return False
    name = re.escape(assign.targets[0].target.value)
    expanded = r"(?:get_ipython\(\)\.system\(|^[ \t]*!)[^\n]*" + words.expansion(name)
    return bool(re.search(expanded, ctx.source, re.M) or _ARGUMENT_LISTS.search(ctx.source))


# A command run as an argument list: ``['gsutil', 'cp', path, '.']``, ``['pip', 'install', wheel]``.
_ARGUMENT_LISTS = re.compile(r"""\[\s*(['"])(?:gsutil|pip3?|wget|curl)\1\s*,""")


def _command_text(string: cst.SimpleString | cst.FormattedString) -> str:
    """The string's text as a shell would get it, each f-string field an expansion."""
    if isinstance(string, cst.SimpleString):
        value = string.evaluated_value
        return value if isinstance(value, str) else value.decode("latin-1")
    return "".join(part.value if isinstance(part, cst.FormattedStringText) else _FIELD for part in string.parts)
