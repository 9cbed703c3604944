"""api-rendezvous-payload beyond its examples: a payload that is a str for sure, and one that
is not ASCII."""

import pytest

from python_migrate import migrate, text


@pytest.mark.parametrize(
    "payload, reported",
    [
        ("'ready %d' % rank", True),
        ("'x' + str(rank)", True),
        ("'ab' 'cd'", True),
        ("msg", True),
        ("tag", False),
        ("data", False),
        ("b'x' + data", False),
    ],
)
def test_a_rendezvous_payload_that_is_a_str_for_sure_is_reported(payload, reported):
    # 2.9's rendezvous raises TypeError for a str, which XRT's took (checked on CPU)
    out = migrate(
        "import torch_xla.core.xla_model as xm\n\ndef f(rank, tag):\n    msg = 'done %s' % tag\n"
        f"    data = b'x'\n    xm.rendezvous('step', {payload})\n"
    )
    assert [item.rule for item in out.manual] == ["api-rendezvous-payload"] * reported


def test_a_non_ascii_rendezvous_payload_is_encoded_as_xrt_did():
    assert "xm.rendezvous('step', 'héllo'.encode())" in text(
        "import torch_xla.core.xla_model as xm\n\nxm.rendezvous('step', 'héllo')\n"
    )
