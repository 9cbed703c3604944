"""The shell rewriter as a kind: scripts it has nothing to do in, its own check, the lines of
its findings, where its TODO lines go, and the settings it finds in shell that is data or
that another command runs (the fixture pairs: tests/text/test_text_fixtures.py; the
launches it rewrites: tests/rules/launch/test_launch_xla_dist.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from xrt2pjrt.registry import Options, select
from xrt2pjrt.text import shell
from text_migrate import REMOTE, fixed_point, rewrite_shell as rewrite, without_todos


FIXTURES = Path(__file__).parents[1] / "fixtures" / "text" / "shell"


def test_unchanged_script_is_returned_as_is():
    text = "#!/bin/sh\nexport PJRT_DEVICE=TPU\npython3 train.py 2>&1 | tee log\n"
    assert rewrite(text).text == text


def test_check_reports_a_broken_script():
    assert shell.check("if true; then\n") is not None


def test_findings_carry_the_line_of_the_call():
    outcome = rewrite((FIXTURES / "pod_launch.sh").read_text())
    assert [(f.rule, f.line) for f in outcome.changes] == [("launch-xla-dist", 6)]


def test_items_to_decide_are_marked_in_the_script_once_above_their_command():
    """So that a decision outlives --write, as in Python; never inside a continued command."""
    text = (
        '#!/bin/bash\nif true; then\n  export XRT_TPU_CONFIG="tpu_worker;0;$IP:8470"\nfi\n'
        '[ -n "$XRT_SHARD_ORDINAL" ] && \\\n  python3 t.py --host "$XRT_HOST_ORDINAL"\n'
    )
    outcome = rewrite(text)
    lines = outcome.text.splitlines()
    assert lines[2].startswith(f"  # TODO(xrt2pjrt): {REMOTE}") and lines[3] == "  export PJRT_DEVICE=TPU"
    # the read on the continued line stays in the report only: no comment line can go there
    assert lines[5].startswith("# TODO(xrt2pjrt): use xr.global_ordinal() [env-shell-xrt-unused]")
    assert lines[6:] == ['[ -n "$XRT_SHARD_ORDINAL" ] && \\', '  python3 t.py --host "$XRT_HOST_ORDINAL"']
    assert len(outcome.manual) == 3
    assert shell.check(outcome.text) is None
    assert rewrite(outcome.text).text == outcome.text


@pytest.mark.parametrize(
    "before, after",
    [
        (
            'sudo -E XRT_TPU_CONFIG="localservice;0;localhost:51011" python3 train.py\n',
            "sudo -E PJRT_DEVICE=TPU python3 train.py\n",
        ),
        (
            "sudo -u ubuntu XRT_TPU_CONFIG=localservice XRT_MESH_SERVICE_ADDRESS=x python3 t.py\n",
            "sudo -u ubuntu PJRT_DEVICE=TPU python3 t.py\n",
        ),
    ],
)
def test_settings_sudo_passes_to_its_command_are_migrated(before, after):
    # Kaggle's and pytorch/xla's TPU scripts ran training through sudo.
    assert rewrite(before).text == after


@pytest.mark.parametrize("quote", ['"', "'"])
def test_an_options_value_that_is_shell_is_migrated_in_place(quote):
    # gcloud ... --command="export XRT_TPU_CONFIG=...; python3 train.py" was left as it was, with no item
    config = '\\"localservice;0;localhost:51011\\"' if quote == '"' else '"localservice;0;localhost:51011"'
    out = rewrite(
        f"gcloud compute tpus tpu-vm ssh pod --worker=all --command={quote}export XRT_TPU_CONFIG={config}; "
        f"python3 train.py{quote}\n"
    )
    assert out.text == (
        f"gcloud compute tpus tpu-vm ssh pod --worker=all --command={quote}export PJRT_DEVICE=TPU; "
        f"python3 train.py{quote}\n"
    )
    assert [c.rule for c in out.changes] == ["env-shell-xrt-tpu-config"]


def test_a_setting_written_as_key_value_data_is_replaced_whole(tmp_path):
    """`echo "XRT_TPU_CONFIG=localservice;0;…" >> .env` writes data, not shell: rewritten as shell
    (cut at the `;`) the file got PJRT_DEVICE=TPU;0;localhost:51011, which torch_xla cannot
    start with. The whole value goes; one that may be shell going on (`;python3 …`) is left, reported."""
    text = (
        'echo "XRT_TPU_CONFIG=localservice;0;localhost:51011" | tee -a environment\n'
        'echo "TPU_NUM_DEVICES=8 XRT_TPU_CONFIG=localservice;0;localhost:51011" >> .env\n'
        "echo 'export XRT_DEVICE_MAP=CPU:0;/job:localservice/replica:0/task:0/device:XLA_CPU:0' >> rc\n"
        'bash -c "export XRT_TPU_CONFIG=localservice;echo ran"\n'
    )
    first = fixed_point(rewrite, text)
    assert without_todos(first.text) == (
        'echo "PJRT_DEVICE=TPU" | tee -a environment\n'
        'echo "PJRT_DEVICE=TPU" >> .env\n'
        "echo 'export PJRT_DEVICE=CPU' >> rc\n"
        'bash -c "export XRT_TPU_CONFIG=localservice;echo ran"\n'
    )
    assert [(m.rule, m.line) for m in first.manual] == [("env-shell-xrt-tpu-config", 4)]
    assert shell.check(first.text) is None
    ran = subprocess.run(["bash", "-c", first.text], cwd=tmp_path, capture_output=True, text=True)
    assert ran.returncode == 0 and ran.stdout.endswith("ran\n"), ran.stderr
    # what pam_env or a .env reader takes from each file: NAME=the rest of the line
    assert [
        dict([line.split("=", 1)]) for f in ("environment", ".env") for line in (tmp_path / f).read_text().splitlines()
    ] == [{"PJRT_DEVICE": "TPU"}, {"PJRT_DEVICE": "TPU"}]
    assert (tmp_path / "rc").read_text() == "export PJRT_DEVICE=CPU\n"


# --- a setting the env step must see, in whatever command carries it ---------------------------

FP16 = "no effect from 2.5: cast to float16"


@pytest.mark.parametrize(
    "launch",
    [
        # xla_dist passes --env settings to its workers (the env step comes before the launch step)
        "python3 -m torch_xla.distributed.xla_dist --tpu=pod --env XLA_USE_FP16=1 -- python3 t.py\n",
        'python3 -m torch_xla.distributed.xla_dist --tpu=pod --env=XLA_USE_FP16=1 -- python3 t.py\n',
        # a remote command holding an expansion the local shell fills in
        'gcloud compute tpus tpu-vm ssh pod --worker=all \\\n  --command="XLA_USE_FP16=1 python3 t.py \\\n  ${*@Q}"\n',
    ],
)
def test_a_deprecated_setting_passed_to_workers_is_reported_under_select_env(launch):
    outcome = shell.rewrite(launch, Options(rules=select(["env"], None)))
    assert [f.message for f in outcome.manual] == [FP16] and without_todos(outcome.text) == launch


def test_a_marker_above_a_continued_command_keeps_its_rule_off_every_line_of_it():
    script = (
        "# xrt2pjrt: ignore[env-shell-deprecated]\ngcloud compute tpus tpu-vm ssh pod --worker=all \\\n"
        '  --command="XLA_USE_FP16=1 python3 t.py \\\n  ${*@Q}"\n'
    )
    assert rewrite(script).manual == []
