"""env-xrt-tpu-config beyond its examples: a write of XRT_TPU_CONFIG that the file reads again stays."""

from python_migrate import migrate


def test_a_write_of_a_variable_the_file_reads_again_stays():
    # Found in danielkunin/neural-mechanics: renamed, the write left a read raising KeyError.
    source = (
        'import os\n\nos.environ["XRT_TPU_CONFIG"] = "localservice;0;localhost:51011"\n'
        'print("config:", os.environ["XRT_TPU_CONFIG"])\n'
        "os.environ.setdefault('XRT_DEVICE_MAP', 'CPU:0;/job:localservice/replica:0/task:0/device:XLA_CPU:0')\n"
    )
    out = migrate(source)
    assert 'os.environ["XRT_TPU_CONFIG"] = "localservice;0;localhost:51011"\n' in out.text
    assert "os.environ.setdefault('PJRT_DEVICE', 'CPU')" in out.text  # not read again: migrated
    (kept,) = [m for m in out.manual if "this write stays" in m.detail]
    assert kept.line == 3 and "read elsewhere in this file" in kept.detail and "(line 4)" in kept.shown()
    assert "set PJRT_DEVICE='TPU' instead" in kept.detail
    assert migrate(out.text).text == out.text
