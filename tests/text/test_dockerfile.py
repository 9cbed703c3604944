"""The Dockerfile rewriter: what docker would make of the result (fixture pairs: test_text_fixtures.py)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from stand_ins.pod import Pod
from xrt2pjrt.registry import Options, all_rules
from text_migrate import NO_CUDA, REMOTE, assert_decisions, fixed_point, without_todos
from xrt2pjrt.text import dockerfile

FIXTURES = Path(__file__).parents[1] / "fixtures" / "text" / "dockerfile"
ALL = Options(rules=frozenset(all_rules()), unsafe_fixes=True)  # every fix, unsafe ones too


def rewrite(text: str):
    return dockerfile.rewrite(text, ALL)


def _instructions(text: str, keyword: str) -> list[str]:
    """The arguments of every `keyword` instruction, continuations joined (as docker reads them)."""
    joined = re.sub(r"\\\n", " ", text)
    return [line.split(None, 1)[1] for line in joined.splitlines() if line.split(None, 1)[:1] == [keyword]]


def _image_env(text: str) -> dict[str, str]:
    env = {}
    for args in _instructions(text, "ENV"):
        words = shlex.split(args)
        if "=" not in words[0]:
            env[words[0]] = " ".join(words[1:])  # legacy `ENV NAME value`
        else:
            env.update(w.split("=", 1) for w in words)
    return env


def test_image_environment_is_pjrt():
    before = (FIXTURES / "Dockerfile").read_text()
    assert _image_env(before) == {
        "XRT_TPU_CONFIG": "localservice;0;localhost:51011",
        "TRAIN_DEBUG": "1",
        "XRT_START_LOCAL_SERVER": "1",
        "TPU_NUM_DEVICES": "8",
    }
    assert _image_env(rewrite(before).text) == {"PJRT_DEVICE": "TPU", "TRAIN_DEBUG": "1"}
    # (a RUN line hands $XRT_SHARD_WORLD_SIZE to its script: the image's own setting, kept)
    assert _image_env(rewrite((FIXTURES / "Dockerfile.cpu").read_text()).text) == {
        "PJRT_DEVICE": "CPU",
        "XRT_SHARD_WORLD_SIZE": "1",
    }


def test_cmd_launches_on_every_worker(tmp_path):
    """The rewritten CMD, run as docker runs a shell-form CMD (`/bin/sh -c`), on the simulated pod."""
    (cmd,) = _instructions(rewrite((FIXTURES / "Dockerfile").read_text()).text, "CMD")
    pod = Pod(tmp_path)
    ran = pod.run(["/bin/sh", "-c", cmd], TPU_NAME="pod-1")
    assert ran.returncode == 0, ran.stderr
    for worker, (call,) in pod.calls().items():
        assert call.argv == ["python3", "train.py", "--epochs", "1"]
        assert call.env["PJRT_DEVICE"] == "TPU"
    assert sorted(pod.calls()) == [0, 1, 2, 3]
    assert pod.gcloud_calls()[0][4] == "pod-1"


def test_findings_name_the_dockerfile_lines():
    outcome = rewrite((FIXTURES / "Dockerfile").read_text())
    lines = {(f.rule, f.line) for f in outcome.changes}
    assert ("launch-xla-dist", 13) in lines and ("env-shell-xrt-tpu-config", 9) in lines
    assert ("env-shell-xrt-unused", 6) in lines and ("env-shell-xrt-unused", 7) in lines
    old_image, exec_form = outcome.manual
    assert old_image.line == 2 and old_image.rule == "install-xrt-era-release"
    assert exec_form.line == 15 and "exec form" in exec_form.detail


def test_unrelated_dockerfile_is_untouched():
    text = "FROM python:3.11\nENV PJRT_DEVICE=TPU\nRUN pip install torch_xla \\\n  && echo ok\n"
    outcome = rewrite(text)
    assert outcome.text == text and not outcome.changes


def test_check_rejects_a_broken_run():
    assert "RUN at line 2" in dockerfile.check("FROM x\nRUN if true; then echo\n")


def test_a_tpu_node_config_in_env_and_bashrc_is_reported_where_it_is_set():
    """ENV and a RUN that writes ~/.bashrc get the decision the Python rule gives."""
    text = (
        'FROM python:3.8\nENV XRT_TPU_CONFIG="tpu_worker;0;10.0.0.2:8470"\n'
        'RUN echo "export XRT_TPU_CONFIG=\\"tpu_worker;0;\\$TPU_IP:8470\\"" >> ~/.bashrc\n'
    )
    outcome = rewrite(text)
    assert (
        without_todos(outcome.text)
        == 'FROM python:3.8\nENV PJRT_DEVICE=TPU\nRUN echo "export PJRT_DEVICE=TPU" >> ~/.bashrc\n'
    )
    assert_decisions(outcome, [("env-shell-xrt-tpu-config", 2, REMOTE), ("env-shell-xrt-tpu-config", 3, REMOTE)])
    assert outcome.text.count(f"# TODO(xrt2pjrt): {REMOTE}") == 2


def test_env_device_map_follows_its_value_in_both_env_forms():
    text = (
        "FROM python:3.11\nENV XRT_DEVICE_MAP GPU:0;/job:localservice/replica:0/task:0/device:XLA_GPU:0\n"
        "ENV XRT_WORKERS=\"localservice:0;grpc://localhost:40934\" XLA_IR_DEBUG=1\n"
    )
    outcome = rewrite(text)
    assert without_todos(outcome.text) == "FROM python:3.11\nENV PJRT_DEVICE CUDA\nENV XLA_IR_DEBUG=1\n"
    assert_decisions(outcome, [("env-shell-xrt-cpu", 2, NO_CUDA)])


def test_env_values_are_not_shell_a_semicolon_is_part_of_the_value():
    # Docker reads `ENV A=x;y` as A="x;y"; read as shell, the line was cut at the `;`.
    text = (
        "FROM python:3.10\nENV XRT_WORKERS=localservice:0;grpc://localhost:40934 X=1\n"
        "ENV XRT_TPU_CONFIG=localservice;0;localhost:51011\n"
    )
    outcome = rewrite(text)
    assert outcome.text == "FROM python:3.10\nENV X=1\nENV PJRT_DEVICE=TPU\n"


def _docker_parse(text: str) -> list[tuple[str, str]]:
    """(keyword, arguments) of each instruction as docker's parser reads them: a `\\` at a line's
    end continues it, and comment and blank lines inside a continuation are skipped."""
    out, lines = [], iter(text.splitlines())
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        while line.rstrip().endswith("\\"):
            nxt = next((n for n in lines if n.strip() and not n.lstrip().startswith("#")), None)
            if nxt is None:
                break
            line = line.rstrip()[:-1] + nxt
        keyword, _, args = line.strip().partition(" ")
        out.append((keyword, " ".join(args.split())))
    return out


def test_removing_the_last_variable_after_comment_or_blank_lines_ends_the_env():
    """The `\\` before a comment or blank line inside an ENV goes with the last variable:
    left, it continued the ENV over those lines into the next instruction (`ENV A=1 RUN pip ...`)."""
    text = (
        "FROM python:3.8\n"
        "ENV A=1 \\\n# the number of TPU cores\n    TPU_NUM_DEVICES=8\nRUN pip install torch-xla\n"
        "ENV B=1 \\\n\n    XRT_START_LOCAL_SERVER=1\nRUN echo one\n"
        "ENV C=1 \\\n    # XRT_TPU_CONFIG is below: a comment, not a setting\n"
        "    XRT_WORKERS=localservice:0;grpc://localhost:40934 \\\n    D=1\nRUN echo two\n"
        "ARG E=1 \\\n    # why\n\n    XRT_SHARD_ORDINAL=0\nCMD echo three\n"
    )
    first = fixed_point(rewrite, text)
    assert _docker_parse(first.text) == [
        ("FROM", "python:3.8"),
        ("ENV", "A=1"),
        ("RUN", "pip install torch-xla"),
        ("ENV", "B=1"),
        ("RUN", "echo one"),
        ("ENV", "C=1 D=1"),
        ("RUN", "echo two"),
        ("ARG", "E=1"),
        ("CMD", "echo three"),
    ]
    # the comments stay, and a comment naming an XRT variable is not rewritten as a setting
    for comment in ("# the number of TPU cores", "# XRT_TPU_CONFIG is below: a comment, not a setting", "# why"):
        assert comment in first.text
    assert [ins.keyword for ins in dockerfile.instructions(first.text)] == [k for k, _ in _docker_parse(first.text)]


def test_comment_lines_inside_a_continued_run_are_docker_s_not_the_shell_s():
    """Docker drops them before /bin/sh -c reads the command; bash -n of the raw text failed, and
    the whole Dockerfile was reported as not processed."""
    text = (
        "FROM python:3.11\nENV XRT_TPU_CONFIG=\"localservice;0;localhost:51011\"\n"
        "RUN groupadd app \\\n    # the user\n    && useradd -m app\n"
    )
    outcome = rewrite(text)
    assert dockerfile.check(outcome.text) is None
    assert outcome.text.startswith("FROM python:3.11\nENV PJRT_DEVICE=TPU\nRUN groupadd app \\\n    # the user\n")


HEREDOCS = """FROM python:3.10
RUN <<EOT bash
set -e
export XRT_TPU_CONFIG="localservice;0;localhost:51011"
python train.py
EOT
RUN <<-EOF
\texport XRT_TPU_CONFIG="localservice;0;localhost:51011"
\tEOF
RUN python3 <<PY
import torch_xla.core.xla_model as xm
print(xm.xrt_world_size())
PY
COPY <<EOF /app/notes.txt
RUN export XRT_TPU_CONFIG=a-line-of-a-file-not-an-instruction
EOF
"""


def test_a_runs_here_documents_are_migrated_as_the_script_they_hold():
    """`RUN <<EOT bash ... export XRT_TPU_CONFIG=... EOT` was neither migrated nor reported,
    and --check passed: its lines are the script bash (or sh, or Python) runs; a COPY's are a
    file's, never instructions."""
    outcome = rewrite(HEREDOCS)
    assert outcome.text == HEREDOCS.replace(
        '\texport XRT_TPU_CONFIG="localservice;0;localhost:51011"', "\texport PJRT_DEVICE=TPU"
    ).replace('export XRT_TPU_CONFIG="localservice;0;localhost:51011"', "export PJRT_DEVICE=TPU").replace(
        "import torch_xla.core.xla_model as xm\nprint(xm.xrt_world_size())",
        "import torch_xla.runtime as xr\nprint(xr.world_size())",
    )
    assert sorted({f.line for f in outcome.changes}) == [4, 8, 12]
    assert dockerfile.check(outcome.text) is None
    assert "RUN at line 2" in dockerfile.check("FROM x\nRUN <<EOT\nif true; then echo\nEOT\n")


def test_a_run_that_starts_with_a_shell_test_is_shell_form_and_migrated():
    """`RUN [ ... ] && ...` is no JSON array: docker runs it with /bin/sh -c."""
    text = 'FROM python:3.11\nRUN [ "$TPU" != "" ] && export XRT_TPU_CONFIG="localservice;0;localhost:51011"\n'
    outcome = rewrite(text)
    assert outcome.text == text.replace('XRT_TPU_CONFIG="localservice;0;localhost:51011"', "PJRT_DEVICE=TPU")
    assert outcome.manual == []


def test_one_instruction_that_fetches_several_xrt_era_wheels_is_one_item():
    # issue 32's third count, in a shape of its own: three wheels of the XRT-era bucket on the
    # continued lines of one RUN are one decision; another RUN saying the same is its own
    text = (
        "FROM python:3.8-slim\n"
        "RUN mkdir /wheels && cd /wheels && \\\n"
        "    wget -q https://storage.googleapis.com/tpu-pytorch/wheels/torch-1.10-cp38-cp38-linux_x86_64.whl && \\\n"
        "    wget -q https://storage.googleapis.com/tpu-pytorch/wheels/torch_xla-1.10-cp38-cp38-linux_x86_64.whl && \\\n"
        "    pip install /wheels/*.whl\n"
        "RUN pip install https://storage.googleapis.com/tpu-pytorch/wheels/torchvision-1.10-cp38-cp38-linux_x86_64.whl\n"
    )
    outcome = rewrite(text)
    assert [(f.rule, f.range.start_line, f.range.end_line) for f in outcome.manual] == [
        ("install-python-version", 1, 1),  # Python 3.8: no torch_xla 2.9 wheel
        ("install-xrt-era-release", 3, 4),
        ("install-xrt-era-release", 6, 6),
    ]
    assert outcome.text.count("TODO(xrt2pjrt)") == 3
