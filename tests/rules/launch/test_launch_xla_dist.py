"""launch-xla-dist beyond its examples: the rewritten scripts run on a simulated pod.

Each XRT-era script runs with a simulation of torch_xla 1.13's xla_dist
(tests/stand_ins/xla_dist_1_13) and its rewrite with the stand-in gcloud
(tests/stand_ins/gcloud), both on the same simulated pod, and the tests compare what every
worker ran: its argv word for word, its environment, and the exit status.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from _hostile import hostile_words
from stand_ins.pod import Pod, XLA_DIST_1_13, set_up, statements
from xrt2pjrt.text import shell
from text_migrate import rewrite_shell as rewrite, without_todos

FIXTURES = Path(__file__).parents[2] / "fixtures" / "text" / "shell"


# What a worker sees that is not the command's own doing.
PLUMBING = ("PWD", "SHLVL", "_", "HOME", "PATH", "TPU_WORKER_ID")


def _own_env(env: dict[str, str]) -> dict[str, str]:
    return {
        k: v
        for k, v in env.items()
        if not k.startswith(("XRT_", "STAND_IN_")) and k not in PLUMBING and k != "PJRT_DEVICE"
    }


def _run_both(tmp_path: Path, before: str, after: str, workers: int = 4, **env):
    """Run the XRT-era script under simulated xla_dist and its rewrite under the stand-in gcloud."""
    old, new = Pod(tmp_path / "xrt", workers), Pod(tmp_path / "pjrt", workers)
    env.setdefault("TPU_NAME", "my-pod")
    # the path form of xla_dist names a file of the old wheel: point it at the simulation
    before = before.replace(
        "/usr/share/torch-xla-1.13/pytorch/xla/torch_xla/distributed/xla_dist.py",
        str(XLA_DIST_1_13 / "torch_xla" / "distributed" / "xla_dist.py"),
    )
    tail = "wait\n" if "&\n" in before else ""  # a backgrounded launch: wait for it
    ran_old = old.run_script(before + tail, **env)
    ran_new = new.run_script(after + tail, **env)
    return (old, ran_old), (new, ran_new)


TRANSLATED = ["pod_launch", "no_space_backslash", "path_form", "abbreviated_flags", "no_separator"]


@pytest.mark.parametrize("name", TRANSLATED)
def test_every_worker_runs_the_same_words_with_pjrt(tmp_path, name):
    before = (FIXTURES / f"{name}.sh").read_text()
    after = rewrite(before).text
    (old, ran_old), (new, ran_new) = _run_both(tmp_path, before, after)
    assert ran_old.returncode == ran_new.returncode == 0, (ran_old.stderr, ran_new.stderr)
    old_calls, new_calls = old.calls(), new.calls()
    assert sorted(new_calls) == [0, 1, 2, 3], "the command ran on every worker"
    for worker in range(4):
        assert [c.argv for c in new_calls[worker]] == [c.argv for c in old_calls[worker]]
        for o, n in zip(old_calls[worker], new_calls[worker]):
            if n.argv[0] == "conda":
                continue  # `conda activate` runs before the variables are set, and needs none
            assert n.env.get("PJRT_DEVICE") == "TPU"
            assert not any(k.startswith("XRT_") for k in n.env)
            assert _own_env(n.env) == _own_env(o.env)
    # gcloud got the TPU name the script's variable held, and ran on all workers
    ssh = [c for c in new.gcloud_calls() if c[3] == "ssh"]
    assert len(ssh) == 1 and "--worker=all" in ssh[0]


def test_pod_launch_details_survive(tmp_path):
    """The user's `$VAR`s expand where they did, quoted words stay one word, the pipe stays."""
    before = (FIXTURES / "pod_launch.sh").read_text()
    after = rewrite(before).text
    (old, _), (new, ran) = _run_both(tmp_path, before, after)
    for worker, calls in new.calls().items():
        (call,) = calls
        assert call.argv == [
            "python3",
            "train.py",
            "--model",
            "vit b/16",
            "--out_dir",
            "gs://bucket/run-1/ckpt",  # expanded locally, as before
            "--log_dir",
            f"/home/worker-{worker}/logs",
        ]  # on the worker
        assert call.env["TRAIN_DEBUG"] == "1"
        assert call.env["XLA_FLAGS"] == "--xla_dump_to=/tmp/dump --xla_dump_hlo_as_text"
    assert new.gcloud_calls()[0][4] == "my-pod"
    assert "python3 ran on worker 3" in (new.root / "train.log").read_text()


def test_unquoted_expansion_still_splits_into_words(tmp_path):
    before = (FIXTURES / "path_form.sh").read_text()
    (old, _), (new, _) = _run_both(tmp_path, before, rewrite(before).text)
    assert new.calls()[0][0].argv == ["python3", "train.py", "--epochs", "2", "--lr", "0.1", "data/*.csv"]


def test_failing_worker_fails_the_script_as_before(tmp_path):
    before = "python3 -m torch_xla.distributed.xla_dist --tpu=pod -- python3 train.py\n"
    after = rewrite(before).text
    (_, ran_old), (new, ran_new) = _run_both(tmp_path, before, after, STAND_IN_EXIT_2="7")
    assert ran_old.returncode == ran_new.returncode == 7
    assert sorted(new.calls()) == [0, 1, 2, 3]


def test_docker_runs_the_image_with_pjrt_on_every_worker(tmp_path):
    before = (FIXTURES / "docker.sh").read_text()
    (old, ran_old), (new, ran_new) = _run_both(tmp_path, before, rewrite(before).text)
    assert ran_new.returncode == 0, ran_new.stderr
    image_and_command = ["gcr.io/tpu-pytorch/xla:r1.13_3.8_tpuvm", "python3", "/app/train.py", "--batch_size=128"]
    for worker in range(4):
        (xrt_docker,) = old.calls()[worker]
        (pjrt_docker,) = new.calls()[worker]
        assert xrt_docker.argv[-4:] == pjrt_docker.argv[-4:] == image_and_command
        args = pjrt_docker.argv
        assert args[:6] == ["docker", "run", "--rm", "--privileged", "--net=host", "-e"]
        assert "PJRT_DEVICE=TPU" in args and "TRAIN_DEBUG=1" in args
        assert ["--shm-size=16G", "--volume=/data:/data", "--name", "trainer"] == args[9:13]
    assert new.gcloud_calls()[0][4] == "pod-v4-32"


def test_conda_is_activated_before_the_command(tmp_path):
    """`conda activate` is a shell function that /etc/profile defines (the simulated worker's
    profile does as conda's profile.d script does); over ssh only the command reads it."""
    before = (FIXTURES / "abbreviated_flags.sh").read_text()
    (old, _), (new, ran) = _run_both(tmp_path, before, rewrite(before).text)
    assert ran.returncode == 0, ran.stderr
    for pod in (old, new):
        conda, python = pod.calls()[1]
        assert conda.argv == ["conda", "activate", "torch-xla"]
        assert python.argv == ["python3", "train.py", "--epochs", "1"] and python.env["MSG"] == "hello world"
        assert python.env["CONDA_DEFAULT_ENV"] == "torch-xla", "the program runs in the environment"


@pytest.mark.parametrize("name", ["pod_launch", "abbreviated_flags", "docker"])
def test_the_workers_environment_is_set_up_as_xla_dist_set_it_up(tmp_path, name):
    """xla_dist's script read /etc/profile "for non-interactive non-login shell over ssh" before
    conda, docker or the command: the gcloud command does the same, in the same words."""
    before = (FIXTURES / f"{name}.sh").read_text()
    (old, _), (new, ran) = _run_both(tmp_path, before, rewrite(before).text)
    assert ran.returncode == 0, ran.stderr
    for worker in range(4):
        (xla_dist,), (gcloud,) = old.commands()[worker], new.commands()[worker]
        assert set_up(gcloud) == set_up(xla_dist)
        assert statements(gcloud)[0] == [".", "/etc/profile"], "first, as xla_dist after its XRT exports"
        program = new.calls()[worker][-1]
        if program.argv[0] != "docker":  # docker: the container's environment is its own
            assert program.env["STAND_IN_PROFILE_READ"] == "1"


@pytest.mark.parametrize("name", ["pod_launch", "docker"])
def test_for_the_shim_every_worker_gets_the_same_new_job_secret(tmp_path, name):
    """--target shim: the shim's store on a pod lets in only the holders of the job's secret.
    The gcloud line makes one when it runs, on this machine: the same on every worker, a new
    one each run; docker gets it by name (sudo keeps it). The trade-off, said in the change's
    message: it is on the command line each worker's shell runs."""
    before = (FIXTURES / f"{name}.sh").read_text()
    outcome = rewrite(before, target="shim")
    (change,) = [c for c in outcome.changes if c.rule == "launch-xla-dist"]
    assert "shown by `ps` here and on the workers: --launcher xrt2pjrt hands it over stdin" in change.message
    secrets = []
    for run in range(2):
        (_, _), (new, ran) = _run_both(tmp_path / str(run), before, outcome.text)
        assert ran.returncode == 0, ran.stderr
        programs = [new.calls()[worker][-1] for worker in range(4)]
        (secret,) = {p.env["XRT2PJRT_JOB_SECRET"] for p in programs}
        assert len(secret) == 64 and not any(secret in " ".join(p.argv) for p in programs)
        if name == "docker":
            assert all(p.argv[5:9] == ["-e", "PJRT_DEVICE=TPU", "-e", "XRT2PJRT_JOB_SECRET"] for p in programs)
        secrets.append(secret)
    assert secrets[0] != secrets[1]
    assert "XRT2PJRT_JOB_SECRET" not in rewrite(before).text, "the native target needs none"


@pytest.mark.parametrize(
    "word",
    [
        "a b",
        "it's",
        "back\\slash",
        "tab\there",
        "*.csv",
        "$(echo sub)",
        "$HOME/x",
        "`echo tick`",
        "semi;colon",
        "a&b|c",
        "{x,y}",
        "~/path",
        "",
    ],
)
def test_any_literal_word_reaches_the_worker_as_under_xla_dist(tmp_path, word):
    """A word given literally (single quotes) is seen by each worker as xla_dist made it seen."""
    call = f"python3 -m torch_xla.distributed.xla_dist --tpu=pod -- python3 t.py {shlex.quote(word)}\n"
    after = rewrite(call).text
    (old, _), (new, _) = _run_both(tmp_path, call, after)
    assert new.calls()[1][0].argv == old.calls()[1][0].argv
    assert len(new.calls()[1][0].argv) == 3


def test_an_escaped_dollar_or_backquote_stays_literal_on_the_worker_as_under_xla_dist(tmp_path):
    """`'a\\$HOME'` was how a script passed a literal `$` through xla_dist's double quotes: the
    worker got `a$HOME`. The rewrite had kept the backslash and let `$HOME` (or a backquoted
    command) expand there; a word already in double quotes was read without them."""
    call = (
        "python3 -m torch_xla.distributed.xla_dist --tpu=pod -- python3 t.py "
        "'a\\$HOME' 'b\\`echo ran\\`' 'c\\\\$HOME' '\"q r\"'\n"
    )
    outcome = rewrite(call)
    assert not outcome.manual, "an escaped backquote runs nothing, and an unescaped `$` is no command"
    (old, _), (new, _) = _run_both(tmp_path, call, outcome.text, workers=2)
    assert (
        new.calls()[1][0].argv
        == old.calls()[1][0].argv
        == ["python3", "t.py", "a$HOME", "b`echo ran`", "c\\/home/worker-1", "q r"]
    )


def test_the_xrt2pjrt_launcher_reports_the_words_it_passes_otherwise():
    """`xrt2pjrt launch` passes each word as given: where xla_dist's worker read it otherwise
    (an escaped `$`, a word in double quotes), an item says what xla_dist did."""
    outcome = rewrite(
        "python3 -m torch_xla.distributed.xla_dist --tpu=pod -- t.py 'a\\$HOME' '\"q r\"'\n", launcher="xrt2pjrt"
    )
    assert [m.detail.split(":", 1)[1] for m in outcome.manual] == [
        " under xla_dist the worker's shell dropped the `\\` before `$` or a backquote; `xrt2pjrt launch` passes it "
        "as written",
        " xla_dist wrote it into the worker's script as it is, so the worker's shell read it without its double "
        "quotes; `xrt2pjrt launch` passes them too",
    ]


def test_a_backquote_escaped_twice_still_runs_and_is_reported():
    outcome = rewrite("python3 -m torch_xla.distributed.xla_dist --tpu=pod -- t.py 'a\\\\`hostname`'\n")
    (item,) = outcome.manual
    assert "runs a command on each worker" in item.detail


def test_words_starting_and_ending_with_a_double_quote_that_are_not_one_string_are_left():
    text = """python3 -m torch_xla.distributed.xla_dist --tpu=pod -- t.py '"a" "b"'\n"""
    outcome = rewrite(text)
    assert without_todos(outcome.text) == text and "as shell, unquoted" in outcome.manual[0].detail


def test_a_double_quote_in_a_word_survives(tmp_path):
    """xla_dist broke such a word (it wrapped it in bare double quotes); the rewrite keeps it."""
    call = """python3 -m torch_xla.distributed.xla_dist --tpu=pod -- python3 t.py 'say "hi"'\n"""
    pod = Pod(tmp_path)
    pod.run_script(rewrite(call).text)
    assert pod.calls()[0][0].argv == ["python3", "t.py", 'say "hi"']


def test_xrt2pjrt_launcher_runs_the_same_words(tmp_path):
    before = (FIXTURES / "pod_launch.sh").read_text()
    after = rewrite(before, launcher="xrt2pjrt", zone="us-central1-a").text
    xrt2pjrt = shutil.which("xrt2pjrt", path=str(Path(sys.executable).parent))
    assert xrt2pjrt, "xrt2pjrt is installed next to the test interpreter"
    old, new = Pod(tmp_path / "xrt"), Pod(tmp_path / "pjrt")
    old.run_script(before, TPU_NAME="my-pod")
    new.env["PATH"] = f"{Path(xrt2pjrt).parent}:{new.env['PATH']}"
    ran = new.run_script(after, TPU_NAME="my-pod")
    assert ran.returncode == 0
    # the same words, but `xrt2pjrt launch` passes '$HOME/logs' as written (reported: --shell expands)
    literal = {w: [c.argv[:-1] + ["$HOME/logs"] for c in cs] for w, cs in old.calls().items()}
    assert {w: [c.argv for c in cs] for w, cs in new.calls().items()} == literal
    assert "[worker 2] python3 ran on worker 2" in (new.root / "train.log").read_text()
    assert {c[5] for c in new.gcloud_calls() if c[3] == "ssh"} == {"--zone=us-central1-a"}


EXAMPLE = Path(__file__).parents[3] / "examples" / "legacy_mnist" / "run_pod.sh"


def test_example_pod_script_runs_the_same_training_on_every_worker(tmp_path):
    """examples/legacy_mnist/run_pod.sh: its own arguments ("$@") reach every worker word for
    word. Two documented differences: `~` is the worker's home now (xla_dist passed the local
    one), and a `$` inside an argument no longer expands on the worker."""
    before = EXAMPLE.read_text()
    after = rewrite(before).text
    args = ["--epochs", "5", "--note", "two words", "$HOME"]
    old, new = Pod(tmp_path / "xrt"), Pod(tmp_path / "pjrt")
    ran_old = old.run(["bash", "-c", before, "run_pod.sh", *args], TPU_NAME="my-v3-32", HOME="/home/me")
    ran_new = new.run(["bash", "-c", after, "run_pod.sh", *args], TPU_NAME="my-v3-32", HOME="/home/me")
    assert ran_old.returncode == ran_new.returncode == 0, ran_new.stderr
    for worker in range(4):
        (o,), (n,) = old.calls()[worker], new.calls()[worker]
        tail = ["--batch-size", "64", "--checkpoint", f"/home/worker-{worker}/legacy_mnist/model.pt", *args[:-1]]
        assert o.argv == ["python3", "/home/me/legacy_mnist/train.py", *tail, f"/home/worker-{worker}"]
        assert n.argv == ["python3", f"/home/worker-{worker}/legacy_mnist/train.py", *tail, "$HOME"]
        assert (n.env["PJRT_DEVICE"], n.env["XLA_USE_BF16"], n.env["XLA_IR_DEBUG"]) == ("TPU", "1", "0")
    assert "[" not in (new.root / "logs" / "train.log").read_text()  # gcloud's own output, unprefixed
    assert (new.root / "logs" / "train.log").read_text().count("python3 ran on worker") == 4


# Printable characters a user's argument may hold; `$` and backquotes are left out only because
# xla_dist (simulated here) would run them as commands on the "workers" of this test machine.
_ARG_CHARS = "".join(c for c in map(chr, range(32, 127)) if c not in '$`"') + "\t\n é"


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(args=st.lists(st.text(alphabet=_ARG_CHARS, max_size=12), min_size=1, max_size=4))
@example(args=["\\", "a\\\\b", "new\nline", "it's", ""])
def test_any_arguments_reach_every_worker_word_for_word(tmp_path_factory, args):
    """Property: whatever literal arguments a script passes after `--`, each worker runs exactly
    those words after the rewrite (stand-in gcloud), as it did before (simulated xla_dist) —
    where xla_dist managed: its bare double quotes ate backslashes (and broke on a final one)."""
    call = "python3 -m torch_xla.distributed.xla_dist --tpu=pod -- python3 t.py " + shlex.join(args) + "\n"
    outcome = rewrite(call)
    assert shell.check(outcome.text) is None and outcome.changes
    (old, _), (new, _) = _run_both(tmp_path_factory.mktemp("case"), call, outcome.text, workers=2)
    assert new.calls()[1][0].argv == ["python3", "t.py", *args]
    if not any("\\" in a for a in args):
        assert old.calls()[1][0].argv == ["python3", "t.py", *args]


def test_array_arguments_reach_every_worker(tmp_path):
    before = (
        'ARGS=(--epochs 2 --note "a b")\n'
        'python3 -m torch_xla.distributed.xla_dist --tpu=pod -- python3 t.py "${ARGS[@]}"\n'
    )
    after = rewrite(before).text
    assert "${ARGS[*]@Q}" in after
    (old, _), (new, _) = _run_both(tmp_path, before, after, workers=2)
    assert new.calls()[1][0].argv == old.calls()[1][0].argv == ["python3", "t.py", "--epochs", "2", "--note", "a b"]


@pytest.mark.parametrize(
    "words",
    [
        '"$*"',
        "$*",
        "$@",
        '"$@"',
        '"${ARGS[*]}"',
        "${ARGS[@]}",
        "${ARGS[*]}",
        '"${ARGS[@]}"',
        '"${@:2}"',
        '"${ARGS[@]:1}"',
        '"x$@"',
        'pre$*',
        '"pre$*"',
    ],
)
def test_script_arguments_and_arrays_make_the_words_they_made_for_xla_dist(tmp_path, words):
    """Only "$@" and "${ARGS[@]}" are a word per element; "$*" and "${ARGS[*]}" are one word,
    and unquoted they split. The rewrite had made a word per element of each of them."""
    script = (
        f'ARGS=(--lr "0.1 0.2" x)\npython3 -m torch_xla.distributed.xla_dist --tpu=pod -- python3 t.py {words} end\n'
    )
    after = rewrite(script).text
    assert "gcloud" in after and "xla_dist" not in after
    args = ["a1", "a 2", "", "b;c"]
    old, new = Pod(tmp_path / "xrt", 2), Pod(tmp_path / "pjrt", 2)
    for pod, text in ((old, script), (new, after)):
        ran = pod.run(["bash", "-c", text, "script.sh", *args])
        assert ran.returncode == 0, ran.stderr
    assert new.calls()[1][0].argv == old.calls()[1][0].argv


def test_bash_c_with_the_scripts_arguments_runs_them_all(tmp_path):
    """`-- bash -c "$*"`: the worker ran one command line; the rewrite had given bash -c its first word only."""
    script = 'python3 -m torch_xla.distributed.xla_dist --tpu=pod -- bash -c "$*"\n'
    pod = Pod(tmp_path, 2)
    assert pod.run(["bash", "-c", rewrite(script).text, "s", "python3", "t.py", "--lr", "0.1"]).returncode == 0
    assert pod.calls()[1][0].argv == ["python3", "t.py", "--lr", "0.1"]


def test_brace_expansion_makes_the_words_it_made_for_xla_dist(tmp_path):
    """The local bash expanded `{a,b}` before xla_dist ran; the rewrite had passed it to the
    worker in quotes, as one literal word."""
    call = (
        "V='v w'\npython3 -m torch_xla.distributed.xla_dist --tpu=pod -- python3 t.py "
        "{a,b} pre{1..3} x{1,2}'y z' \"$V\"{p,q} '{c,d}' {}\n"
    )
    outcome = rewrite(call)
    assert not outcome.manual and "xla_dist" not in outcome.text
    (old, _), (new, _) = _run_both(tmp_path, call, outcome.text, workers=2)
    assert (
        new.calls()[1][0].argv
        == old.calls()[1][0].argv
        == ["python3", "t.py", "a", "b", "pre1", "pre2", "pre3", "x1y z", "x2y z", "v wp", "v wq", "{c,d}", "{}"]
    )


@pytest.mark.parametrize(
    "call",
    [
        "python3 -m torch_xla.distributed.xla_dist --tpu=pod -- t.py {'a b',c}",  # braces around quotes
        "python3 -m torch_xla.distributed.xla_dist --tpu=pod-{1,2} -- t.py",  # two --tpu words
        "python3 -m torch_xla.distributed.xla_dist --tpu=pod --env A={x,y} -- t.py",  # --env A=x A=y
        "#!/bin/sh\npython3 -m torch_xla.distributed.xla_dist --tpu=pod -- t.py {a,b}",  # sh: literal, bash: two words
        "python3 -m torch_xla.distributed.xla_dist --tpu=pod -- t.py <(echo x) a",  # the line ends at `<(` for the rewriter
    ],
)
def test_braces_and_process_substitution_it_cannot_follow_are_left_for_a_person(call):
    outcome = rewrite(call + "\n")
    assert without_todos(outcome.text) == call + "\n" and not outcome.changes
    (item,) = outcome.manual
    assert item.detail.startswith("xla_dist call left as it is")


def test_xla_dist_flags_after_the_command_without_a_separator_are_still_xla_dists(tmp_path):
    """Without `--`, argparse read a flag after the command as xla_dist's own: the rewrite had
    given `--env FOO=1` to the program."""
    call = "python3 -m torch_xla.distributed.xla_dist --tpu pod python3 t.py --env FOO=1 --restart-tpuvm-pod-server\n"
    outcome = rewrite(call)
    assert not outcome.manual and "dropped --restart-tpuvm-pod-server" in outcome.changes[0].message
    (old, _), (new, _) = _run_both(tmp_path, call, outcome.text, workers=2)
    (o,), (n,) = old.calls()[1], new.calls()[1]
    assert n.argv == o.argv == ["python3", "t.py"] and n.env["FOO"] == o.env["FOO"] == "1"
    assert rewrite(call, launcher="xrt2pjrt").text == "xrt2pjrt launch --tpu pod python3 t.py --env FOO=1\n"
    dash = "python3 -m torch_xla.distributed.xla_dist --tpu pod python3 t.py - -1 --env FOO=1\n"
    assert "PJRT_DEVICE=TPU FOO=1 python3 t.py - -1\"" in rewrite(dash).text, "argparse's positionals"


@pytest.mark.parametrize("call", ["--tpu pod python3 t.py --lr 0.1", "--tpu pod python3 t.py --env A=1 more"])
def test_words_xla_dist_refused_after_the_command_are_left_for_a_person(call):
    text = f"python3 -m torch_xla.distributed.xla_dist {call}\n"
    outcome = rewrite(text)
    assert without_todos(outcome.text) == text
    assert outcome.manual[0].detail.startswith("xla_dist call left as it is")


def test_script_arguments_under_sh_are_left_for_a_person():
    """${*@Q} is bash; a #!/bin/sh script (or a Dockerfile RUN) cannot use it."""
    text = '#!/bin/sh\npython3 -m torch_xla.distributed.xla_dist --tpu=pod -- python3 t.py "$@"\n'
    outcome = rewrite(text)
    assert without_todos(outcome.text) == text
    assert "would need bash" in outcome.manual[0].detail


def test_values_of_this_machine_reach_the_workers_as_words_and_run_nothing(tmp_path):
    """A variable's value is expanded by the local shell, as for xla_dist, and arrives on every
    worker as the word it was: xla_dist (and the rewrite before) let the worker's shell read
    it again, so `;`, quotes and `$(…)` in a value ran there."""
    canary = tmp_path / "canary"
    canary.mkdir()
    values = hostile_words(canary)
    assignments = "".join(f"V{i}={shlex.quote(v)}\n" for i, v in enumerate(values))
    quoted = " ".join(f'"$V{i}" "${{V{i}}}/tail"' for i in range(len(values)))
    env = " ".join(f'--env "E{i}=$V{i}"' for i in range(len(values)))
    unquoted = "U='a  b;c $(touch " + str(canary) + "/split) d'\n"
    script = (
        assignments
        + unquoted
        + f"python3 -m torch_xla.distributed.xla_dist --tpu=pod {env} -- python3 t.py {quoted} $U\n"
    )
    outcome = rewrite(script)
    assert shell.check(outcome.text) is None and [c.rule for c in outcome.changes] == ["launch-xla-dist"]
    pod = Pod(tmp_path / "pod", workers=2)
    ran = pod.run_script(outcome.text)
    assert ran.returncode == 0, ran.stderr
    expected = [w for v in values for w in (v, v + "/tail")] + ["a", "b;c", "$(touch", f"{canary}/split)", "d"]
    for worker in (0, 1):
        (call,) = pod.calls()[worker]
        assert call.argv == ["python3", "t.py", *expected]
        assert [call.env[f"E{i}"] for i in range(len(values))] == values
    assert list(canary.iterdir()) == [], "a value ran as a command"


def test_a_command_substitution_written_for_the_workers_is_kept_and_reported():
    """'$(hostname)' reached xla_dist literally and ran on every worker; the rewrite keeps
    that meaning (a `$` written for the worker still expands there) and says so."""
    outcome = rewrite("python3 -m torch_xla.distributed.xla_dist --tpu=pod -- python3 t.py --log '/logs/$(hostname)'\n")
    assert "\\\"/logs/\\$(hostname)\\\"" in outcome.text
    (item,) = outcome.manual
    assert "runs a command on each worker" in item.detail


def test_a_word_with_a_value_and_a_glob_matches_here_as_for_xla_dist(tmp_path):
    pod = Pod(tmp_path / "pod", workers=2)
    (pod.root / "data").mkdir()
    for name in ("a.csv", "b c.csv"):
        (pod.root / "data" / name).write_text("")
    script = (
        'DIR=data\nEMPTY=\n'
        'python3 -m torch_xla.distributed.xla_dist --tpu=pod -- python3 t.py "$DIR"/*.csv $EMPTY --lr=$DIR\n'
    )
    outcome = rewrite(script)
    assert not outcome.manual and shell.check(outcome.text) is None
    assert pod.run_script(outcome.text).returncode == 0
    assert pod.calls()[1][0].argv == ["python3", "t.py", "data/a.csv", "data/b c.csv", "--lr=data"]


def test_the_conda_env_is_reported_where_it_is_written():
    """The env xla_dist activated holds its torch_xla 1.x: `conda activate` of it brings XRT's release back."""
    outcome = rewrite(
        "python3 -m torch_xla.distributed.xla_dist --tpu=pod \\\n  --conda-env torch-xla-1.13 -- python3 train.py\n"
    )
    assert [(f.rule, f.line, f.detail.split(":")[0]) for f in outcome.manual] == [
        ("launch-xla-dist", 2, "--conda-env torch-xla-1.13")
    ]
    assert "conda activate torch-xla-1.13" in outcome.text


def test_an_empty_argument_reaches_the_worker_as_a_word(tmp_path):
    """`--tag ""` reached xla_dist as an empty word, which its double quotes kept for each
    worker; the rewrite had dropped it (`--tag  --b`), so the worker read `--b` as the tag."""
    call = """python3 -m torch_xla.distributed.xla_dist --tpu=pod -- python3 t.py --tag "" --b '' --c \"\"\"\" x\n"""
    after = rewrite(call).text
    assert "python3 t.py --tag '' --b '' --c '' x\"" in after
    (old, _), (new, ran) = _run_both(tmp_path, call, after, workers=2)
    assert ran.returncode == 0, ran.stderr
    for worker in (0, 1):  # each worker's bash read the --command the rewrite wrote
        assert (
            new.calls()[worker][0].argv
            == old.calls()[worker][0].argv
            == ["python3", "t.py", "--tag", "", "--b", "", "--c", "", "x"]
        )
