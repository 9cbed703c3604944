"""api-xrt-metric-names beyond its examples: XRT's metric names become PJRT's, and those PJRT
never records are reported, in calls and where a report is searched."""

import pytest

from python_migrate import migrate


def test_xrt_metric_names_become_pjrts_and_those_pjrt_never_records_are_reported():
    # checked on CPU with torch_xla 2.9: after a step, met.metric_names() has TransferToDeviceTime
    # and TransferFromDeviceTime, and metric_data of an XRT name is None
    out = migrate(
        "import torch_xla.debug.metrics as met\n\nt = met.metric_data(\"TransferFromServerTime\")\n"
        "n = met.counter_value('XrtCompile')\nother = met.metric_data('CompileTime')\n"
    )
    assert 't = met.metric_data("TransferFromDeviceTime")\n' in out.text
    assert "other = met.metric_data('CompileTime')\n" in out.text
    assert [(item.rule, item.line) for item in out.manual] == [("api-xrt-metric-names", 4)]


REPORT_HEAD = "import torch_xla.debug.metrics as met\n\nreport = met.metrics_report()\nother = read_log()\n"


@pytest.mark.parametrize(
    "check, rule, message",
    [
        ("'XrtTryFreeMemory' in report", "manual", "PJRT never records it"),
        ("'XrtCompile' not in met.short_metrics_report()", "manual", "PJRT never records it"),
        ("'TransferToServerTime' in met.metrics_report()", "change", "TransferToDeviceTime"),
        ("'XrtTryFreeMemory' in other", None, None),  # no report: a string of the program's own
        ("'CompileTime' in report", None, None),  # PJRT records it too
    ],
)
def test_a_metric_name_looked_for_in_a_report_is_one_pjrt_records(check, rule, message):
    out = migrate(REPORT_HEAD + f"if {check}:\n    print('reduce bs!')\n")
    found = {"manual": out.manual, "change": out.changes}
    assert [item.rule for item in out.manual + out.changes] == ["api-xrt-metric-names"] * (rule is not None)
    if rule is not None:
        assert message in f"{found[rule][0].message} {found[rule][0].detail}"
