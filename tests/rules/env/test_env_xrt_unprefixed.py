"""env-xrt-unprefixed beyond its examples: COLAB_TPU_ADDR read in Python."""

import json

from python_migrate import migrate
from xrt2pjrt.mixed import notebook
from xrt2pjrt.registry import Options, all_rules


def test_colab_tpu_address_read_is_reported():
    outcome = migrate("""\
        import os
        assert os.environ['COLAB_TPU_ADDR'], 'Make sure to select TPU'
        """)
    assert outcome.text == (
        "import os\n# TODO(xrt2pjrt): test xr.device_type() == 'TPU' instead [env-xrt-unprefixed]\n"
        "assert os.environ['COLAB_TPU_ADDR'], 'Make sure to select TPU'\n"
    )
    assert outcome.manual[0].detail.endswith("test PJRT_DEVICE or xr.device_type() == 'TPU' instead")
    assert [(f.rule, f.line) for f in outcome.manual] == [("env-xrt-unprefixed", 2)]


def test_colab_tpu_addr_in_a_notebook_saved_for_a_gpu_runtime_is_not_asked_about():
    # A GPU runtime never set it: `assert os.environ['COLAB_TPU_ADDR']` failed there under XRT too.
    check = "import os\nimport torch\nassert os.environ['COLAB_TPU_ADDR'], 'select a TPU runtime'\n"

    def asked(metadata: dict) -> list[str]:
        cell = {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": check}
        text = json.dumps({"cells": [cell], "metadata": metadata, "nbformat": 4, "nbformat_minor": 5})
        return [m.rule for m in notebook.rewrite(text, Options(rules=frozenset(all_rules()))).manual]

    assert asked({"accelerator": "TPU"}) == ["env-xrt-unprefixed"]
    assert asked({"accelerator": "GPU"}) == asked({"kaggle": {"accelerator": "nvidiaTeslaT4"}}) == []


def test_every_core_of_a_v3_8_needs_no_item_and_fewer_do():
    """issue 32's ninth round: a patched copy of xla_dist.py sets TPU_NUM_DEVICES to 8 for each
    worker, which PJRT opens unasked; the dict's XRT settings are env-xrt-replica-vars' item."""
    outcome = migrate("""\
        import os
        import torch_xla.core.xla_env_vars as xenv
        env = {xenv.HOST_ORDINAL: str(ordinal), xenv.TPU_NUM_DEVICES: 8}
        os.environ['TPU_NUM_DEVICES'] = '8'
        os.environ['TPU_NUM_DEVICES'] = '1'
        """)
    assert [(f.line, f.rule) for f in outcome.manual] == [(3, "env-xrt-replica-vars"), (5, "env-xrt-unprefixed")]
