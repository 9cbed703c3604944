"""xrt2pjrt doctor and the settings surface: a variable the installed torch_xla only warns
about, warns is deprecated, or reads nowhere, set in the environment the program runs in."""

import pytest

from test_doctor import clean_env, doctor_json
from xrt2pjrt.runtime import doctor

pytestmark = pytest.mark.xla  # (the doctor reads the installed torch_xla's release)


def _problems(record) -> dict[str, dict]:
    return {p["message"].split(" ")[0]: p for p in record["problems"]}


def test_fp16_that_only_warns_must_be_fixed_and_bf16_is_a_warning():
    record, code = doctor_json(clean_env(PJRT_DEVICE="CPU", XLA_USE_FP16="1", XLA_USE_BF16="1"))
    problems = _problems(record)
    assert problems["XLA_USE_FP16"]["must_fix"] and "has no effect" in problems["XLA_USE_FP16"]["message"]
    assert not problems["XLA_USE_BF16"]["must_fix"] and "deprecated" in problems["XLA_USE_BF16"]["message"]
    assert code == doctor.EXIT_MUST_FIX


def test_a_setting_the_release_reads_nowhere_is_named_and_one_it_reads_is_not():
    record, _ = doctor_json(clean_env(PJRT_DEVICE="CPU", XLA_TRIM_GRAPH_SIZE="100000", XLA_IR_DEBUG="1"))
    problems = _problems(record)
    assert "read by nothing from torch_xla 2.5" in problems["XLA_TRIM_GRAPH_SIZE"]["message"]
    assert "XLA_IR_DEBUG" not in problems
