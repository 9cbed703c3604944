"""XLA_USE_SPMD=1 set in Python → torch_xla.runtime.use_spmd() (unsafe: review it).

torch_xla 2.1 made ``torch_xla.runtime.use_spmd()`` the way to turn SPMD on, and from then
to 2.9 every release warns that the variable is deprecated (python/settings_surface.txt).
The call sets the variable itself, and more: where tensors are already on a device it moves
them to the SPMD device, which the variable alone never did. A program that set it before
touching the device runs the same; one that set it later now works where it did not, so the
fix is unsafe by this project's rule: the code runs on the target, and the fix may change
what it does. A statement ``os.environ['XLA_USE_SPMD'] = '1'`` (or ``setdefault``) becomes the
call where the import of torch_xla.runtime the rewrite adds (after the file's imports) has
run: below the imports, or in a function. One above them, set before torch_xla is imported,
and any other use of the variable, is reported with the same advice.
"""

from __future__ import annotations

import ast

import libcst as cst

from xrt2pjrt.file_caches import per_file
from xrt2pjrt.meanings.settings import WARNED
from xrt2pjrt.python.environment import KEEP, EnvRule
from xrt2pjrt.python.renames import XR
from xrt2pjrt.python.rule import literal
from xrt2pjrt.python.settings_surface import status
from xrt2pjrt.registry import Example, dedent

NAME = "XLA_USE_SPMD"
# The values torch_xla reads as on (utils.check_env_flag, sys_util::GetEnvBool)
_ON = ("1", "true")


class UseSpmd(EnvRule):
    id = "env-use-spmd"
    summary = "XLA_USE_SPMD=1 set in Python (deprecated) → torch_xla.runtime.use_spmd(); other uses reported"
    fix = "unsafe"
    words = (NAME,)
    examples = (
        Example(
            dedent("""
                import os
                import torch_xla

                os.environ['XLA_USE_SPMD'] = '1'
            """),
            dedent("""
                import os
                import torch_xla
                import torch_xla.runtime as xr

                xr.use_spmd()
            """),
        ),
        Example(  # set before torch_xla is imported: the call would run before its import
            dedent("""
                import os
                os.environ['XLA_USE_SPMD'] = '1'
                import torch_xla
            """),
            dedent("""
                import os
                # TODO(xrt2pjrt): deprecated: call xr.use_spmd() first [env-use-spmd]
                os.environ['XLA_USE_SPMD'] = '1'
                import torch_xla
            """),
            manual=("torch_xla.runtime.use_spmd()",),
        ),
        Example(
            dedent("""
                import os

                spmd = os.environ.get('XLA_USE_SPMD') == '1'
            """),
            dedent("""
                import os

                # TODO(xrt2pjrt): deprecated: call xr.use_spmd() first [env-use-spmd]
                spmd = os.environ.get('XLA_USE_SPMD') == '1'
            """),
            manual=("torch_xla.runtime.use_spmd()",),
        ),
    )

    def handles(self, variable):
        return variable == NAME

    def write(self, variable, value, target):
        return KEEP, self.read(variable)

    def read(self, variable):
        return WARNED[NAME]

    def leave(self, ctx, original, updated):
        if (
            status(NAME, ctx.target_version) == "deprecated"
            and ctx.is_whole_statement()
            and _after_imports(ctx)
            and self._turns_on(ctx, updated)
        ):
            ctx.change("XLA_USE_SPMD=1 → xr.use_spmd(): the variable is deprecated from torch_xla 2.1")
            call = cst.Call(ctx.ref(XR, "use_spmd", "xr"))
            return cst.Expr(call) if isinstance(updated, cst.Assign) else call
        return super().leave(ctx, original, updated)

    def _turns_on(self, ctx, node) -> bool:
        """``os.environ['XLA_USE_SPMD'] = '1'`` or ``os.environ.setdefault('XLA_USE_SPMD', '1')``."""
        if (
            isinstance(node, cst.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0].target, cst.Subscript)
        ):
            target = node.targets[0].target
            key, value = self._subscript_key(ctx, target) if self._environ(ctx, target.value) else None, node.value
        elif isinstance(node, cst.Call) and ctx.resolve(node.func) == "os.environ.setdefault" and len(node.args) == 2:
            key, value = self._key(ctx, node.args[0].value), node.args[1].value
        else:
            return False
        return key == NAME and str(literal(value)).lower() in _ON


def _after_imports(ctx) -> bool:
    """Whether the statement runs after the file's module-level imports: below the last, or in a function."""
    if not ctx.runs_on_import:
        return True
    last = _last_import(ctx.tree) if ctx.tree is not None else None
    return last is not None and ctx.line > last


@per_file()  # (asked at each statement the rule looks at: a scan each time was quadratic)
def _last_import(tree: ast.Module) -> int | None:
    """The last line of the file's last module-level import; None without one."""
    return max((node.end_lineno for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))), default=None)
