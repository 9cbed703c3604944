"""torch_xla._XLAC._xla_set_use_full_mat_mul_precision(True/False) (gone in 2.5) →
torch_xla.backends.set_mat_mul_precision('highest'/'default') (2.8+), or the _XLAC string setter on
2.5-2.7

XRT-era code turned on full-precision float32 matmuls on TPU through the private binding
``_xla_set_use_full_mat_mul_precision(use_full_mat_mul_precision=True)``: True chose XLA's HIGHEST
precision, False its DEFAULT (pytorch/xla v1.13.0 torch_xla/csrc/init_python_bindings.cpp:1202).
torch_xla 2.5 removed it and took the precision by name instead,
``_XLAC._xla_set_mat_mul_precision('highest')`` (v2.5.0 init_python_bindings.cpp:2019); 2.8
gave that a public spelling, ``torch_xla.backends.set_mat_mul_precision`` (v2.9.0
torch_xla/backends/__init__.py:41), which takes 'default', 'high' or 'highest'.

With a literal True or False the call is rewritten to the target release's setter, which sets
the same precision. With any other argument the value is known only at run time: the call is
left to api-not-in-target, which reports it with the same replacement. Below 2.5 the old
binding still exists and nothing changes.
"""

from __future__ import annotations

import libcst as cst

from xrt2pjrt.python.rule import PythonRule, argument, literal
from xrt2pjrt.registry import Example, dedent

_OLD = "torch_xla._XLAC._xla_set_use_full_mat_mul_precision"
# The XLA precision the old setter's bool chose, by the name the new setters take.
_PRECISION = {True: "highest", False: "default"}


class FullMatMulPrecision(PythonRule):
    id = "api-full-mat-mul-precision"
    summary = "_XLAC._xla_set_use_full_mat_mul_precision(True/False) (gone in 2.5) → the target's setter"
    names = frozenset({_OLD})
    min_version = (2, 5)
    examples = (
        Example(
            dedent("""
                import torch_xla

                torch_xla._XLAC._xla_set_use_full_mat_mul_precision(use_full_mat_mul_precision=True)
            """),
            dedent("""
                import torch_xla
                import torch_xla.backends

                torch_xla.backends.set_mat_mul_precision('highest')
            """),
        ),
        Example(
            dedent("""
                import torch_xla

                torch_xla._XLAC._xla_set_use_full_mat_mul_precision(False)
            """),
            dedent("""
                import torch_xla

                torch_xla._XLAC._xla_set_mat_mul_precision('default')
            """),
            options={"target_version": (2, 7)},
        ),
        Example.unchanged(
            dedent("""
                import torch_xla

                torch_xla._XLAC._xla_set_use_full_mat_mul_precision(True)
            """),
            options={"target_version": (2, 4)},
        ),
        Example(  # pytorch/xla v1.13's test/test_mp_distributed_mm.py
            dedent("""
                import torch_xla

                torch_xla._XLAC._xla_set_use_full_mat_mul_precision(
                    use_full_mat_mul_precision=True)
            """),
            dedent("""
                import torch_xla
                import torch_xla.backends

                torch_xla.backends.set_mat_mul_precision('highest')
            """),
        ),
    )

    @classmethod
    def needs(cls, text, target):
        """The public setter it writes from 2.8 on; the string binding from 2.5 on."""
        if target < cls.min_version or _OLD.rpartition(".")[2] not in text:
            return (2, 1)
        return (2, 8) if target >= (2, 8) else cls.min_version

    def call(self, ctx, node, name):
        hit = argument(ctx.original, "use_full_mat_mul_precision", 0)
        full = literal(hit[1].value) if hit is not None and len(ctx.original.args) == 1 else None
        if full not in _PRECISION:
            return node
        precision = cst.Arg(cst.SimpleString(f"'{_PRECISION[full]}'"))
        if ctx.target_version >= (2, 8):
            setter = ctx.ref("torch_xla.backends", "set_mat_mul_precision")
            ctx.require("torch_xla.backends")  # `import torch_xla` alone does not load it
        else:
            setter = ctx.ref("torch_xla", "_XLAC._xla_set_mat_mul_precision")
        ctx.change(f"_xla_set_use_full_mat_mul_precision({full}) → {_PRECISION[full]!r} precision")
        # the one short argument goes on the line of the call, wherever the old one was
        return node.with_changes(func=setter, args=[precision], whitespace_before_args=cst.SimpleWhitespace(""))
