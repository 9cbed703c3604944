"""ParallelLoader's private ``_loader`` (its DataLoader) → ``_cpu_loader``, the name 2.5 gave it.

XRT-era code reached the DataLoader behind a device loader through private attributes: a
``PerDeviceLoader``'s ``_loader`` is its ``ParallelLoader``, whose ``_loader`` was the DataLoader
(pytorch/xla v1.13.0 torch_xla/distributed/parallel_loader.py:85). fastai's TPU callbacks patched
``len(self._loader._loader)`` onto ``pl.PerDeviceLoader`` as its ``__len__``; Trainers counted
``len(loader._loader._loader.dataset)`` and called ``set_epoch`` on its sampler. torch_xla 2.5
renamed the ParallelLoader's attribute ``_cpu_loader`` (v2.5.0 parallel_loader.py:94), so those
reads raise AttributeError; a PerDeviceLoader's ``_loader`` and an MpDeviceLoader's keep their name.

The read is renamed where the file shows what it is read from: ``X._loader._loader`` where ``X``
is a PerDeviceLoader (a parameter annotated so, or of a function the file patches onto the class,
a name tested with ``isinstance(X, pl.PerDeviceLoader)``, or one bound to a ``per_device_loader``
call's result), and ``P._loader`` where ``P`` is bound to a ``pl.ParallelLoader(...)``. A
``_loader`` chain of a class of the user's is left as it is.
"""

from __future__ import annotations

import ast

import libcst as cst

from xrt2pjrt.file_caches import per_file
from xrt2pjrt.python import spawn_site
from xrt2pjrt.python.rule import PythonRule
from xrt2pjrt.registry import Example, dedent

_PL = "torch_xla.distributed.parallel_loader"
_OLD, _NEW = "_loader", "_cpu_loader"
# How many ``._loader`` reads from a name reach the ParallelLoader's: two from a PerDeviceLoader
# (its own, then the ParallelLoader's), one from a ParallelLoader.
_PER_DEVICE, _PARALLEL = 2, 1


class LoaderInternals(PythonRule):
    id = "api-loader-internals"
    summary = "ParallelLoader's private `_loader` (renamed in 2.5) → `_cpu_loader`"
    statement_words = ("._loader",)
    nodes = (cst.Attribute,)
    min_version = (2, 5)
    examples = (
        Example(  # fastai's TPU callbacks: a length patched onto the device loader
            dedent("""
                import torch_xla.distributed.parallel_loader as pl

                def _len(self):
                    return len(self._loader._loader)

                pl.PerDeviceLoader.__len__ = _len
            """),
            dedent("""
                import torch_xla.distributed.parallel_loader as pl

                def _len(self):
                    return len(self._loader._cpu_loader)

                pl.PerDeviceLoader.__len__ = _len
            """),
        ),
        Example(
            dedent("""
                import torch_xla.distributed.parallel_loader as pl

                def num_examples(loader):
                    if isinstance(loader, pl.PerDeviceLoader):
                        return len(loader._loader._loader.dataset)
                    return len(loader.dataset)
            """),
            dedent("""
                import torch_xla.distributed.parallel_loader as pl

                def num_examples(loader):
                    if isinstance(loader, pl.PerDeviceLoader):
                        return len(loader._loader._cpu_loader.dataset)
                    return len(loader.dataset)
            """),
        ),
        Example(
            dedent("""
                import torch_xla.distributed.parallel_loader as pl

                def train(epoch, train_loader, device):
                    para_loader = pl.ParallelLoader(train_loader, [device])
                    para_loader._loader.sampler.set_epoch(epoch)
                    loader = para_loader.per_device_loader(device)
                    print(len(loader._loader._loader))
            """),
            dedent("""
                import torch_xla.distributed.parallel_loader as pl

                def train(epoch, train_loader, device):
                    para_loader = pl.ParallelLoader(train_loader, [device])
                    para_loader._cpu_loader.sampler.set_epoch(epoch)
                    loader = para_loader.per_device_loader(device)
                    print(len(loader._loader._cpu_loader))
            """),
        ),
        Example.unchanged(  # a class of the user's: its own _loader
            dedent("""
                import torch_xla.distributed.parallel_loader as pl

                class Batches:
                    def __len__(self):
                        return len(self._loader._loader)

                def epoch(loader, device):
                    return pl.MpDeviceLoader(loader, device)._loader
            """),
        ),
        Example.unchanged(
            dedent("""
                import torch_xla.distributed.parallel_loader as pl

                def _len(self: pl.PerDeviceLoader):
                    return len(self._loader._loader)
            """),
            options={"target_version": (2, 4)},
        ),
    )

    @classmethod
    def needs(cls, text, target):
        """The name it writes, from 2.5 on."""
        return cls.min_version if f".{_NEW}" in text or f"{_OLD}.{_OLD}" in text else (2, 1)

    def leave(self, ctx, original, updated):
        if updated.attr.value != _OLD:
            return updated
        base, reads = updated.value, 1
        if isinstance(base, cst.Attribute) and base.attr.value == _OLD:
            base, reads = base.value, 2
        if not isinstance(base, cst.Name) or ctx.tree is None:
            return updated
        function = spawn_site.function_at(ctx.tree, ctx.line)
        if _loaders(ctx.tree).get((id(function), base.value)) != reads:
            return updated
        ctx.change(f"ParallelLoader.{_OLD} → {_NEW}")
        return updated.with_changes(attr=cst.Name(_NEW))


@per_file()
def _loaders(tree: ast.Module) -> dict[tuple[int, str], int]:
    """(id of the innermost def, or of None at module level; a name) → how many ``._loader``
    reads from that name reach the ParallelLoader's DataLoader, for the names the file shows
    to be a PerDeviceLoader or a ParallelLoader."""
    bound = spawn_site.imported(tree)

    def names(node: ast.expr, kind: str) -> bool:
        return spawn_site.resolved(node, bound) == f"{_PL}.{kind}"

    found: dict[tuple[int, str], int] = {}
    patched = {
        value.id
        for node in spawn_site.of_type(tree, (ast.Assign,))
        for value in (node.value,)
        if isinstance(value, ast.Name)
        and any(isinstance(t, ast.Attribute) and names(t.value, "PerDeviceLoader") for t in node.targets)
    }
    for function in spawn_site.functions(tree):
        params = function.args.posonlyargs + function.args.args
        if params and (
            function.name in patched or (params[0].annotation and names(params[0].annotation, "PerDeviceLoader"))
        ):
            found[id(function), params[0].arg] = _PER_DEVICE
    for node in spawn_site.of_type(tree, (ast.Call, ast.Assign)):
        if isinstance(node, ast.Call):  # isinstance(loader, pl.PerDeviceLoader)
            if (
                isinstance(node.func, ast.Name)
                and node.func.id == "isinstance"
                and len(node.args) == 2
                and isinstance(node.args[0], ast.Name)
                and names(node.args[1], "PerDeviceLoader")
            ):
                found[id(spawn_site.function_at(tree, node.lineno)), node.args[0].id] = _PER_DEVICE
        elif isinstance(node.value, ast.Call) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            func, scope = node.value.func, id(spawn_site.function_at(tree, node.lineno))
            if isinstance(func, ast.Attribute) and func.attr == "per_device_loader":
                found[scope, node.targets[0].id] = _PER_DEVICE
            elif names(func, "ParallelLoader"):
                found[scope, node.targets[0].id] = _PARALLEL
    return found
