"""manual-import-stand-in beyond its examples: the stand-in is no binding, and is reported
only where the migration respells a call made through it."""

import pytest

from python_migrate import migrate


@pytest.mark.parametrize(
    "stand_in, use, reported",
    [
        ("xm = _FakeXla()", "rank = xm.get_ordinal()", True),
        ("xm = SimpleNamespace(is_master_ordinal=lambda: True)", "print(xm.is_master_ordinal())", False),
        ("xm = SimpleNamespace(xla_device=lambda: 'cpu')\n    other = 1", "device = xm.xla_device()", True),
    ],
)
def test_a_stand_in_is_reported_where_its_calls_are_respelt(stand_in, use, reported):
    source = f"try:\n    import torch_xla.core.xla_model as xm\nexcept ImportError:\n    {stand_in}\n\n{use}\n"
    out = migrate(source)
    assert [m.rule for m in out.manual] == ["manual-import-stand-in"] * reported
    assert ("xm.get_ordinal()" in out.text) is False  # torch_xla's name where it imports: respelt


def test_a_stand_in_outside_a_handler_still_makes_the_name_unknown():
    out = migrate("import torch_xla.core.xla_model as xm\n\nif cpu:\n    xm = _FakeXla()\nrank = xm.get_ordinal()\n")
    assert "xm.get_ordinal()" in out.text and not out.manual
