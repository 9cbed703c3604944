"""torch_xla 2.1 removed xla_dist, XRT's pod launcher: it ran the command on every worker of the pod
with the XRT variables set, after (re)starting XRT's server there. Under PJRT every worker runs the
program itself, with PJRT_DEVICE=TPU; gcloud's ``--worker=all`` reaches them all (``xrt2pjrt
launch``, with ``--launcher xrt2pjrt``, also hands the shim's job secret over stdin). Every flag is
translated: ``--env`` into the worker's command, ``--conda-env`` into ``conda activate`` (reported
too: an env made for xla_dist holds torch_xla 1.x, XRT's, and a ``torch-xla-*`` env was the Compute
VM image's that drove a TPU node pod, which must become a TPU VM), ``--docker-image`` into a
``docker run`` on each worker; the XRT server's flags are dropped.

The fix is safe: the module is gone, so the old line cannot run on the target, and the new
one runs the same command, with the same words and the same expansions on each worker
(text/xla_dist.py spells out what expands where). Its one deliberate difference: a leading
``~`` or a glob written unquoted resolves on each worker, not on the launching machine, which
is the same path when the launch runs on the pod's first worker, as xla_dist's did. A call that
cannot be translated faithfully is left as it is, for a person. What plain gcloud does not
give back is xla_dist's resilience: it waited for the TPU to be healthy and restarted the run
on every worker after maintenance or a lost worker, up to 50 times. `xrt2pjrt launch` does
that too; where the rewrite writes gcloud, its change carries one line saying so.
"""

from __future__ import annotations

import re

from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.text import environment, xla_dist
from xrt2pjrt.recorder import Edit, Recorder
from xrt2pjrt.text.rule import TextRule
from xrt2pjrt.text.words import Command, Word


_AS_GCLOUD = "rewrite it as gcloud tpu-vm ssh by hand"

# What gcloud does not give back of xla_dist, and how to get it back (the change's caveat).
NO_RESTARTS = (
    "gcloud neither waits for a healthy TPU nor restarts after maintenance, as xla_dist did (50 tries): "
    "`xrt2pjrt launch` does (--launcher xrt2pjrt)"
)

# The envs of the Compute VM image whose instance group drove a TPU node pod, which xla_dist's
# --conda-env named (pytorch/xla's README at v1.8 and v1.11: /anaconda3/envs/torch-xla-1.10).
_CLIENT_VM_ENV = "torch-xla-"
_NODE_POD = (
    "; the env of the Compute VMs that drove a TPU node pod, which runs XRT only: gcloud's tpu-vm ssh "
    "needs the pod made a TPU VM (tpu-ubuntu2204-base), with torch_xla 2.x installed there"
)


class LaunchXlaDist(TextRule):
    id = "launch-xla-dist"
    words = ("xla_dist",)
    summary = "python -m torch_xla.distributed.xla_dist → gcloud … tpu-vm ssh --worker=all (or `xrt2pjrt launch`)"
    examples = (
        Example(
            "python3 -m torch_xla.distributed.xla_dist --tpu=$TPU_NAME --restart-tpuvm-pod-server "
            "--env XLA_USE_BF16=1 -- python3 train.py --model 'vit b/16' 2>&1 | tee log.txt\n",
            'gcloud compute tpus tpu-vm ssh $TPU_NAME --worker=all --command=". /etc/profile; PJRT_DEVICE=TPU '
            "XLA_USE_BF16=1 python3 train.py --model 'vit b/16'\" 2>&1 | tee log.txt\n",
        ),
        Example(
            dedent(r"""
                python -m torch_xla.distributed.xla_dist \
                  --tpu=my-pod \
                  --conda-env=torch-xla-1.13 \
                  -- \
                  python3 train.py \
                    --lr 0.1
            """),
            dedent(r"""
                # TODO(xrt2pjrt): use a TPU VM pod, not a TPU node [launch-xla-dist]
                gcloud compute tpus tpu-vm ssh my-pod --zone=us-central2-b --worker=all \
                  --command=". /etc/profile; conda activate torch-xla-1.13 && PJRT_DEVICE=TPU python3 train.py \
                    --lr 0.1"
            """),
            options={"zone": "us-central2-b"},
            manual=("torch_xla 1.x",),
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
            dedent("""
                # TODO(xrt2pjrt): translate xla_dist by hand to gcloud [launch-xla-dist]
                gcloud compute ssh vm --command "python3 -m torch_xla.distributed.xla_dist --tpu=pod -- python3 t.py"
            """),
            manual=("inside",),
        ),
        Example(
            "python3 -m torch_xla.distributed.xla_dist --tpu=pod --vm=vm-0 -- python3 train.py\n",
            dedent("""
                # TODO(xrt2pjrt): translate this xla_dist call by hand [launch-xla-dist]
                python3 -m torch_xla.distributed.xla_dist --tpu=pod --vm=vm-0 -- python3 train.py
            """),
            manual=("--vm",),
        ),
    )

    def command(self, rec, cmd, posix_sh):
        _translate_launch(cmd, rec, posix_sh)

    def heredoc(self, rec, start, end):
        if xla_dist.MENTION.search(rec.text[start:end]):
            rec.decide(
                self.id,
                start,
                "translate xla_dist by hand (here-document)",
                "xla_dist inside a here-document: translate it by hand",
            )

    def exec_form(self, rec, offset, keyword, body):
        if xla_dist.MENTION.search(body):
            rec.decide(
                self.id,
                offset,
                "use the shell form, then rerun",
                f"{keyword} in exec form (a JSON array) mentions XRT or xla_dist: rewrite it by hand, or use the "
                "shell form and run xrt2pjrt again",
            )

    def exec_array(self, rec, offset, key, words):
        if any(xla_dist.MENTION.search(w) or w == xla_dist.MODULE for w in words):
            rec.decide(
                self.id,
                offset,
                _AS_GCLOUD,
                f"xla_dist run from an exec array (`{key}: [...]`): write it as {xla_dist.BY_HAND} by hand",
            )

    def config(self, rec, what):
        for m in xla_dist.MENTION.finditer(rec.text):
            rec.decide(self.id, m.start(), _AS_GCLOUD, f"xla_dist in {what}: make it {xla_dist.BY_HAND} by hand")


def _translate_launch(cmd: Command, rec: Recorder, posix_sh: bool) -> None:
    text, argv = rec.text, cmd.argv()
    inv = xla_dist.find(argv)
    if inv is None:
        for w in argv:
            if xla_dist.MENTION.search(w.source(text)):
                rec.decide(
                    LaunchXlaDist.id,
                    w.start,
                    "translate xla_dist by hand to gcloud",
                    f"xla_dist inside another command's argument (`{argv[0].source(text)} …`): translate it by "
                    f"hand to {xla_dist.BY_HAND}",
                )
                return
        return
    start, end = argv[inv.launcher].start, argv[inv.end - 1].end
    try:
        if any(start < r.start < end for r in cmd.redirects):
            raise xla_dist.Untranslatable("a redirection in the middle of the call")
        if any(re.match(r"\d*[<>]\(", text[r.start :]) for r in cmd.redirects):
            raise xla_dist.Untranslatable("a process substitution <(…) in the call")
        launch = xla_dist.parse(argv, inv, text)
        if posix_sh and any(xla_dist.brace_expansion(w) for w in launch.command):
            raise xla_dist.Untranslatable("sh passed {…} to xla_dist as it is, and the workers' bash would expand it")
        if rec.options.launcher == "xrt2pjrt":
            edits = _as_xrt2pjrt_launch(argv, inv, launch, rec)
        else:
            edits = [Edit(start, end, _as_gcloud(launch, text[start:end], rec))]
            if posix_sh and ("@Q}" in edits[0].text or "$(printf %q " in edits[0].text):
                raise xla_dist.Untranslatable(
                    "quoting this machine's values for the workers would need bash "
                    "(printf %q, ${*@Q}), and this runs under sh"
                )
    except xla_dist.Untranslatable as exc:
        hint = ""
        if re.match(r"[ \t]*\n[ \t]*--", text[cmd.end :]):
            hint = " (it seems to go on over the next line without a `\\`)"
        rec.decide(
            LaunchXlaDist.id,
            start,
            "translate this xla_dist call by hand",
            f"xla_dist call left as it is: {exc}{hint}; translate it by hand",
        )
        return
    _ask_about_worker_expansions(launch, rec)
    _ask_about_env_settings(launch, rec)
    if launch.conda_env is not None:
        name = launch.conda_env.source(text)
        node = name.strip("'\"").startswith(_CLIENT_VM_ENV)
        rec.decide(
            LaunchXlaDist.id,
            launch.conda_env.start,
            "use a TPU VM pod, not a TPU node" if node else "install torch_xla 2.x in this conda env",
            xla_dist.conda_env_note(name) + (_NODE_POD if node else ""),
        )
    notes = "".join(f"; dropped {flag} (no XRT server under PJRT)" for flag in dict.fromkeys(launch.ignored))
    if launch.docker_image:
        notes += "; the image must ship torch_xla 2.x"
    if rec.options.target == "shim" and rec.options.launcher != "xrt2pjrt":
        notes += (
            f"; a new job secret for the shim's store each run, the same on every worker ({xla_dist.SECRET_ENV}, "
            "shown by `ps` here and on the workers: --launcher xrt2pjrt hands it over stdin)"
        )
    gcloud = rec.options.launcher != "xrt2pjrt"
    target = "gcloud … --worker=all" if gcloud else "xrt2pjrt launch"
    rec.change(
        LaunchXlaDist.id,
        start,
        f"xla_dist → {target} with PJRT_DEVICE=TPU{notes}",
        *edits,
        caveat=NO_RESTARTS if gcloud else "",
    )


def _ask_about_env_settings(launch: xla_dist.Launch, rec: Recorder) -> None:
    """The ``--env`` settings carried into the workers' command, asked of the env rules as any
    setting is: one a rule keeps with an item (XLA_USE_BF16, which 2.9 warns about) gets it here."""
    for w in launch.env:
        name, _, value = (w.value or "").partition("=")
        rule = environment.rule_here(name, rec)
        if rule is not None:
            _, note = rule.choose(
                environment.EnvSetting(name, w.start, lambda *_: [], None, value=value), rec.options.target_version
            )
            if note:
                rec.decide(rule.id, w.start, note.do, note.more)


def _ask_about_worker_expansions(launch: xla_dist.Launch, rec: Recorder) -> None:
    """Literal text with a `$` or a backquote, which xla_dist expanded again on each worker.
    The gcloud rewrite keeps that; a command run there (`$(…)`, backquotes) is reported.
    `xrt2pjrt launch` passes every word as it is given: any such text is reported."""
    xrt2pjrt = rec.options.launcher == "xrt2pjrt"
    words = [*launch.env, *launch.command, launch.conda_env, launch.docker_image, launch.docker_container]
    for w in words:
        literal = "".join(p.text for p in w.parts if not p.expansion) if w is not None else ""
        if xrt2pjrt and w is not None and w not in launch.env and xla_dist.WRAPPED.match(w.value or ""):
            rec.decide(
                LaunchXlaDist.id,
                w.start,
                "remove the double quotes if unwanted",
                f"{w.source(rec.text)}: xla_dist wrote it into the worker's script "
                "as it is, so the worker's shell read it without its double quotes; `xrt2pjrt launch` passes "
                "them too",
            )
            continue
        if not re.search(r"[$`]", literal):
            continue
        source = w.source(rec.text)
        if not xrt2pjrt:
            if xla_dist.worker_runs(literal):
                rec.decide(
                    LaunchXlaDist.id,
                    w.start,
                    "keep it only if each worker should run it",
                    f"{source} runs a command on each worker (xla_dist let the "
                    "worker's shell read it, and so does the rewrite): keep it only if that is meant",
                )
        elif re.search(r"[$`]", xla_dist.DOUBLE_QUOTED.sub("", literal)):
            rec.decide(
                LaunchXlaDist.id,
                w.start,
                "use --shell 'COMMAND' to expand it there",
                f"{source} expanded on each worker under xla_dist; `xrt2pjrt launch` "
                "passes it as written: to have the worker's shell expand it, use --shell 'COMMAND'",
            )
        else:
            rec.decide(
                LaunchXlaDist.id,
                w.start,
                "remove the `\\` the worker's shell dropped",
                f"{source}: under xla_dist the worker's shell dropped the `\\` "
                "before `$` or a backquote; `xrt2pjrt launch` passes it as written",
            )


def _as_gcloud(launch: xla_dist.Launch, span: str, rec: Recorder) -> str:
    options = rec.options
    header = xla_dist.gcloud_ssh(
        launch.tpu.source(rec.text), "all", xla_dist.quote_local(options.zone), xla_dist.quote_local(options.project)
    )
    continued = re.search(r"\\\n([ \t]*)", span)
    joint = f" \\\n{continued.group(1)}" if continued else " "
    prelude = xla_dist.SECRET_HERE if options.target == "shim" else None
    body = xla_dist.as_shell_source(launch.worker_command(prelude=prelude))
    return " ".join(header) + joint + f'--command="{body}"'


def _as_xrt2pjrt_launch(
    argv: list[Word], inv: xla_dist.Invocation, launch: xla_dist.Launch, rec: Recorder
) -> list[Edit]:
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
