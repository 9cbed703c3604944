"""api-dynamo-backend beyond its examples: the names it writes are backends of the installed
torch, the names it replaces are not, and other backends are left alone."""

import pytest

from python_migrate import migrate, same, text
from xrt2pjrt.rules.api.api_dynamo_backend import BACKENDS


@pytest.mark.xla
def test_the_new_names_are_the_installed_torch_s_backends_and_the_old_ones_are_gone():
    from torch._dynamo import list_backends

    known = set(list_backends(exclude_tags=()))
    assert set(BACKENDS.values()) <= known
    assert not set(BACKENDS) & known


def test_a_backend_of_another_name_or_from_a_variable_is_left_alone():
    same("import torch\n\nm = torch.compile(model, backend='inductor')\nn = torch.compile(model, backend=name)\n")


def test_every_import_form_of_torch_compile():
    assert text("from torch import compile as jit\n\nm = jit(model, backend='torchxla_trivial')\n") == (
        "from torch import compile as jit\n\nm = jit(model, backend='eager')\n"
    )
    assert text("import torch._dynamo\n\nf = torch._dynamo.optimize(backend='aot_torchxla_trivial')(f)\n") == (
        "import torch._dynamo\n\nf = torch._dynamo.optimize(backend='aot_eager')(f)\n"
    )


def test_an_old_name_kept_as_a_constant_is_reported():
    # round 13: a serving library's enum of torch.compile backends holds torch 2.0's XLA name
    out = migrate(
        "import enum\nimport torch\n\nclass Backend(enum.Enum):\n    XLA = 'torchxla_trace_once'\n\n"
        "def build(model, backend):\n    return torch.compile(model, backend=backend.value)\n"
    )
    assert [(item.line, item.message) for item in out.manual] == [(5, "use 'openxla_eval'")]
    assert not migrate("import torch\n\nm = torch.compile(m, backend='torchxla_trace_once')\n").manual
