"""env-shell-xrt-unused beyond its examples: TPUVM_MODE in build scripts, XRT's client settings."""

import pytest
from text_migrate import ALL, rewrite_shell as rewrite

from xrt2pjrt.registry import Options
from xrt2pjrt.text import dockerfile


def test_tpuvm_mode_read_in_a_build_script_says_what_it_means_now():
    """xla v2.0 scripts/build_torch_wheels.sh: no topology hint, which would not apply."""
    text = 'if [ "$TPUVM_MODE" == "1" ]; then\n  pip install torch_xla[tpuvm]\nfi\n'
    tpuvm = [f for f in rewrite(text).manual if f.rule == "env-shell-xrt-unused"]
    assert [(f.line, f.detail) for f in tpuvm] == [
        (
            1,
            (
                "TPUVM_MODE is read here but nothing sets it under PJRT: keep only the TPU VM branch: torch_xla 2.1+ ignores "
                "it: TPU nodes are gone, "
                "every TPU torch_xla runs on is a TPU VM, so code that branches on it wants the TPU VM branch"
            ),
        )
    ]


# The build of torch_xla from its checkout, as pytorch/xla's own docker images at v1.13 did it.
_BUILD = (
    "FROM python:3.10\nENV TPUVM_MODE=1\n"
    "RUN git clone --recursive https://github.com/pytorch/xla.git /pytorch/xla\n"
    "RUN cd /pytorch/xla && python setup.py bdist_wheel\n"
)


@pytest.mark.parametrize("build", ["python setup.py bdist_wheel", "bash scripts/build_torch_wheels.sh 3.8 r1.13"])
def test_tpuvm_mode_stays_in_a_dockerfile_that_builds_torch_xla(build):
    """torch_xla 2.9's build still reads it (build_util.py: TPUVM_MODE=1 adds --config=tpu); pytorch/xla's
    own docker/Dockerfile at v1.13 built through scripts/build_torch_wheels.sh."""
    text = _BUILD.replace("python setup.py bdist_wheel", build)
    outcome = dockerfile.rewrite(text, Options(rules=ALL, unsafe_fixes=True))
    assert outcome.text == text
    assert not outcome.changes and not outcome.manual


def test_tpuvm_mode_goes_from_a_dockerfile_that_only_installs_torch_xla():
    text = _BUILD.replace("python setup.py bdist_wheel", "pip install torch_xla[tpu]")
    outcome = dockerfile.rewrite(text, Options(rules=ALL, unsafe_fixes=True))
    assert "TPUVM_MODE" not in outcome.text
    assert [f.rule for f in outcome.changes] == ["env-shell-xrt-unused"]


def test_tpuvm_mode_stays_in_a_build_script_that_sets_it_for_the_build():
    text = "cd xla\nTPUVM_MODE=1 python setup.py develop\nexport XRT_START_LOCAL_SERVER=1\n"
    assert rewrite(text).text == "cd xla\nTPUVM_MODE=1 python setup.py develop\n"


def test_a_read_of_tpuvm_mode_in_a_build_script_is_still_reported():
    text = 'python setup.py bdist_wheel\nif [ "$TPUVM_MODE" = "1" ]; then pip install torch_xla[tpuvm]; fi\n'
    assert [f.line for f in rewrite(text).manual if f.rule == "env-shell-xrt-unused"] == [2]


def test_xrt_client_settings_go_from_a_script():
    """XRT's client read them (torch_xla 1.13 xla_client); torch_xla 2.x has no such setting."""
    text = (
        "export XLA_TENSOR_ALLOCATOR_MAXSIZE=100000000\nXLA_HANDLE_RELEASE_THREADS=4 XLA_IR_DEBUG=1 python3 train.py\n"
    )
    outcome = rewrite(text)
    assert outcome.text == "XLA_IR_DEBUG=1 python3 train.py\n"
    assert [f.message.split(":")[0] for f in outcome.changes] == [
        "removed XLA_TENSOR_ALLOCATOR_MAXSIZE",
        "removed XLA_HANDLE_RELEASE_THREADS",
    ]


def test_a_setting_the_script_reads_back_is_its_own_and_kept():
    # round 13: pod scripts set TPU_NUM_DEVICES, then hand $TPU_NUM_DEVICES to fairseq as its world
    # size; removing the setting emptied that argument, and its reads were asked as unset
    text = "export TPU_NUM_DEVICES=8\nexport XRT_WORKERS=x\npython train.py --distributed-world-size $TPU_NUM_DEVICES\n"
    outcome = rewrite(text)
    assert outcome.text == text.replace("export XRT_WORKERS=x\n", "")
    assert [f.rule for f in outcome.manual if "read here" in f.detail] == []


@pytest.mark.parametrize("value, asked", [("8", False), ("4", False), ("'4'", False), ("1", True), ("2", True)])
def test_only_fewer_devices_than_a_whole_host_are_asked_about(value, asked):
    # round 13: v4-8 launch scripts set 4, every chip of a v4 host, which PJRT opens unasked;
    # a v3-8's 8 likewise. One or two devices is a run on part of the host: a person's choice.
    text = f"export XRT_TPU_CONFIG='localservice;0;localhost:51011'\nexport TPU_NUM_DEVICES={value}\npython3 train.py\n"
    outcome = rewrite(text)
    assert "TPU_NUM_DEVICES" not in outcome.text or asked
    assert [f.line for f in outcome.manual if "TPU_VISIBLE_CHIPS" in f.detail] == [2] * asked
