"""The XRT variables outside Python, applied one way for every kind (text/environment.py): the
device follows the setting's value as it does in Python (xrt_variables.device_for), and the
program started by the rewritten script sees PJRT_DEVICE and no XRT variable."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stand_ins.pod import Pod
from xrt2pjrt.registry import Options
from text_migrate import ALL, NO_CUDA, REMOTE, UNREADABLE, assert_decisions, rewrite_shell as rewrite, without_todos

FIXTURES = Path(__file__).parents[1] / "fixtures" / "text" / "shell"


def test_env_settings_reach_the_program(tmp_path):
    """export / prefix forms: the program sees PJRT_DEVICE and no XRT variable."""
    before = (
        (FIXTURES / "cpu_topology.sh")
        .read_text()
        .replace(
            "python3",
            "python3 -c 'import os; print(os.environ.get(\"PJRT_DEVICE\"), sorted(k for k in os.environ if k.startswith(\"XRT_\")))'",
        )
    )
    ran = Pod(tmp_path).run_script(rewrite(before).text)
    assert ran.stdout.splitlines()[0] == "CPU []"


@pytest.mark.parametrize(
    "before, after, decisions",
    [
        pytest.param(  # a GPU map was turned into a silent PJRT_DEVICE=CPU
            '#!/bin/bash\nexport XRT_DEVICE_MAP="GPU:0;/job:localservice/replica:0/task:0/device:XLA_GPU:0"\n'
            'export XRT_WORKERS="localservice:0;grpc://localhost:40934"\npython train.py\n',
            "#!/bin/bash\nexport PJRT_DEVICE=CUDA\npython train.py\n",
            [("env-shell-xrt-cpu", 2, NO_CUDA)],
            id="gpu-map",
        ),
        pytest.param(  # CPU and GPU in one map: XRT's xla_device() took the GPU (TPU, then GPU, then CPU)
            'export XRT_DEVICE_MAP="CPU:0;/job:localservice/replica:0/task:0/device:XLA_CPU:0|'
            'GPU:0;/job:localservice/replica:0/task:0/device:XLA_GPU:0"\npython train.py\n',
            "export PJRT_DEVICE=CUDA\npython train.py\n",
            [("env-shell-xrt-cpu", 1, NO_CUDA)],
            id="cpu-and-gpu-map",
        ),
        pytest.param(  # a TPU node reached over gRPC: the device is TPU, the node is for a person
            '#!/bin/bash\nexport XRT_WORKERS="tpu_worker:0;grpc://10.0.0.2:8470"\n'
            'export XRT_DEVICE_MAP="TPU:0;/job:tpu_worker/replica:0/task:0/device:TPU:0"\npython train.py\n',
            "#!/bin/bash\nexport PJRT_DEVICE=TPU\npython train.py\n",
            [("env-shell-xrt-cpu", 2, REMOTE), ("env-shell-xrt-cpu", 3, REMOTE)],
            id="tpu-node-map",
        ),
        pytest.param(
            '#!/bin/bash\nexport XRT_TPU_CONFIG="tpu_worker;0;$TPU_IP_ADDRESS:8470"\npython train.py\n',
            "#!/bin/bash\nexport PJRT_DEVICE=TPU\npython train.py\n",
            [("env-shell-xrt-tpu-config", 2, REMOTE)],
            id="tpu-node-config",
        ),
        pytest.param(
            'XRT_TPU_CONFIG="grpc://${COLAB_TPU_ADDR}" python3 train.py\n',
            "PJRT_DEVICE=TPU python3 train.py\n",
            [
                ("env-shell-xrt-tpu-config", 1, REMOTE),
                (
                    "env-shell-xrt-unused",
                    1,
                    "COLAB_TPU_ADDR is read here but nothing sets it under PJRT: test "
                    "xr.device_type() == 'TPU' instead: only the old Colab TPU runtime (a TPU node driven by XRT) set it, "
                    "today's Colab TPU VM does not",
                ),
            ],
            id="colab-config",
        ),
        pytest.param(  # the TPU VM's own local server is not a node
            'export XRT_TPU_CONFIG="localservice;0;localhost:51011"\n', "export PJRT_DEVICE=TPU\n", [], id="tpu-vm"
        ),
        pytest.param(
            'export XRT_DEVICE_MAP="CPU:0;/job:localservice/replica:0/task:0/device:XLA_CPU:0|CPU:1;/job:localservice/'
            'replica:0/task:0/device:XLA_CPU:1"\n',
            "export PJRT_DEVICE=CPU\n",
            [],
            id="cpu-map",
        ),
        pytest.param(  # the device cannot be read: CPU as before, and said so
            'export XRT_DEVICE_MAP="$DEVICE_MAP"\nexport XRT_WORKERS="$WORKERS"\n',
            "export PJRT_DEVICE=CPU\n",
            [("env-shell-xrt-cpu", 1, UNREADABLE)],
            id="unreadable-map",
        ),
        pytest.param(  # XRT_WORKERS alone chose no device: XRT read it only beside XRT_DEVICE_MAP
            'export XRT_WORKERS="localservice:0;grpc://localhost:40934"\npython3 t.py\n',
            "python3 t.py\n",
            [],
            id="workers-alone",
        ),
    ],
)
def test_device_settings_follow_their_value(before, after, decisions):
    outcome = rewrite(before)
    assert without_todos(outcome.text) == after
    assert_decisions(outcome, decisions)
    assert outcome.text.count("# TODO(xrt2pjrt)") == len(decisions)


@pytest.mark.parametrize(
    "script, asked",
    [
        ('export XRT_TPU_CONFIG="localservice;0;localhost:51011"\necho ${XRT_TPU_CONFIG}\n', []),
        ('printf "ordinal %s\\n" "$XRT_SHARD_ORDINAL" >&2\n', []),
        ('IP=$(echo $XRT_TPU_CONFIG | cut -d: -f3)\n', [1]),  # the value is used, not shown
        ("echo $XRT_SHARD_ORDINAL > rank.txt\n", [1]),
        ('echo "$XRT_SHARD_ORDINAL" | tee -a log\n', [1]),
        ('[ -n "$XRT_SHARD_ORDINAL" ] && echo "rank $XRT_SHARD_ORDINAL"\n', [1]),
        # shell for another machine: its export carries the value on, its echo only shows it
        (
            'gcloud compute ssh vm --command "\n  export XRT_TPU_CONFIG=$XRT_TPU_CONFIG\n  echo $XRT_TPU_CONFIG\n"\n',
            [2],
        ),
        ("ssh worker-1 'echo $XRT_SHARD_ORDINAL; python3 t.py'\n", []),
    ],
)
def test_a_read_only_shown_by_echo_is_not_asked_about(script, asked):
    """An echo of an XRT variable prints an empty value under PJRT and harms nothing; a read
    whose value goes on (captured, written, piped, tested) is asked about."""
    assert [d.line for d in rewrite(script).manual] == asked


def test_unset_of_a_device_variable_asks_nothing():
    outcome = rewrite("unset XRT_DEVICE_MAP\n")
    assert (outcome.text, outcome.manual) == ("unset PJRT_DEVICE\n", [])


@pytest.mark.parametrize(
    "variable, value",
    [
        ("XRT_TPU_CONFIG", "localservice;0;localhost:51011"),
        ("XRT_TPU_CONFIG", "tpu_worker;0;10.0.0.2:8470"),
        ("XRT_TPU_CONFIG", "grpc://10.240.1.2:8470"),
        ("XRT_DEVICE_MAP", "CPU:0;/job:localservice/replica:0/task:0/device:XLA_CPU:0"),
        ("XRT_DEVICE_MAP", "GPU:0;/job:localservice/replica:0/task:0/device:XLA_GPU:0"),
        ("XRT_DEVICE_MAP", "TPU:0;/job:tpu_worker/replica:0/task:0/device:TPU:0"),
        (
            "XRT_DEVICE_MAP",
            "CPU:0;/job:localservice/replica:0/task:0/device:XLA_CPU:0|"
            "GPU:0;/job:localservice/replica:0/task:0/device:XLA_GPU:0",
        ),
        ("XRT_WORKERS", "tpu_worker:0;grpc://10.0.0.2:8470"),
        ("XRT_WORKERS", "localservice:0;grpc://localhost:40934"),
    ],
)
def test_python_and_shell_settings_of_one_value_agree(variable, value):
    """One mechanism (xrt_variables.device_for): the same device and the same decision."""
    from xrt2pjrt.python import rewriter as python

    in_python = python.rewrite(f"import os\nos.environ['{variable}'] = '{value}'\n", Options(rules=ALL))
    in_shell = rewrite(f"export {variable}='{value}'\n")
    devices = (
        re.findall(r"^os.environ\['PJRT_DEVICE'\] = '(\w+)'$", in_python.text, re.M),
        re.findall(r"^export PJRT_DEVICE=(\w+)$", in_shell.text, re.M),
    )
    assert devices[0] == devices[1] and len(devices[0]) == (variable != "XRT_WORKERS")
    assert [f.message for f in in_python.manual] == [f.message for f in in_shell.manual]
