"""What a text rule is: the hooks the text rewriters call, each with the piece it is about.

A text rule (kind "shell") covers every text kind: shell scripts and the shell inside
Dockerfiles, YAML, Markdown and notebooks, and, through the hooks below, what a kind writes
in its own syntax (a Dockerfile's FROM image, a requirement, a jsonnet config). A rewriter
calls each hook of every selected rule, by rule id, at fixed points of its pass (below); a
hook records what it finds through the ``Recorder`` (recorder.py).

Settings of environment variables are not a hook: every kind finds its own (``export X=``,
``ENV``, ``env:``, ``%env``) and hands them to ``text.environment.apply``, which asks the env
rules (``text.environment.EnvRule``) what becomes of each.
"""

from __future__ import annotations

import functools

from xrt2pjrt.registry import Options, Rule, selected
from xrt2pjrt.recorder import Recorder
from xrt2pjrt.text.words import Command


class TextRule(Rule):
    kind = "shell"

    def command(self, rec: Recorder, cmd: Command, posix_sh: bool) -> None:
        """A shell command of the text (not one inside another's quoted string), before its
        environment settings are handled; ``posix_sh``: the text runs under sh, not bash."""

    def word(self, rec: Recorder, word: str, offset: int) -> None:
        """A word that may name something to install, written at ``offset``: a command's
        word, a Dockerfile FROM image, a YAML ``image:``, a requirement, a jsonnet string."""

    def heredoc(self, rec: Recorder, start: int, end: int) -> None:
        """The body ``rec.text[start:end]`` of a here-document: data to the shell rewriter,
        even when it writes a script."""

    def exec_form(self, rec: Recorder, offset: int, keyword: str, body: str) -> None:
        """A Dockerfile RUN, CMD or ENTRYPOINT in exec form (a JSON array), which is not
        rewritten; called when the kind's trigger matches ``body``."""

    def exec_array(self, rec: Recorder, offset: int, key: str, words: list[str]) -> None:
        """A YAML list under ``key`` (command, args, ...) run as one command's words, without
        a shell."""

    def yaml_key(self, rec: Recorder, name: str, offset: int) -> None:
        """A key of a YAML mapping, in a file that uses PyTorch."""

    def dotenv(self, rec: Recorder, name: str, value: str, offset: int) -> None:
        """A ``NAME=VALUE`` line of a .env file (its value unquoted), at ``offset``: a setting
        the env rules handle, which a rule may read for what else it names."""

    def config(self, rec: Recorder, what: str) -> None:
        """A config, ``rec.text``, that ``what`` names ("a jsonnet config", "a Terraform config"):
        what it produces is only known by evaluating it, so each place is reported, never
        rewritten."""


@functools.lru_cache(maxsize=64)
def rules(options: Options) -> tuple[TextRule, ...]:
    """The text rules a run with ``options`` takes, one instance each, by id (a rewriter is
    run on many snippets of one file with the same options: a Dockerfile's RUN lines)."""
    return tuple(cls() for cls in selected(options, "shell") if issubclass(cls, TextRule))
