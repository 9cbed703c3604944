"""env-xrt-unprefixed beyond its examples: COLAB_TPU_ADDR read in Python."""

from python_migrate import migrate


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
