"""api-xrt-metric-names beyond its examples: XRT's metric names become PJRT's, and those PJRT
never records are reported."""

from python_migrate import migrate


def test_xrt_metric_names_become_pjrts_and_those_pjrt_never_records_are_reported():
    # checked on CPU with torch_xla 2.9: after a step, met.metric_names() has TransferToDeviceTime
    # and TransferFromDeviceTime, and metric_data of an XRT name is None
    out = migrate("import torch_xla.debug.metrics as met\n\nt = met.metric_data(\"TransferFromServerTime\")\n"
                  "n = met.counter_value('XrtCompile')\nother = met.metric_data('CompileTime')\n")
    assert 't = met.metric_data("TransferFromDeviceTime")\n' in out.text
    assert "other = met.metric_data('CompileTime')\n" in out.text
    assert [(item.rule, item.line) for item in out.manual] == [("api-xrt-metric-names", 4)]
