"""manual-memory-info beyond its examples: an item promises a KeyError only where the file reads
the XRT-era keys; code that only shows the dict gets none."""

import pytest

from python_migrate import migrate

HEAD = "import logging\nimport torch_xla.core.xla_model as xm\n\n"


@pytest.mark.parametrize(
    "body",
    [
        "logging.info('memory: %s', xm.get_memory_info(device))\n",
        "info = xm.get_memory_info(device)\nprint(info)\n",
        "print({k: v // 2**20 for k, v in xm.get_memory_info(device).items()})\n",
        # probing the keys of either runtime: whichever the dict holds is read
        "info = xm.get_memory_info(device)\ntotal = next(info[k] for k in ('kb_total', 'bytes_limit') if k in info)\n",
    ],
)
def test_code_that_only_shows_the_memory_info_gets_no_item(body):
    out = migrate(HEAD + body)
    assert not out.manual and out.text == HEAD + body


def test_a_read_of_an_xrt_era_key_by_get_is_reported_at_the_call():
    out = migrate(HEAD + "info = xm.get_memory_info(device)\nfree = info.get('kb_free', 0) // 1024\n")
    assert [(item.rule, item.line) for item in out.manual] == [("manual-memory-info", 4)]
