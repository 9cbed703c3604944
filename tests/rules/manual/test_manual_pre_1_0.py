"""manual-pre-1.0 beyond its examples: data_parallel, which every 2.x release still has, is to
port where used and to delete where not, and is never removed."""

import pytest

from python_migrate import migrate


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
