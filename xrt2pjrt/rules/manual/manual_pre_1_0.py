"""torch_xla_py.* (before 1.0), and torch_xla.distributed.data_parallel (threads driving several
devices from one process, the XRT-era way): report. An import of data_parallel that nothing reads
is left alone: the module still imports on the target (the API surface tables say where not, and
import-gone-module removes it there), so that code needs no change

The module ships in 2.9, but its threads no longer train: under PJRT they share one default
device, and their all-reduces never meet, so XLA ends the process (a run on 2.9's CPU with two
devices, against the threads of xmp.spawn, which train: tests/rules/manual/test_manual_pre_1_0.py).
"""

from __future__ import annotations

import ast

import libcst as cst

from xrt2pjrt.python import spawn_site
from xrt2pjrt.python.imports import dotted, import_bindings
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.rules.manual._manual import ImportedModuleRule, imported_modules

_DATA_PARALLEL = "torch_xla.distributed.data_parallel"


class PreOneZero(ImportedModuleRule):
    id = "manual-pre-1.0"
    fix = "none"
    summary = "torch_xla_py.* (before 1.0) and torch_xla.distributed.data_parallel: reported"
    examples = (
        Example(
            "import torch_xla_py.xla_model as xm\n",
            dedent("""
                # TODO(xrt2pjrt): port this file by hand to torch_xla 2.x [manual-pre-1.0]
                import torch_xla_py.xla_model as xm
            """),
            manual=("pre-1.0",),
        ),
        Example(
            dedent("""
                import torch_xla.distributed.data_parallel as dp

                model = dp.DataParallel(net, device_ids=devices)
            """),
            dedent("""
                # TODO(xrt2pjrt): port this to xmp.spawn by hand [manual-pre-1.0]
                import torch_xla.distributed.data_parallel as dp

                model = dp.DataParallel(net, device_ids=devices)
            """),
            manual=("data_parallel",),
        ),
        Example.unchanged(  # tmabraham/fastai_tpu, BigGAN-Pytorch-TPU: a leftover import, which still imports
            dedent("""
                import torch_xla.distributed.data_parallel as dp
                import torch_xla.distributed.xla_multiprocessing as xmp

                xmp.spawn(train_loop)
            """),
        ),
    )

    def matches(self, module):
        return module == "torch_xla_py" or module.startswith("torch_xla_py.") or module == _DATA_PARALLEL

    def leave(self, ctx, original, updated):
        if _DATA_PARALLEL in imported_modules(original) and not _reads_data_parallel(ctx.tree, original):
            return updated  # nothing to port: an import that still imports, or one import-gone-module removes
        return super().leave(ctx, original, updated)

    def item(self, module):
        if "data_parallel" in module:
            return (
                "port this to xmp.spawn by hand",
                f"{module} drives several devices from one process with threads, the XRT-era way; under torch_xla "
                "2.x their all-reduces never meet: port this to xmp.spawn by hand",
            )
        return (
            "port this file by hand to torch_xla 2.x",
            f"{module} is a pre-1.0 module: port this file by hand (torch_xla.core.xla_model, torch_xla.runtime)",
        )


def _reads_data_parallel(tree: ast.Module | None, node: cst.Import | cst.ImportFrom) -> bool:
    """True when the file reads anything ``node`` binds from torch_xla.distributed.data_parallel:
    the name it binds (``dp``, ``DataParallel``), or the module spelled out through the package
    (``import torch_xla.distributed.data_parallel`` binds ``torch_xla``), anywhere in the file;
    True too when ast cannot read the file."""
    if tree is None:
        return True
    wanted = set()  # the local names, and the dotted chains, that read what it binds
    for local, target, alias in import_bindings(node):
        spelled = dotted(alias.name) if isinstance(node, cst.Import) else target
        if spelled == _DATA_PARALLEL or spelled.startswith(f"{_DATA_PARALLEL}."):
            wanted.add(local if isinstance(node, cst.ImportFrom) or alias.asname else spelled)
    for read in spawn_site.of_type(tree, (ast.Name, ast.Attribute)):
        if isinstance(read, ast.Name) and isinstance(read.ctx, ast.Load) and read.id in wanted:
            return True
        if isinstance(read, ast.Attribute) and read.attr == "data_parallel" and ast.unparse(read) in wanted:
            return True
    return False
