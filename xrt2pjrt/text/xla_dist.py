"""The xla_dist command model: words -> a ``Launch`` -> gcloud (or ``xrt2pjrt launch``).

One model serves ``migrate`` (which renders shell source for a script) and ``xrt2pjrt
launch`` (which renders an argv per worker), so both run the same program on the workers.

What runs on a worker, and where ``$`` expands. torch_xla 1.13's xla_dist received its
arguments after the local shell had expanded them, then wrote a script for each worker in
which every word was wrapped in double quotes (``concat_cmd_list``) — so ``$VAR`` written
unquoted or in double quotes expanded on the local machine, and a ``$`` that reached xla_dist
literally (``'$HOME'``, ``\\$HOME``) expanded again on the worker. The rendering for a script
keeps the first and the second, but not what xla_dist also did: read the local values again
as shell on the worker.

- Text the script wrote literally goes into the worker's command as it reached xla_dist:
  single quotes, or, when it holds a ``$`` or a backquote, double quotes as xla_dist wrote
  it, so that the ``$`` still expands there and a ``\\$`` (a backslash before a ``$``
  or a backquote) is still a literal one (the rewriter reports a ``$(…)`` or backquote,
  which runs a command on every worker); a bare ``"`` and a final ``\\``, which broke
  xla_dist's script, are escaped.
  In a word with no ``$``, backslashes are kept (xla_dist lost them). A word that starts
  and ends with ``"`` xla_dist wrote unwrapped, so the worker read it as shell: it is
  written so again when it is one double-quoted string, and left for a person otherwise.
- A word holding local expansions (``"${OUT_DIR}/ckpt"``, ``$EXTRA_ARGS``) is expanded by
  the local shell as before, then each resulting word is quoted for the worker at run time
  — ``$(printf %q "…")``, or ``$(set -- …; echo "${*@Q}")`` where it splits into any number
  of words (unquoted, or ``"x$@"``, ``"${@:2}"``); the script's own arguments ``"$@"`` and
  an array's elements ``"${ARGS[@]}"`` become ``${*@Q}`` (``${ARGS[*]@Q}``); ``"$*"`` and
  ``"${ARGS[*]}"`` are one word. So a value holding ``;``, quotes or ``$(…)`` arrives as the word (or,
  unquoted, the words) the local shell made of it. All of these need bash (4.4+) where the script runs; under ``sh`` the call is
  left for a person.
- Deliberate differences: a glob or a leading ``~`` written unquoted in a word without
  expansions is left unquoted on the worker, so it matches files and names the home folder
  there (in a word with expansions, ``"$DATA"/*.csv``, it matches here, as for xla_dist);
  ``$'…'`` strings, and words mixing local expansions with a literal ``$``, are left for a
  person.

``xrt2pjrt launch`` renders the same model with ``literal_word``: each word it is given
arrives as it is, and nothing expands on the worker.
"""

from __future__ import annotations

import itertools
import re
import shlex
from dataclasses import dataclass, field
from typing import Callable

from xrt2pjrt.shim.settings import JOB_SECRET
from xrt2pjrt.text.words import GLOB, PLAIN, Part, Word

MODULE = "torch_xla.distributed.xla_dist"
PYTHON = re.compile(r"(?:.*/)?python(?:\d(?:\.\d+)?)?")
SCRIPT = re.compile(r"(?:^|/)xla_dist\.py")
# Python's own options that take a value (`python3 -W ignore -m ...`).
PYTHON_VALUE_OPTIONS = ("-W", "-X", "-c")
# Commands that run their arguments as a command; xla_dist after them is still translated.
WRAPPERS = frozenset({"nohup", "time", "exec", "env", "timeout", "stdbuf", "nice", "command", "sudo"})
MENTION = re.compile(r"torch_xla[./]distributed[./]xla_dist|\bxla_dist\.py\b")

# xla_dist's flags (torch_xla 1.13 argparse): name -> takes a value.
FLAGS = {
    "--tpu": True,
    "--vm": True,
    "--docker-container": True,
    "--docker-image": True,
    "--docker-run-flag": True,
    "--conda-env": True,
    "--env": True,
    "--restart-tpuvm-pod-server": False,
    "--tpuvm-server-port": True,
}
# Flags of the XRT server that PJRT has no use for.
XRT_ONLY = ("--restart-tpuvm-pod-server", "--tpuvm-server-port")
DOCKER_RUN = ("sudo", "docker", "run", "--rm", "--privileged", "--net=host", "-e", "PJRT_DEVICE=TPU")
# xla_dist's set-up before anything else ran on a worker, "for non-interactive non-login shell
# over ssh": the profile that defines conda's shell function (`conda activate` fails without
# it) and what /etc/profile.d adds to PATH.
PROFILE = ". /etc/profile;"
# The translation, in the words a message gives it to a person.
BY_HAND = f'gcloud compute tpus tpu-vm ssh NAME --worker=all --command="{PROFILE} PJRT_DEVICE=TPU …"'


# A conda env named for a torch_xla 1.x release, as the XRT-era TPU VM images named theirs (torch-xla-1.13).
XRT_ERA_CONDA_ENV = re.compile(r"(?<![\d.])1\.\d+(?![\d])")


def conda_env_note(name: str) -> str:
    """What to check about xla_dist's ``--conda-env NAME``, which both ``migrate`` and
    ``launch`` carry into ``conda activate NAME``: an env made for xla_dist (torch-xla-1.13
    and the like) holds an XRT-era torch_xla, which the migrated program cannot run on."""
    return f"--conda-env {name}: holds torch_xla 1.x; install 2.x in it or use another"


# The script's arguments or an array's elements: $@, $*, ${ARGS[@]}, ${ARGS[*]} (group 1: ARGS).
# Quoted, only the `@` forms are a word per element ("$*" is one word); unquoted, all split.
ALL_ELEMENTS = re.compile(r"\$(?:[@*]|\{[@*]\}|\{([A-Za-z_]\w*)\[[@*]\]\})")
# Expansions that are a word per element even inside double quotes: "$@", "${@:2}", "${A[@]}",
# "${A[@]%.py}", "${!A[@]}", "${!prefix@}".
MANY = re.compile(r"\$(?:@|\{!?(?:@|[A-Za-z_]\w*\[@\]|[A-Za-z_]\w*@\}))")
# What xla_dist's double quotes made of literal text, read by the worker's shell: the pairs a
# `\\` escapes there (kept), a final `\\` and a bare `"` (escaped, where xla_dist broke).
DOUBLE_QUOTED = re.compile(r'\\[$`"\\\n]|\\\Z|"')
# Brace expansion in unquoted text: `{a,b}`, `{1..3}`.
BRACES = re.compile(r"\{[^{}]*(?:,|\.\.)[^{}]*\}")
# A word xla_dist wrote into the worker's script as it was, without its double quotes
# (concat_cmd_list: it already starts and ends with one).
WRAPPED = re.compile(r'^".*"$')


class Untranslatable(Exception):
    """A launch shape that cannot be rewritten faithfully; the message says why."""


@dataclass(frozen=True)
class Seg:
    """A piece of the worker's command text. ``local`` pieces are source of the script itself,
    written into ``--command="…"`` as they are: expansions the local shell performs before
    gcloud runs, and the script's own spacing and ``\\``-newlines. Only scripts have them."""

    text: str
    local: bool = False


@dataclass(frozen=True)
class Prelude:
    """What a worker runs first, exporting ``names``: docker keeps them through sudo, and the
    job's secret (``XRT2PJRT_JOB_SECRET``) among them goes into the container by its name, so
    that no command line holds its value."""

    segs: tuple[Seg, ...]
    names: tuple[str, ...]


# The job's secret for the shim's store on a pod, made once on this machine when a migrated
# script's gcloud line runs (--target shim): every worker gets the same one, a new one each run.
# It is on gcloud's command line here and on the one each worker runs, so `ps` shows it there
# (`xrt2pjrt launch` hands it over stdin instead).
SECRET_ENV = JOB_SECRET.name
SECRET_HERE = Prelude(
    (
        Seg(f"export {SECRET_ENV}="),
        Seg("$(python3 -c 'import secrets; print(secrets.token_hex(32))')", local=True),
        Seg("; "),
    ),
    (SECRET_ENV,),
)


@dataclass
class Launch:
    tpu: Word
    command: list[Word]
    env: list[Word] = field(default_factory=list)
    conda_env: Word | None = None
    docker_image: Word | None = None
    docker_container: Word | None = None
    docker_run_flags: list[Word] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # XRT-only flags given

    def __post_init__(self) -> None:
        if not self.command:
            raise Untranslatable("no command to run after `--`")
        if self.conda_env and (self.docker_image or self.docker_container or self.docker_run_flags):
            raise Untranslatable("docker and conda flags together (xla_dist refused them)")
        if (self.docker_container or self.docker_run_flags) and not self.docker_image:
            raise Untranslatable("docker flags without --docker-image")

    def worker_command(self, quote: "Quote | None" = None, prelude: Prelude | None = None) -> list[Seg]:
        """What each worker runs: /etc/profile read as xla_dist read it, then PJRT_DEVICE=TPU,
        the env, conda or docker, the command.

        ``quote`` writes one word for the worker's shell: by default as xla_dist made the
        worker see a script's word (``remote_word``); ``xrt2pjrt launch`` gives
        ``literal_word``, so that each word arrives as it was given. The command words keep
        their gaps (spaces, ``\\``-newlines) after the first. ``prelude`` runs first.
        """
        quote = quote or remote_word
        segs: list[Seg] = [*(prelude.segs if prelude else ()), Seg(PROFILE)]

        def word(w: Word, gap: str = " ") -> None:
            if segs:
                segs.append(Seg(gap, local=True))  # spaces, or a `\`-newline kept from the script
            segs.extend(quote(w))

        assignments = [_assignment(w, quote) for w in self.env]
        if self.docker_image:
            docker = DOCKER_RUN
            if prelude:
                docker = (
                    "sudo",
                    f"--preserve-env={','.join(prelude.names)}",
                    *DOCKER_RUN[1:],
                    *(("-e", SECRET_ENV) if SECRET_ENV in prelude.names else ()),
                )
            for s in docker:
                word(Word.literal(s))
            for a in assignments:
                word(Word.literal("-e"))
                segs.append(Seg(" "))
                segs.extend(a)
            for flag in self.docker_run_flags:
                word(flag)
            if self.docker_container:
                word(Word.literal("--name"))
                word(self.docker_container)
            word(self.docker_image)
        else:
            if self.conda_env:
                for w in (Word.literal("conda"), Word.literal("activate"), self.conda_env):
                    word(w)
                segs.append(Seg(" &&"))
            word(Word.literal("PJRT_DEVICE=TPU"))
            for a in assignments:
                segs.append(Seg(" "))
                segs.extend(a)
        for i, w in enumerate(self.command):
            word(w, " " if i == 0 else w.gap)
        return segs


def gcloud_ssh(tpu: str, worker: str, zone: str | None, project: str | None) -> list[str]:
    return ["gcloud", "compute", "tpus", "tpu-vm", "ssh", tpu, *_where(zone, project), f"--worker={worker}"]


def gcloud_describe(tpu: str, zone: str | None, project: str | None) -> list[str]:
    return ["gcloud", "compute", "tpus", "tpu-vm", "describe", tpu, *_where(zone, project), "--format=json"]


def _where(zone: str | None, project: str | None) -> list[str]:
    return ([f"--zone={zone}"] if zone else []) + ([f"--project={project}"] if project else [])


def as_argv_text(segs: list[Seg]) -> str:
    """The worker command as one argv entry (no local shell in between)."""
    return "".join(s.text for s in segs)


def as_shell_source(segs: list[Seg]) -> str:
    """The worker command as the inside of a local double-quoted string."""
    return "".join(s.text if s.local else escape_double_quoted(s.text) for s in segs)


def escape_double_quoted(text: str) -> str:
    return re.sub(r'([\\"$`])', r"\\\1", text)


def remote_word(word: Word, assignment: bool = False) -> list[Seg]:
    """How a script's word is written in the worker's command, so the worker sees what
    xla_dist was given — with a value of this machine's shell arriving as a word."""
    value = word.value
    if value is not None and PLAIN.fullmatch(value):
        return [Seg(value)]
    if value == "":  # `""` has no part to quote, and the worker needs the empty word xla_dist's `""` gave it
        return [Seg("''")]
    parts = word.parts
    many = ALL_ELEMENTS.fullmatch(parts[0].text) if len(parts) == 1 and parts[0].expansion else None
    if many and parts[0].quoted and "@" in many.group(0) and not assignment:
        # "$@", "${ARGS[@]}": a word per element locally; each one quoted, all in the one --command
        array = many.group(1)
        return [Seg(f"${{{array}[*]@Q}}" if array else "${*@Q}", local=True)]
    if value is not None and not assignment and WRAPPED.match(value):
        return [_wrapped(value)]
    brace_expansion(word)  # Untranslatable around quotes
    for p in parts:
        if p.expansion and p.text.startswith("$'"):
            raise Untranslatable(f"$'…' string {p.text}")
        if assignment and p.expansion and (ALL_ELEMENTS.fullmatch(p.text) or MANY.match(p.text)):
            raise Untranslatable(f"{p.text} in an --env value")
    active = [not assignment and _active(p, i == 0) for i, p in enumerate(parts)]
    if value is None:
        return [_quoted_at_run_time(word, active, assignment)]
    segs: list[Seg] = []
    for is_active, run in itertools.groupby(zip(active, parts), key=lambda pair: pair[0]):
        text = "".join(p.text for _, p in run)
        segs.append(Seg(text) if is_active else Seg(_worker_quote(text)))
    return segs


def _quoted_at_run_time(word: Word, active: list[bool], assignment: bool) -> Seg:
    """A word holding this machine's expansions: the local shell expands it as it would have
    for xla_dist, then quotes each resulting word for the worker (bash: ``printf %q``,
    ``${*@Q}``), so that nothing in a value is read again as shell on the worker."""
    parts = word.parts
    if any(not p.expansion and re.search(r"[$`]", p.text) for p in parts):
        raise Untranslatable("a word mixing this machine's expansions with a `$` for the worker")
    source, open_quote = [], False
    for p, is_active in zip(parts, active):
        # as written: unquoted expansions, globs, `~` and plain text; the rest in double quotes
        bare = is_active or (not p.quoted and not p.expansion and bool(PLAIN.fullmatch(p.text)))
        if bare == open_quote:
            source.append('"')
            open_quote = not open_quote
        source.append(p.text if p.expansion or bare else escape_double_quoted(p.text))
    if open_quote:
        source.append('"')
    text = "".join(source)
    # it splits and globs here, as for xla_dist, or holds "$@", "${ARGS[@]:1}": any number of words, even none
    if any(active) or any(p.expansion and MANY.match(p.text) for p in parts):
        return Seg(f'$(set -- {text}; echo "${{*@Q}}")', local=True)
    return Seg(f"$(printf %q {text})", local=True)


def _worker_quote(text: str) -> str:
    """Literal text for the worker's shell. A `$` or backquote stays live inside double
    quotes, as in the script xla_dist wrote for each worker, and so does a `\\` that escapes
    one there (`\\$HOME` gave the worker a literal `$`); anything else arrives as it is: a bare
    `"` and a final `\\`, which broke xla_dist's double quotes, are escaped."""
    if re.search(r"[$`]", text):
        return '"' + DOUBLE_QUOTED.sub(lambda m: m.group() if len(m.group()) == 2 else "\\" + m.group(), text) + '"'
    if "'" not in text:
        return f"'{text}'"
    if not re.search(r'[\\"]', text):
        return f'"{text}"'
    return shlex.quote(text)


def _wrapped(value: str) -> Seg:
    """A word that starts and ends with `"`: the worker read it as shell, as xla_dist wrote it
    into the worker's script unwrapped; the same text is written here, when it is one
    double-quoted string."""
    if not re.fullmatch(r'"(?:[^"\\]|\\.)*"', value, re.S):
        raise Untranslatable(
            f"the word {value!r} starts and ends with `\"`: xla_dist wrote it into the worker's "
            "script as shell, unquoted"
        )
    return Seg(value)


def worker_runs(text: str) -> bool:
    """Whether literal text written in double quotes for the worker runs a command there
    (`$(…)`, a backquote not escaped by a `\\`)."""
    return bool(re.search(r"\$\(|`", DOUBLE_QUOTED.sub("", text)))


def _active(part: Part, first: bool) -> bool:
    """Unquoted expansions, globs, braces and a leading `~`. A glob and `~` are left unquoted
    on the worker, so they match files and name the home folder there; an expansion splits
    here; `{a,b}` is expanded by the worker's bash to the words the local bash made."""
    if part.quoted:
        return False
    return (
        part.expansion
        or bool(GLOB.search(part.text) or BRACES.search(part.text))
        or (first and part.text.startswith("~"))
    )


def brace_expansion(word: Word) -> bool:
    """Whether bash expands braces in the word (`{a,b}`, `pre{1..3}`); Untranslatable when
    they enclose quoted text or an expansion (`{"a b",c}`, `{$A,b}`), which only bash's own
    reading of the source could split faithfully."""
    found = False
    for i, p in enumerate(word.parts):
        if p.quoted or p.expansion or "{" not in p.text:
            continue
        found = found or bool(BRACES.search(p.text))
        if p.text.count("{") > p.text.count("}") and any(
            not q.quoted and not q.expansion and "}" in q.text for q in word.parts[i + 1 :]
        ):
            raise Untranslatable("brace expansion around quoted text or an expansion")
    return found


def literal_word(word: Word, assignment: bool = False) -> list[Seg]:
    """A word written so that the worker's shell passes it on as it is: nothing in it expands."""
    return [Seg(shlex.quote(word.value or ""))]


# How a word is written for the worker's shell: remote_word or literal_word.
Quote = Callable[..., "list[Seg]"]


def _assignment(word: Word, quote: Quote) -> list[Seg]:
    split = word.assignment(quoted_name=True)
    if split is None:
        raise Untranslatable("--env value is not NAME=VALUE with a literal NAME")
    name, value = split
    return [Seg(f"{name}=")] + (quote(value, assignment=True) if value.parts else [])


def strip_prefix(word: Word, prefix: str, text: str) -> Word:
    """The word without a literal leading ``prefix`` (``--tpu=``) that it is written with."""
    if not word.source(text).startswith(prefix):
        raise Untranslatable(f"{prefix} written with quotes")
    first = word.parts[0]
    parts = [Part(first.text[len(prefix) :], quoted=first.quoted)] if len(first.text) > len(prefix) else []
    return Word(word.start + len(prefix), word.end, parts + word.parts[1:], gap=word.gap)


@dataclass
class Invocation:
    """Where an xla_dist call sits among a command's words."""

    launcher: int  # index of the python word
    flags: int  # index of the first xla_dist argument
    separator: int | None  # index of `--`
    end: int  # index after the last command word


def find(argv: list[Word]) -> Invocation | None:
    """The xla_dist call among a command's words, if the command is one."""
    for i, w in enumerate(argv):
        if w.value is None or not PYTHON.fullmatch(w.value):
            continue
        j = i + 1
        while j < len(argv) and (argv[j].value or "").startswith("-") and argv[j].value != "-m":
            j += 2 if argv[j].value in PYTHON_VALUE_OPTIONS else 1
        if j + 1 < len(argv) and argv[j].value == "-m" and argv[j + 1].value == MODULE:
            flags = j + 2
        elif j < len(argv) and SCRIPT.search(argv[j].value or ""):
            flags = j + 1
        else:
            return None
        separator = next((k for k in range(flags, len(argv)) if argv[k].value == "--"), None)
        return Invocation(i, flags, separator, len(argv))
    return None


def parse(argv: list[Word], inv: Invocation, text: str) -> Launch:
    """The Launch an xla_dist call describes; Untranslatable when it cannot be rewritten."""
    lead = argv[: inv.launcher]
    if lead and (lead[0].value not in WRAPPERS):
        raise Untranslatable(f"xla_dist runs under `{lead[0].source(text)}`")
    values: dict[str, list[Word]] = {}
    ignored: list[str] = []
    words = argv[inv.flags : inv.separator if inv.separator is not None else inv.end]
    for w in words:
        if brace_expansion(w):
            raise Untranslatable(f"brace expansion in xla_dist's argument {w.source(text)}")
    command: list[Word] | None = None if inv.separator is None else argv[inv.separator + 1 : inv.end]
    k = 0
    while k < len(words):
        w = words[k]
        if not _option_like(w):
            if command is not None:
                raise Untranslatable(
                    f"unexpected word {w.source(text)!r} "
                    + (
                        "before `--`"
                        if inv.separator is not None
                        else "after xla_dist's flags that follow the command (argparse refused it)"
                    )
                )
            # the command starts here (argparse takes it as the positional): its words up to
            # the next flag, which argparse read as xla_dist's, as it read those after it
            end = next((j for j in range(k, len(words)) if _option_like(words[j])), len(words))
            command, k = words[k:end], end
            continue
        try:
            flag, inline = flag_of(w)
        except Untranslatable:
            if inv.separator is None and command is not None:
                raise Untranslatable(
                    f"{w.source(text)} after the command without `--`: xla_dist's argparse took it "
                    "for a flag of its own and refused it (unrecognized arguments)"
                ) from None
            raise
        if FLAGS[flag]:
            if inline:
                value = strip_prefix(w, w.head.partition("=")[0] + "=", text)
            elif k + 1 < len(words):
                k += 1
                value = words[k]
            else:
                raise Untranslatable(f"{flag} without a value")
            values.setdefault(flag, []).append(value)
        if flag in XRT_ONLY:
            ignored.append(flag)
        k += 1
    if "--vm" in values:
        raise Untranslatable("--vm names TPU-node VMs; TPU nodes run XRT only and have no PJRT equivalent")
    if "--tpu" not in values:
        raise Untranslatable("no --tpu")

    def one(flag: str) -> Word | None:
        return values.get(flag, [None])[-1]

    return Launch(
        tpu=one("--tpu"),
        command=command or [],
        env=values.get("--env", []),
        conda_env=one("--conda-env"),
        docker_image=one("--docker-image"),
        docker_container=one("--docker-container"),
        docker_run_flags=values.get("--docker-run-flag", []),
        ignored=ignored,
    )


def _option_like(word: Word) -> bool:
    """Whether argparse took the word for a flag: it starts with `-`, but is not `-`, a
    negative number or a word with a space in it (but `--env=A B`), which are positionals."""
    head = word.head
    spaced = " " in head and not any(f.startswith(head.partition("=")[0]) for f in FLAGS if "=" in head)
    return head.startswith("-") and head != "-" and not spaced and not re.fullmatch(r"-\d+|-\d*\.\d+", head)


def flag_of(word: Word) -> tuple[str, bool]:
    """(the xla_dist flag a word names, whether its value follows `=` in the same word).

    argparse's unambiguous prefixes (`--docker-i`) count, as they did for xla_dist.
    """
    name, eq, _ = word.head.partition("=")
    if word.value is None and not eq:
        raise Untranslatable(f"flag {name} written with an expansion in its name")
    if name not in FLAGS:
        matches = [f for f in FLAGS if f.startswith(name)] if name.startswith("--") and len(name) > 2 else []
        if len(matches) != 1:
            raise Untranslatable(f"unknown xla_dist flag {name}")
        name = matches[0]
    return name, bool(eq)


def quote_local(value: str | None) -> str | None:
    return shlex.quote(value) if value is not None else None
