"""manual-pre-1.0 beyond its examples: data_parallel, which every 2.x release still has, is to
port where used and to delete where not, and is never removed."""

import pytest

from python_migrate import migrate
from torch_xla_names import resolve as _resolve
from xrt2pjrt.python import api_surface, rewriter as python
from xrt2pjrt.registry import TARGET_VERSIONS, Options, all_rules

OPTIONS = Options(rules=frozenset(rid for rid, rule in all_rules().items() if rule.kind == "python"))


@pytest.mark.parametrize("imports, use", [
    ("import torch_xla.distributed.data_parallel as dp", "dp.DataParallel(net, device_ids=devices)"),
    ("from torch_xla.distributed import data_parallel", "data_parallel.DataParallel(net)"),
    ("from torch_xla.distributed.data_parallel import DataParallel", "DataParallel(net)"),
    ("import torch_xla.distributed.data_parallel", "torch_xla.distributed.data_parallel.DataParallel(net)"),
])
def test_data_parallel_is_to_port_where_used_and_to_delete_where_not(imports, use):
    # tmabraham/fastai_tpu imports it unused beside xmp.spawn: "port this to xmp.spawn" misled
    used = migrate(f"import torch_xla\n{imports}\n\nmodel = {use}\nprint(torch_xla.__version__)\n")
    unused = migrate(f"import torch_xla\n{imports}\n\nmodel = net\nprint(torch_xla.__version__)\n")
    for out, wanted in ((used, "port this to xmp.spawn by hand"), (unused, "imported but never used here: delete")):
        (item,) = [m for m in out.manual if m.rule == "manual-pre-1.0"]
        assert item.line == 2 and wanted in item.message
        assert f"[manual-pre-1.0]\n{imports}\n" in out.text  # reported, never removed: it imports on 2.x


def test_data_parallel_is_in_every_target_release_so_an_unused_import_is_reported_not_removed():
    # manual-pre-1.0 tells to delete an unused import of it (it still imports), where
    # import-gone-module removes what a release lacks; tmabraham/fastai_tpu imports it unused
    assert [release for release in TARGET_VERSIONS if api_surface.lacks("torch_xla.distributed.data_parallel", release)] == []
    out = python.rewrite("import torch_xla.distributed.data_parallel as dp\nimport torch_xla.distributed.xla_multiprocessing "
                         "as xmp\n\nxmp.spawn(train_loop)\n", OPTIONS)
    assert [(f.rule, f.line) for f in out.manual] == [("manual-pre-1.0", 1)] and not out.changes
    assert "imported but never used here: delete the import" in out.manual[0].message


@pytest.mark.xla
def test_data_parallel_imports_from_the_installed_torch_xla():
    _resolve("torch_xla.distributed.data_parallel.DataParallel")
