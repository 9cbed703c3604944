"""The YAML rewriter: the result means what it should and its commands run on a simulated pod
(fixture pairs: test_text_fixtures.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from stand_ins.pod import Pod
from xrt2pjrt.registry import Options, all_rules
from text_migrate import NO_CUDA, REMOTE, UNREADABLE, assert_decisions, fixed_point
from xrt2pjrt.rewriters import SourceError
from xrt2pjrt.text import yaml as yaml_rewriter
from xrt2pjrt.recorder import todo_line
from xrt2pjrt.xrt_variables import REMOTE_TPU

FIXTURES = Path(__file__).parents[1] / "fixtures" / "text" / "yaml"
ALL = Options(rules=frozenset(all_rules()), unsafe_fixes=True)  # every fix, unsafe ones too


def rewrite(text: str):
    return yaml_rewriter.rewrite(text, ALL)


def test_kubernetes_job_after_rewrite():
    before, after = (
        list(yaml.safe_load_all((FIXTURES / "train-job.yaml").read_text())),
        list(yaml.safe_load_all(rewrite((FIXTURES / "train-job.yaml").read_text()).text)),
    )
    launcher, direct = after[0]["spec"]["template"]["spec"]["containers"]
    assert launcher["env"] == [{"name": "PJRT_DEVICE", "value": "TPU"}, {"name": "TRAIN_DEBUG", "value": "1"}]
    assert direct == before[0]["spec"]["template"]["spec"]["containers"][1], "exec arrays are reported, not changed"
    assert after[1]["services"]["trainer"]["environment"] == ["PJRT_DEVICE=TPU"]
    # everything else is the same document
    before[0]["spec"]["template"]["spec"]["containers"][0].pop("env")
    launcher.pop("env")
    before[0]["spec"]["template"]["spec"]["containers"][0].pop("command")
    launcher.pop("command")
    before[1]["services"]["trainer"].pop("environment")
    after[1]["services"]["trainer"].pop("environment")
    assert before == after


def test_kubernetes_command_runs_on_every_worker(tmp_path):
    job = next(yaml.safe_load_all(rewrite((FIXTURES / "train-job.yaml").read_text()).text))
    command = job["spec"]["template"]["spec"]["containers"][0]["command"]
    pod = Pod(tmp_path)
    ran = pod.run(command, TPU_NAME="pod-7")
    assert ran.returncode == 0, ran.stderr
    for worker, (call,) in pod.calls().items():
        assert call.argv == ["python3", "train.py", "--model", "vit b/16"]
        assert call.env["PJRT_DEVICE"] == "TPU"
    assert sorted(pod.calls()) == [0, 1, 2, 3] and pod.gcloud_calls()[0][4] == "pod-7"


def test_ci_steps_run_with_pjrt(tmp_path):
    workflow = yaml.safe_load(rewrite((FIXTURES / "ci.yml").read_text()).text)
    assert workflow["env"] == {"PJRT_DEVICE": "CPU", "TRAIN_DEBUG": 0}
    steps = workflow["jobs"]["test"]["steps"]
    pod = Pod(tmp_path)
    ran = pod.run(["bash", "-c", steps[2]["run"]])
    assert ran.returncode == 0
    assert [c.argv for (c,) in pod.calls().values()] == [["python3", "smoke.py", "--steps", "10"]] * 4
    local = pod.run(["bash", "-c", steps[1]["run"].replace("python3 -m pytest", "env #")])
    assert "PJRT_DEVICE=TPU" in local.stdout.split()


def test_findings_carry_file_lines():
    outcome = rewrite((FIXTURES / "ci.yml").read_text())
    assert [(f.rule, f.line) for f in outcome.changes] == [
        ("env-shell-xrt-cpu", 4),
        ("env-shell-xrt-cpu", 5),
        ("env-shell-xrt-tpu-config", 14),
        ("launch-xla-dist", 18),
        ("env-shell-xrt-tpu-config", 21),
    ]


def test_broken_yaml_is_a_source_error_with_its_line_and_column():
    with pytest.raises(SourceError) as err:
        rewrite("a: 1\nb: [XRT_TPU_CONFIG\nc: 2\n")
    at = err.value.range
    assert (at.start_line, at.start_column) == (3, 2)  # where PyYAML stops: the ':' of `c: 2`, in the open [


@pytest.mark.parametrize(
    "value, style",
    [
        ("plain words", None),
        ("a: b", None),
        ("it's", "'"),
        ("x # y", None),
        ("line\nbreak", "'"),
        ('say "hi"', '"'),
        ("- dash", None),
    ],
)
def test_render_keeps_the_value(value, style):
    assert yaml.safe_load(f"k: {yaml_rewriter.render(value, style)}\n") == {"k": value}


def test_gke_tpu_node_endpoints_are_reported_and_a_local_config_is_not():
    """GKE's TPU-node integration handed XRT the node in KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS."""
    text = (
        "containers:\n- name: train\n  env:\n  - name: XRT_TPU_CONFIG\n"
        '    value: "tpu_worker;0;${KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS:7}"\n  - name: XLA_IR_DEBUG\n    value: "1"\n'
        "- name: eval\n  env:\n    XRT_TPU_CONFIG: localservice;0;localhost:51011\n    XLA_IR_DEBUG: 1\n"
    )
    outcome = rewrite(text)
    assert outcome.text == (
        "containers:\n- name: train\n  env:\n"
        + todo_line(REMOTE_TPU.do, "env-shell-xrt-tpu-config", "  ")
        + '  - name: PJRT_DEVICE\n    value: "TPU"\n  - name: XLA_IR_DEBUG\n    value: "1"\n'
        "- name: eval\n  env:\n    PJRT_DEVICE: TPU\n    XLA_IR_DEBUG: 1\n"
    )
    assert_decisions(outcome, [("env-shell-xrt-tpu-config", 4, REMOTE)])


def test_compose_gpu_map_and_a_map_from_a_secret():
    text = (
        "services:\n  gpu:\n    environment:\n"
        "    - XRT_DEVICE_MAP=GPU:0;/job:localservice/replica:0/task:0/device:XLA_GPU:0\n"
        "    - XRT_WORKERS=localservice:0;grpc://localhost:40934\n"
        "env:\n- name: XRT_DEVICE_MAP\n  valueFrom: {secretKeyRef: {name: xrt, key: map}}\n- name: A\n  value: b\n"
    )
    outcome = rewrite(text)
    notes = [m.message for m in outcome.manual]
    assert outcome.text == (
        "services:\n  gpu:\n    environment:\n"
        + todo_line(notes[0], "env-shell-xrt-cpu", "    ")
        + "    - PJRT_DEVICE=CUDA\nenv:\n"
        + todo_line(notes[1], "env-shell-xrt-cpu")
        + "- name: PJRT_DEVICE\n  value: CPU\n- name: A\n  value: b\n"
    )
    assert_decisions(outcome, [("env-shell-xrt-cpu", 4, NO_CUDA), ("env-shell-xrt-cpu", 7, UNREADABLE)])


def test_a_device_variable_from_a_config_map_gets_the_pjrt_value_not_the_xrt_one():
    """`valueFrom` gave XRT_TPU_CONFIG the XRT value its ConfigMap key holds: kept under the new
    name, PJRT_DEVICE got `localservice;0;…` and torch_xla could not start. It becomes
    `value: TPU`, in a block item and in a flow one; the rest of each item stays."""
    text = (
        "train:\n  env:\n  - name: XRT_TPU_CONFIG\n    valueFrom:\n      configMapKeyRef:\n"
        "        name: tpu-config\n        key: xrt-config\n    # the config map is shared with eval\n"
        "  - name: A\n    value: b\n"
        "eval:\n  env:\n  - {name: XRT_TPU_CONFIG, valueFrom: {secretKeyRef: {name: s, key: k}}}\n  - {name: A, value: b}\n"
    )
    first = fixed_point(rewrite, text)
    assert not first.manual
    env = [{"name": "PJRT_DEVICE", "value": "TPU"}, {"name": "A", "value": "b"}]
    assert yaml.safe_load(first.text) == {"train": {"env": env}, "eval": {"env": env}}
    assert "    # the config map is shared with eval\n  - name: A" in first.text
    assert [(c.rule, c.line) for c in first.changes] == [
        ("env-shell-xrt-tpu-config", 3),
        ("env-shell-xrt-tpu-config", 13),
    ]


def test_a_gke_tpu_node_job_is_reported_on_every_run():
    # GKE's TPU-node integration (an XRT-era Cloud TPU node beside the pod): PJRT cannot drive
    # it. Only the env entry was rewritten, to PJRT_DEVICE=TPU; the job got no item.
    text = (
        "apiVersion: batch/v1\nkind: Job\nspec:\n  template:\n    metadata:\n      annotations:\n"
        '        tf-version.cloud-tpus.google.com: "pytorch-1.9"\n    spec:\n      containers:\n'
        "      - name: train\n        image: us-central1-docker.pkg.dev/tpu-pytorch-releases/docker/xla:r2.9.0_3.10_tpuvm\n"
        "        env:\n        - name: XRT_TPU_CONFIG\n          value: \"localservice;0;localhost:51011\"\n"
        "        - name: A\n          value: b\n        resources:\n          limits:\n"
        "            cloud-tpus.google.com/v3: 8\n"
    )
    outcome = rewrite(text)
    node = "move it to a TPU VM node pool"
    assert outcome.text == text.replace(
        "name: XRT_TPU_CONFIG\n          value: \"localservice;0;localhost:51011\"",
        'name: PJRT_DEVICE\n          value: "TPU"',
    ).replace(
        "        tf-version.", todo_line(node, "env-shell-xrt-tpu-config", "        ") + "        tf-version."
    ).replace(
        "            cloud-tpus.",
        todo_line(node, "env-shell-xrt-tpu-config", "            ") + "            cloud-tpus.",
    )
    decisions = [
        ("env-shell-xrt-tpu-config", 7, "`tf-version.cloud-tpus.google.com`: a GKE TPU node"),
        ("env-shell-xrt-tpu-config", 19, "`cloud-tpus.google.com/v3`: a GKE TPU node"),
    ]
    assert_decisions(outcome, decisions)
    assert "google.com/tpu" in outcome.manual[0].detail  # what a TPU VM node pool asks for instead
    again = rewrite(outcome.text)  # as --check after --write: each under its TODO line
    assert again.text == outcome.text and again.changes == []
    assert_decisions(again, [(rule, line + k + 1, message) for k, (rule, line, message) in enumerate(decisions)])
    # TensorFlow's TPU-node jobs are not PyTorch's to report
    tf = (
        text.replace("pytorch-1.9", "2.8")
        .replace("XRT_TPU_CONFIG", "TF_CPP_MIN_LOG_LEVEL")
        .replace(
            "us-central1-docker.pkg.dev/tpu-pytorch-releases/docker/xla:r2.9.0_3.10_tpuvm",
            "tensorflow/tensorflow:2.8.0",
        )
    )
    assert rewrite(tf).manual == []


def test_an_item_to_decide_gets_a_todo_line_above_its_entry_never_inside_a_scalar_or_flow():
    # YAML items to decide were in the report only: after --write the remote TPU node's export
    # in a `run: |` script was a plain PJRT_DEVICE=TPU, and the file said nothing.
    text = (
        "jobs:\n  train:\n    steps:\n    - run: |\n        pip install torch_xla==1.13\n"
        "        export XRT_TPU_CONFIG=\"tpu_worker;0;$IP:8470\"\n        python train.py\n"
        "    - command: [python3, -m,\n                torch_xla.distributed.xla_dist, --tpu=pod, --, python3, t.py]\n"
    )
    outcome = rewrite(text)
    lines = outcome.text.splitlines()
    todos = [k for k, line in enumerate(lines) if "TODO(xrt2pjrt)" in line]
    under = [next(line for line in lines[k:] if "TODO" not in line).strip()[:10] for k in todos]
    assert under == ["- run: |"] * 2 + ["- command:"]
    assert all(lines[k].startswith("    # TODO(xrt2pjrt): ") for k in todos)
    loaded = yaml.safe_load(outcome.text)["jobs"]["train"]["steps"]
    assert loaded[0]["run"] == "pip install torch_xla==1.13\nexport PJRT_DEVICE=TPU\npython train.py\n"
    assert loaded[1] == yaml.safe_load(text)["jobs"]["train"]["steps"][1]
    again = rewrite(outcome.text)
    assert again.text == outcome.text and again.changes == []


@pytest.mark.parametrize(
    "text",
    [
        'steps:\n- run: export XRT_TPU_CONFIG="localservice;0;localhost:51011"  # xrt2pjrt: ignore\n',
        'steps:\n- run: |  # xrt2pjrt: ignore[env]\n    export XRT_TPU_CONFIG="localservice;0;localhost:51011"\n',
        'steps:\n- run: |\n    export XRT_TPU_CONFIG="localservice;0;localhost:51011"  # xrt2pjrt: ignore\n',
        'steps:\n- run: >-  # xrt2pjrt: ignore\n    export XRT_TPU_CONFIG="localservice;0;localhost:51011"\n',
    ],
)
def test_an_ignore_marker_on_a_script_keeps_it(text):
    # A marker on a `run:` line, or after a block's `|`, was not seen by the shell inside: the
    # script was rewritten all the same.
    outcome = rewrite(text)
    assert outcome.text == text and outcome.changes == []
    other = rewrite(text.replace("# xrt2pjrt: ignore[env]", "# xrt2pjrt: ignore[launch]"))
    assert "PJRT_DEVICE" in other.text or "ignore[env]" not in text  # a marker keeps only the rules it names


def test_removing_an_env_entry_keeps_the_comment_lines_of_the_next_one():
    """PyYAML ends an entry at the next one's first token, past the comment lines above it:
    those went with the removed entry (a Kubernetes item, a mapping entry, a Compose line)."""
    text = (
        "containers:\n- env:\n  - name: TPU_NUM_DEVICES\n    value: \"8\"\n  # FOO controls the logging; keep\n"
        "  - name: FOO\n    value: \"1\"\n"
        "env:\n  XRT_WORKERS: localservice:0;grpc://localhost:40934\n\n  # A is read by eval\n  A: 1\n"
        "environment:\n  - TPU_NUM_DEVICES=8  # the cores\n  # C too\n  - C=1\n"
    )
    first = fixed_point(rewrite, text)
    assert yaml.safe_load(first.text) == {
        "containers": [{"env": [{"name": "FOO", "value": "1"}]}],
        "env": {"A": 1},
        "environment": ["C=1"],
    }
    assert first.text == (
        "containers:\n- env:\n  # FOO controls the logging; keep\n  - name: FOO\n    value: \"1\"\n"
        "env:\n\n  # A is read by eval\n  A: 1\nenvironment:\n  # C too\n  - C=1\n"
    )


def test_a_folded_script_is_rewritten_without_its_line_break_and_the_file_stays_yaml():
    """A `>` block ends past its line break and the next line's indent: written over all of it, the
    new scalar ran into the next entry (`…\\n"- name: after`), the result was not YAML and the
    whole file's rewrite was thrown away. Now it ends where the old one's text did."""
    text = (
        "env:\n  XRT_TPU_CONFIG: localservice;0;localhost:51011\nsteps:\n- run: >\n"
        "    XRT_TPU_CONFIG=\"localservice;0;localhost:51011\"\n    python3 train.py\n    --lr 0.1\n"
        "- name: after\n  run: >-\n    TPU_NUM_DEVICES=8 python3 eval.py\n\n  # last\n  shell: bash\n"
    )
    first = fixed_point(rewrite, text)
    assert yaml_rewriter.check(first.text) is None
    assert yaml.safe_load(first.text) == {
        "env": {"PJRT_DEVICE": "TPU"},
        "steps": [
            {"run": "PJRT_DEVICE=TPU python3 train.py --lr 0.1\n"},
            {"name": "after", "run": "python3 eval.py", "shell": "bash"},
        ],
    }
    assert "\n\n  # last\n  shell: bash\n" in first.text


SH_CONTEXTS = {
    "exec array": 'spec:\n  command: ["/bin/sh", "-c", "{call}"]\n',
    "cloud build": "steps:\n- name: gcr.io/cloud-builders/gcloud\n  entrypoint: /bin/sh\n  args:\n  - -c\n  - |\n    {call}\n",
    "command and args": 'spec:\n  command: ["sh"]\n  args: ["-c", "{call}"]\n',
    "actions shell": "steps:\n- shell: sh -e {{0}}\n  run: {call}\n",
}


@pytest.mark.parametrize("context", SH_CONTEXTS)
def test_a_launch_that_needs_bash_under_sh_is_left_for_a_person(context):
    """Under sh (dash), ${*@Q} and printf %q fail: the workers ran the command without its
    arguments, exit 0. The rewrite had used them in YAML that runs /bin/sh."""
    text = SH_CONTEXTS[context].format(call="python3 -m torch_xla.distributed.xla_dist --tpu=pod -- t.py $ARGS")
    outcome = rewrite(text)
    assert "xla_dist" in outcome.text and "tpu-vm ssh" not in outcome.text and not outcome.changes
    (item,) = outcome.manual
    assert "this runs under sh" in item.detail


def test_under_sh_a_launch_with_no_value_of_this_machine_is_translated_and_runs(tmp_path):
    text = SH_CONTEXTS["exec array"].format(
        call="python3 -m torch_xla.distributed.xla_dist --tpu=pod -- python3 t.py --lr 0.1 'a b'"
    )
    command = yaml.safe_load(rewrite(text).text)["spec"]["command"]
    pod = Pod(tmp_path, 2)
    assert pod.run(command).returncode == 0
    assert [c.argv for (c,) in pod.calls().values()] == [["python3", "t.py", "--lr", "0.1", "a b"]] * 2


def test_under_bash_the_launch_is_translated_and_the_values_arrive(tmp_path):
    text = (
        'spec:\n  command: ["/bin/bash", "-c", "ARGS=\\"--lr 0.1\\"; '
        'python3 -m torch_xla.distributed.xla_dist --tpu=pod -- python3 t.py $ARGS"]\n'
    )
    command = yaml.safe_load(rewrite(text).text)["spec"]["command"]
    pod = Pod(tmp_path, 2)
    assert pod.run(command).returncode == 0
    assert [c.argv for (c,) in pod.calls().values()] == [["python3", "t.py", "--lr", "0.1"]] * 2
