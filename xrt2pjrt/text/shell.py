"""The shell rewriter (file kind "shell"), and the shell rules every text kind applies.

Dockerfile RUN lines, YAML commands, Markdown code blocks and notebook ``!`` lines are
shell too: their adapters hand those pieces to ``rewrite`` here.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
import shlex
import shutil
import subprocess

from xrt2pjrt.registry import Example, Options, Rule, register
from xrt2pjrt.rewriters import Outcome
from xrt2pjrt.text import environment, installs, xla_dist
from xrt2pjrt.text.edits import Edit, Recorder, leave_todo_comments, merge_into, todo_line
from xrt2pjrt.text.environment import EnvSetting
from xrt2pjrt.text.words import NAME, Command, Word, commands, heredocs, without_word
from xrt2pjrt.xrt_variables import XRT_ERA_PATTERN

TRIGGER = re.compile(r"xla_dist|xrt_run_server|" + XRT_ERA_PATTERN + "|" + installs.WORDS)


@register
class LaunchXlaDist(Rule):
    id = "launch-xla-dist"
    kind = "shell"
    # Unsafe: gcloud does not restart a run after TPU maintenance as xla_dist did, `~` and
    # conda resolve on the workers, "$@" no longer expands `$` there (see text/xla_dist.py).
    safe = False
    summary = ("python -m torch_xla.distributed.xla_dist → gcloud compute tpus tpu-vm ssh NAME "
               "--worker=all --command=\". /etc/profile; PJRT_DEVICE=TPU …\" (or `xrt2pjrt launch` with "
               "--launcher xrt2pjrt), every flag translated; continuations, pipes, quoting kept.")
    examples = (
        Example(
            "python3 -m torch_xla.distributed.xla_dist --tpu=$TPU_NAME --restart-tpuvm-pod-server "
            "--env XLA_USE_BF16=1 -- python3 train.py --model 'vit b/16' 2>&1 | tee log.txt\n",
            'gcloud compute tpus tpu-vm ssh $TPU_NAME --worker=all --command=". /etc/profile; PJRT_DEVICE=TPU '
            "XLA_USE_BF16=1 python3 train.py --model 'vit b/16'\" 2>&1 | tee log.txt\n",
        ),
        Example(
            "python -m torch_xla.distributed.xla_dist \\\n  --tpu=my-pod \\\n  --conda-env=torch-xla-1.13 \\\n"
            "  -- \\\n  python3 train.py \\\n    --lr 0.1\n",
            "gcloud compute tpus tpu-vm ssh my-pod --zone=us-central2-b --worker=all \\\n"
            '  --command=". /etc/profile; conda activate torch-xla-1.13 && PJRT_DEVICE=TPU python3 train.py \\\n'
            '    --lr 0.1"\n',
            options={"zone": "us-central2-b"},
        ),
        Example(
            "python3 -m torch_xla.distributed.xla_dist --tpu=pod --docker-image=gcr.io/p/img:r1.13 "
            "--docker-run-flag=--shm-size=16G -- python3 /app/train.py\n",
            'gcloud compute tpus tpu-vm ssh pod --worker=all --command=". /etc/profile; sudo docker run --rm '
            '--privileged --net=host -e PJRT_DEVICE=TPU --shm-size=16G gcr.io/p/img:r1.13 python3 /app/train.py"\n',
        ),
        Example(
            "python3 -m torch_xla.distributed.xla_dist --tpu=pod --restart-tpuvm-pod-server -- python3 train.py\n",
            "xrt2pjrt launch --tpu=pod -- python3 train.py\n",
            options={"launcher": "xrt2pjrt"},
        ),
        Example(
            'gcloud compute ssh vm --command "python3 -m torch_xla.distributed.xla_dist --tpu=pod -- python3 t.py"\n',
            todo_line(f"xla_dist inside another command's argument (`gcloud …`): translate it by hand to "
                      f"{xla_dist.BY_HAND}", "launch-xla-dist")
            + 'gcloud compute ssh vm --command "python3 -m torch_xla.distributed.xla_dist --tpu=pod -- python3 t.py"\n',
            manual=("inside",),
        ),
        Example(
            "python3 -m torch_xla.distributed.xla_dist --tpu=pod --vm=vm-0 -- python3 train.py\n",
            todo_line("xla_dist call left as it is: --vm names TPU-node VMs; TPU nodes run XRT only and have no PJRT "
                      "equivalent; translate it by hand", "launch-xla-dist")
            + "python3 -m torch_xla.distributed.xla_dist --tpu=pod --vm=vm-0 -- python3 train.py\n",
            manual=("--vm",),
        ),
    )


_SERVER = "torch_xla.core.xrt_run_server"
_NO_SERVER = (f"XRT's server ({_SERVER}) is gone from torch_xla 2.x, and PJRT needs none: this command fails "
              "(No module named ...); delete it")


@register
class XrtServer(Rule):
    id = "launch-xrt-server"
    kind = "shell"
    summary = f"python -m {_SERVER} (XRT's server, gone in 2.x; PJRT needs none): report"
    examples = (
        Example(
            f"python3 -m {_SERVER} --port 51011 --restart\npython3 train.py\n",
            todo_line(_NO_SERVER, "launch-xrt-server") + f"python3 -m {_SERVER} --port 51011 --restart\npython3 train.py\n",
            manual=("XRT's server",),
        ),
    )


def _ask_about_server(cmd: Command, rec: Recorder) -> None:
    argv = [w.value or w.source(rec.text) for w in cmd.argv()]
    if any(word == _SERVER and argv[k - 1] == "-m" for k, word in enumerate(argv) if k):
        rec.ask(XrtServer.id, cmd.argv()[0].start, _NO_SERVER)


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
        if text[line_start:cmd.start].strip() or (before >= 0 and text[before] == "\\"):
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
    text = rec.text
    settings: list[EnvSetting] = []
    for cmd in commands(text):
        if not nested and rec.options.on(LaunchXlaDist.id):
            _translate_launch(cmd, rec, posix_sh)
        if not nested and cmd.argv() and rec.options.on(XrtServer.id):
            _ask_about_server(cmd, rec)
        settings += _settings(cmd, text)
        if not nested:  # one level: a string inside a string is left alone
            _rewrite_strings(cmd, rec)
            for w in cmd.words:
                installs.ask(rec, w.value or w.source(text), w.start)
    environment.apply(settings, rec, lambda offset: "PJRT_DEVICE=" in text[:offset])
    if not nested:
        environment.ask_about_reads(text, 0, rec)
        _ask_about_heredocs(rec)


def _ask_about_heredocs(rec: Recorder) -> None:
    """A here-document is data to this rewriter, even when it writes a script: report it."""
    for start, end in heredocs(rec.text):
        body = rec.text[start:end]
        if xla_dist.MENTION.search(body) and rec.options.on(LaunchXlaDist.id):
            rec.ask(LaunchXlaDist.id, start, "xla_dist inside a here-document: translate it by hand")
        for m in environment.SETTING.finditer(body):
            rule = environment.rule_for(m.group(1))
            if rec.options.on(rule.id):
                rec.ask(rule.id, start + m.start(), f"{m.group(1)} set inside a here-document: change it by hand")


# --- xla_dist ------------------------------------------------------------------------------


def _translate_launch(cmd: Command, rec: Recorder, posix_sh: bool) -> None:
    text, argv = rec.text, cmd.argv()
    inv = xla_dist.find(argv)
    if inv is None:
        for w in argv:
            if xla_dist.MENTION.search(w.source(text)):
                rec.ask(LaunchXlaDist.id, w.start, "xla_dist inside another command's argument "
                        f"(`{argv[0].source(text)} …`): translate it by hand to {xla_dist.BY_HAND}")
                return
        return
    start, end = argv[inv.launcher].start, argv[inv.end - 1].end
    try:
        if any(start < r.start < end for r in cmd.redirects):
            raise xla_dist.Untranslatable("a redirection in the middle of the call")
        if any(re.match(r"\d*[<>]\(", text[r.start:]) for r in cmd.redirects):
            raise xla_dist.Untranslatable("a process substitution <(…) in the call")
        launch = xla_dist.parse(argv, inv, text)
        if posix_sh and any(xla_dist.brace_expansion(w) for w in launch.command):
            raise xla_dist.Untranslatable("sh passed {…} to xla_dist as it is, and the workers' bash would expand it")
        if rec.options.launcher == "xrt2pjrt":
            edits = _as_xrt2pjrt_launch(argv, inv, launch, rec)
        else:
            edits = [Edit(start, end, _as_gcloud(launch, text[start:end], rec))]
            if posix_sh and ("@Q}" in edits[0].text or "$(printf %q " in edits[0].text):
                raise xla_dist.Untranslatable("quoting this machine's values for the workers would need bash "
                                              "(printf %q, ${*@Q}), and this runs under sh")
    except xla_dist.Untranslatable as exc:
        hint = ""
        if re.match(r"[ \t]*\n[ \t]*--", text[cmd.end:]):
            hint = " (it seems to go on over the next line without a `\\`)"
        rec.ask(LaunchXlaDist.id, start, f"xla_dist call left as it is: {exc}{hint}; translate it by hand")
        return
    _ask_about_worker_expansions(launch, rec)
    notes = "".join(f"; dropped {flag} (no XRT server under PJRT)" for flag in dict.fromkeys(launch.ignored))
    if launch.docker_image:
        notes += "; the image must ship torch_xla 2.x"
    if rec.options.target == "shim" and rec.options.launcher != "xrt2pjrt":
        notes += ("; a new job secret for the shim's store each run, the same on every worker (XRT2PJRT_JOB_SECRET, "
                  "shown by `ps` here and on the workers: --launcher xrt2pjrt hands it over stdin)")
    target = "xrt2pjrt launch" if rec.options.launcher == "xrt2pjrt" else "gcloud … --worker=all"
    rec.change(LaunchXlaDist.id, start, f"xla_dist → {target} with PJRT_DEVICE=TPU{notes}", *edits)


def _ask_about_worker_expansions(launch: xla_dist.Launch, rec: Recorder) -> None:
    """Literal text with a `$` or a backquote, which xla_dist expanded again on each worker.
    The gcloud rewrite keeps that; a command run there (`$(…)`, backquotes) is reported.
    `xrt2pjrt launch` passes every word as it is given: any such text is reported."""
    xrt2pjrt = rec.options.launcher == "xrt2pjrt"
    words = [*launch.env, *launch.command, launch.conda_env, launch.docker_image, launch.docker_container]
    for w in words:
        literal = "".join(p.text for p in w.parts if not p.expansion) if w is not None else ""
        if xrt2pjrt and w is not None and w not in launch.env and xla_dist.WRAPPED.match(w.value or ""):
            rec.ask(LaunchXlaDist.id, w.start, f"{w.source(rec.text)}: xla_dist wrote it into the worker's script "
                    "as it is, so the worker's shell read it without its double quotes; `xrt2pjrt launch` passes "
                    "them too")
            continue
        if not re.search(r"[$`]", literal):
            continue
        source = w.source(rec.text)
        if not xrt2pjrt:
            if xla_dist.worker_runs(literal):
                rec.ask(LaunchXlaDist.id, w.start, f"{source} runs a command on each worker (xla_dist let the "
                        "worker's shell read it, and so does the rewrite): keep it only if that is meant")
        elif re.search(r"[$`]", xla_dist.DOUBLE_QUOTED.sub("", literal)):
            rec.ask(LaunchXlaDist.id, w.start, f"{source} expanded on each worker under xla_dist; `xrt2pjrt launch` "
                    "passes it as written: to have the worker's shell expand it, use --shell 'COMMAND'")
        else:
            rec.ask(LaunchXlaDist.id, w.start, f"{source}: under xla_dist the worker's shell dropped the `\\` "
                    "before `$` or a backquote; `xrt2pjrt launch` passes it as written")


def _as_gcloud(launch: xla_dist.Launch, span: str, rec: Recorder) -> str:
    options = rec.options
    header = xla_dist.gcloud_ssh(launch.tpu.source(rec.text), "all",
                                 xla_dist.quote_local(options.zone), xla_dist.quote_local(options.project))
    continued = re.search(r"\\\n([ \t]*)", span)
    joint = f" \\\n{continued.group(1)}" if continued else " "
    prelude = xla_dist.SECRET_HERE if options.target == "shim" else None
    body = xla_dist.as_shell_source(launch.worker_command(prelude=prelude))
    return " ".join(header) + joint + f'--command="{body}"'


def _as_xrt2pjrt_launch(argv: list[Word], inv: xla_dist.Invocation, launch: xla_dist.Launch,
                        rec: Recorder) -> list[Edit]:
    """Swap the launcher for `xrt2pjrt launch` and drop the XRT-only flags; keep the rest."""
    options = rec.options
    where = [f"--{k}={xla_dist.quote_local(v)}" for k, v in (("zone", options.zone), ("project", options.project)) if v]
    edits = [Edit(argv[inv.launcher].start, argv[inv.flags - 1].end, " ".join(["xrt2pjrt", "launch", *where]))]
    stop = inv.separator if inv.separator is not None else inv.end
    k = inv.flags
    while k < stop:
        w = argv[k]
        if not w.head.startswith("-"):  # the command, without `--`: xla_dist's flags may follow it
            k += 1
            continue
        flag, inline = xla_dist.flag_of(w)
        last = k + 1 if xla_dist.FLAGS[flag] and not inline else k
        if flag in xla_dist.XRT_ONLY:
            edits.append(Edit(w.start - len(w.gap), argv[last].end, ""))
        k = last + 1
    return edits


# --- environment settings ------------------------------------------------------------------


def _settings(cmd: Command, text: str) -> list[EnvSetting]:
    """Every variable a command sets, unsets or passes on, as EnvSettings."""
    argv = cmd.argv()
    keywords = len(cmd.words) - len(argv)
    n_prefix = next((i for i, w in enumerate(argv) if w.assignment() is None), len(argv))
    prefix, args = argv[:n_prefix], argv[n_prefix:]
    out: list[EnvSetting] = []
    statement = None if keywords else _statement_delete(text, cmd, argv)

    def setting(w: Word, delete, form="set", scope="file", whole=None) -> None:
        split = w.assignment()
        name = split[0] if split else w.value
        rename = environment.replacing(w.start, w.end, with_value=form == "set")
        value = split[1].source(text) if split else None
        out.append(EnvSetting(name, w.start, rename, delete, form, scope, whole, value))

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
            names = names[:next((i for i, w in enumerate(names) if not w.assignment()), len(names))]
        for w in names:
            alone = len(names) == 1 and head != "env"
            delete = statement if alone else [Edit(w.start - len(w.gap), w.end, "")]  # never the command word
            form = "unset" if head == "unset" else ("set" if w.assignment() else "pass")
            setting(w, delete, form=form, scope=id(cmd) if head == "env" else "file",
                    whole=statement if head != "env" and len(names) == len(operands) else None)
    elif head == "docker" and len(args) > 1 and args[1].value in ("run", "create", "exec"):
        for flag, w in zip(args, args[1:]):
            if flag.value in ("-e", "--env") and (w.assignment() or NAME.fullmatch(w.value or "")):
                setting(w, [Edit(flag.start - len(flag.gap), w.end, "")],
                        form="set" if w.assignment() else "pass", scope=id(cmd))
    return out


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
    if line_start and text[:line_start - 1].rstrip(" \t").endswith(("\\", "&&", "||", "|")):
        return None
    return [Edit(line_start, min(line_end + 1, len(text)), "")]


# --- settings inside strings: echo "export XRT_TPU_CONFIG=…" >> ~/.bashrc, bash -c '…' ----


_OPTION_VALUE = re.compile(r"(--?[A-Za-z][\w-]*=)(.*)", re.S)


def _rewrite_strings(cmd: Command, rec: Recorder) -> None:
    """Settings inside a quoted word that is itself shell; the environment rules only."""
    text = rec.text
    for w in cmd.words:
        value = w.value
        if value is None or not environment.mentions(value) or w.assignment():
            continue
        source = w.source(text)
        # an option's value that is shell: gcloud ... --command="export XRT_TPU_CONFIG=...; python3 t.py"
        option = _OPTION_VALUE.match(value)
        prefix = option.group(1) if option and source.startswith(option.group(1)) else ""
        value, source = value[len(prefix):], source[len(prefix):]
        whole = _whole_values(value, w.start, rec)
        if whole is None:
            continue
        inner = Recorder(whole[0], dataclasses.replace(rec.options, rules=rec.options.rules - {LaunchXlaDist.id}))
        _apply(inner, nested=True)
        outcome = inner.outcome()
        if any(kept in outcome.text for kept in whole[1]):  # a rule kept it, quoted here: leave all as it was
            continue
        if outcome.text == value:
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
        raw = value[m.end():blank]
        if not _XRT_VALUE_GOES_ON.match(value, w.end) or "'" in raw:
            rule = environment.rule_here(m.group(1), rec)
            if rule is not None and rec.on(rule.id, at):
                rec.ask(rule.id, at, f"{m.group(1)} left as it is inside a quoted string: shell ends its value at "
                        f"`{value[w.end]}`, a KEY=VALUE file (/etc/environment, .env) reads on to the blank; "
                        "change it by hand")
            return None
        quoted.append(f"{m.group()}'{raw}'")
        out = out[:m.end()] + f"'{raw}'" + out[blank:]
    return out, quoted
