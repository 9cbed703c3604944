"""The shell rewriter (file kind "shell"): the text rules' hooks (text/rule.py) on each command,
and the environment settings of each, through text/environment.

Dockerfile RUN lines, YAML commands, Markdown code blocks and notebook ``!`` lines are
shell too: their adapters hand those pieces to ``rewrite`` here.
"""

from __future__ import annotations

import bisect
import re
import shlex
import shutil
import subprocess

from xrt2pjrt.registry import Options
from xrt2pjrt.rewriters import Outcome
from xrt2pjrt.text import environment, xla_dist
from xrt2pjrt.recorder import Edit, Recorder, leave_todo_comments, merge_into
from xrt2pjrt.text.environment import EnvSetting
from xrt2pjrt.text.rule import rules
from xrt2pjrt.text.words import NAME, Command, Word, commands, heredocs, without_word

POSIX_SH = re.compile(r"#![ \t]*(?:/usr)?/bin/(?:env[ \t]+)?(?:sh|dash|ash)\b")


def rewrite(text: str, options: Options, posix_sh: bool | None = None, comments: bool = True) -> Outcome:
    """``posix_sh``: the text runs under sh, not bash (Dockerfile RUN, IPython's `!`); by
    default, when its shebang says so. ``comments``: leave a TODO comment above each command
    with an item to decide (not for a command inside another file's line: a RUN, a prompt)."""
    rec = Recorder(text, options)
    _apply(rec, nested=False, posix_sh=bool(POSIX_SH.match(text)) if posix_sh is None else posix_sh)
    if comments:
        leave_todo_comments(rec, _command_lines(text))
    return rec.outcome()


def _command_lines(text: str) -> list[tuple[int, int]]:
    """The (first, last) lines of each command that starts its line, where a comment line
    may go above it (not a `\\` continuation, not after `;` on the same line)."""
    out = []
    newlines = [m.start() for m in re.finditer("\n", text)]  # (a count per command was quadratic)
    for cmd in commands(text):
        if not (cmd.words or cmd.redirects):
            continue
        line_start = text.rfind("\n", 0, cmd.start) + 1
        before = line_start - 1
        while before >= 0 and text[before] == "\n":
            before -= 1
        if text[line_start : cmd.start].strip() or (before >= 0 and text[before] == "\\"):
            continue
        out.append((bisect.bisect_left(newlines, cmd.start) + 1, bisect.bisect_left(newlines, cmd.end) + 1))
    return out


def check(text: str) -> str | None:
    """``bash -n`` on the rewritten script (skipped where bash is missing)."""
    bash = shutil.which("bash")
    if bash is None:
        return None
    proc = subprocess.run([bash, "-n"], input=text.encode(), capture_output=True, timeout=30)
    return proc.stderr.decode(errors="replace").strip() or None if proc.returncode else None


def _apply(rec: Recorder, nested: bool, posix_sh: bool = False) -> None:
    """One pass of the text rules over ``rec.text``. ``nested``: the text is a quoted string of
    an enclosing command (one level: a string inside a string is left alone); only the
    environment settings in it are handled there."""
    text = rec.text
    hooks = rules(rec.options)
    settings: list[EnvSetting] = []
    for cmd in commands(text):
        if not nested:
            for rule in hooks:
                rule.command(rec, cmd, posix_sh)
        settings += _settings(cmd, text)
        if not nested:
            _rewrite_strings(cmd, rec)
            for w in cmd.words:
                for rule in hooks:
                    rule.word(rec, w.value or w.source(text), w.start)
    environment.apply(settings, rec, lambda offset: "PJRT_DEVICE=" in text[:offset])
    if not nested:
        environment.ask_about_reads(text, 0, rec)
        for start, end in heredocs(text):
            for rule in hooks:
                rule.heredoc(rec, start, end)
            environment.ask_about_heredoc(rec, start, end)


# --- environment settings ------------------------------------------------------------------


def _settings(cmd: Command, text: str) -> list[EnvSetting]:
    """Every variable a command sets, unsets or passes on, as EnvSettings."""
    argv = cmd.argv()
    keywords = len(cmd.words) - len(argv)
    n_prefix = next((i for i, w in enumerate(argv) if w.assignment() is None), len(argv))
    prefix, args = argv[:n_prefix], argv[n_prefix:]
    out: list[EnvSetting] = []
    statement = None if keywords else _statement_delete(text, cmd, argv)

    def setting(w: Word, delete, form="set", scope="file", whole=None, advice_only=False) -> None:
        split = w.assignment(quoted_name=advice_only)
        name = split[0] if split else w.value
        rename = environment.replacing(w.start, w.end, with_value=form == "set")
        value = split[1].source(text) if split else None
        out.append(EnvSetting(name, w.start, rename, delete, form, scope, whole, value, advice_only))

    for w in _xla_dist_env(argv, text):
        setting(w, None, scope=id(cmd), advice_only=True)

    for k, w in enumerate(prefix):
        if args:
            delete = [Edit(w.start, argv[k + 1].start, "")]
        elif len(prefix) > 1:
            delete = [Edit(*without_word(prefix, k), "")]
        else:
            delete = statement
        setting(w, delete, scope=id(cmd) if args else "file", whole=None if args else statement)
    if not args:
        return out
    head = args[0].value
    if head == "sudo":
        # `sudo -E -u user VAR=value cmd`: its options, then settings for the command it runs
        k = 1
        while k < len(args) and (args[k].value or "").startswith("-"):
            k += 2 if args[k].value in _SUDO_OPTIONS_WITH_AN_ARGUMENT else 1
        while k < len(args) and args[k].assignment():
            setting(args[k], [Edit(args[k].start - len(args[k].gap), args[k].end, "")], scope=id(cmd))
            k += 1
        if k >= len(args):
            return out
        args, head = args[k:], args[k].value
    operands = [w for w in args[1:] if not (w.value or "").startswith("-")]
    if head in ("export", "declare", "typeset", "readonly", "unset", "env"):
        names = [w for w in operands if w.assignment() or NAME.fullmatch(w.value or "")]
        if head == "env":
            names = names[: next((i for i, w in enumerate(names) if not w.assignment()), len(names))]
        for w in names:
            alone = len(names) == 1 and head != "env"
            delete = statement if alone else [Edit(w.start - len(w.gap), w.end, "")]  # never the command word
            form = "unset" if head == "unset" else ("set" if w.assignment() else "pass")
            setting(
                w,
                delete,
                form=form,
                scope=id(cmd) if head == "env" else "file",
                whole=statement if head != "env" and len(names) == len(operands) else None,
            )
    elif head == "docker" and len(args) > 1 and args[1].value in ("run", "create", "exec"):
        for flag, w in zip(args, args[1:]):
            if flag.value in ("-e", "--env") and (w.assignment() or NAME.fullmatch(w.value or "")):
                setting(
                    w,
                    [Edit(flag.start - len(flag.gap), w.end, "")],
                    form="set" if w.assignment() else "pass",
                    scope=id(cmd),
                )
    return out


def _xla_dist_env(argv: list[Word], text: str) -> list[Word]:
    """The settings an xla_dist call passes to its workers (``--env X=1``): their rules advise
    on them in the step that takes env; launch-xla-dist carries them into the new launch."""
    invocation = xla_dist.find(argv)
    try:
        launch = xla_dist.parse(argv, invocation, text) if invocation else None
    except xla_dist.Untranslatable:
        return []
    return [w for w in launch.env if w.assignment(quoted_name=True)] if launch else []


_SUDO_OPTIONS_WITH_AN_ARGUMENT = frozenset({"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T"})


def _statement_delete(text: str, cmd: Command, argv: list[Word]) -> list[Edit] | None:
    """Edits removing a command that is alone on its line(s); None when it is not."""
    if not argv or cmd.joined_by:
        return None
    start, end = argv[0].start, cmd.end
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    after = text[end:line_end].strip()
    if text[line_start:start].strip() or (after and not after.startswith("#")):
        return None
    if line_start and text[: line_start - 1].rstrip(" \t").endswith(("\\", "&&", "||", "|")):
        return None
    return [Edit(line_start, min(line_end + 1, len(text)), "")]


# --- settings inside strings: echo "export XRT_TPU_CONFIG=…" >> ~/.bashrc, bash -c '…' ----


_OPTION_VALUE = re.compile(r"(--?[A-Za-z][\w-]*=)(.*)", re.S)


def _rewrite_strings(cmd: Command, rec: Recorder) -> None:
    """Settings inside a quoted word that is itself shell; the environment rules only."""
    text = rec.text
    for w in cmd.words:
        value = "".join(p.text for p in w.parts)  # an expansion (`${*@Q}`) as written: the shell inside reads it so
        if not environment.mentions(value) or w.assignment():
            continue
        source = w.source(text)
        # an option's value that is shell: gcloud ... --command="export XRT_TPU_CONFIG=...; python3 t.py"
        option = _OPTION_VALUE.match(value)
        prefix = option.group(1) if option and source.startswith(option.group(1)) else ""
        value, source = value[len(prefix) :], source[len(prefix) :]
        whole = _whole_values(value, w.start, rec)
        if whole is None:
            continue
        inner = Recorder(whole[0], rec.options)
        _apply(inner, nested=True)
        outcome = inner.outcome()
        if any(kept in outcome.text for kept in whole[1]):  # a rule kept it, quoted here: leave all as it was
            continue
        if outcome.text == value or w.expansions:  # (a rewrite would re-quote what the local shell expands)
            merge_into(rec, Outcome("", [], outcome.manual), rec.line(w.start) - 1)
            continue
        if source.startswith("'") and "'" not in outcome.text:
            new = f"'{outcome.text}'"
        elif source.startswith('"'):
            new = '"' + xla_dist.escape_double_quoted(outcome.text) + '"'
        else:
            new = shlex.quote(outcome.text)
        first, *rest = outcome.changes
        rec.change(first.rule, w.start, f"{first.message} (inside a quoted string)", Edit(w.start, w.end, prefix + new))
        merge_into(rec, Outcome("", rest, outcome.manual), rec.line(w.start) - 1)


# What follows the `;` that ends an XRT value's first part: 0;localhost:51011 (XRT_TPU_CONFIG),
# /job:… (XRT_DEVICE_MAP), grpc://… (XRT_WORKERS). No command starts so.
_XRT_VALUE_GOES_ON = re.compile(r";(?:\d+;|/job:|grpc://)")


def _whole_values(value: str, at: int, rec: Recorder) -> tuple[str, list[str]] | None:
    """``value`` (a quoted word's text) with each XRT setting that shell would cut short at an
    operator, where a KEY=VALUE reader (/etc/environment, a .env file: ``echo "X=a;0;b" >> …``)
    reads on to the next blank, quoted whole so the rules replace all of it; with those
    quoted settings. None when such a setting is not an XRT value going on (``X=a;python3
    t.py`` may be shell): it is reported, and the word is left as it is. Rewritten as shell,
    ``X=localservice;0;…`` became ``PJRT_DEVICE=TPU;0;…``, which torch_xla cannot start with."""
    words = {w.start: w for cmd in commands(value) for w in cmd.words}
    quoted, out = [], value
    for m in reversed(list(environment.SETTING.finditer(value))):
        w = words.get(m.start())
        blank = re.compile(r"[ \t\n]|$").search(value, m.end()).start()
        if w is None or w.end >= blank - 1:  # (`X="a;b"; cmd`: ended by a `;` and a blank, it is shell)
            continue
        raw = value[m.end() : blank]
        if not _XRT_VALUE_GOES_ON.match(value, w.end) or "'" in raw:
            rule = environment.rule_here(m.group(1), rec)
            if rule is not None and rec.on(rule.id, at):
                rec.decide(
                    rule.id,
                    at,
                    f"{m.group(1)} left as it is inside a quoted string: shell ends its value at "
                    f"`{value[w.end]}`, a KEY=VALUE file (/etc/environment, .env) reads on to the blank; "
                    "change it by hand",
                )
            return None
        quoted.append(f"{m.group()}'{raw}'")
        out = out[: m.end()] + f"'{raw}'" + out[blank:]
    return out, quoted
