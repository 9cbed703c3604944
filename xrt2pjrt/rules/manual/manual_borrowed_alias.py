"""xm / xmp that are not torch_xla's own imports in this file: reported, once a name.

The codemod knows a call is torch_xla's from the file's imports (``import
torch_xla.core.xla_model as xm``). A project that takes ``xm`` from a module of its own (``from
tpu_utils import xm``, a relative import, ``from util import *`` where nothing else binds
``xm``), or hands the module in (a parameter, ``self.xm``),
hides that: the XRT-era calls made through it are left as they are, and those torch_xla 2.x
removed fail at run time. The first call through such a name of a function the rules migrate
is reported: import the module from torch_xla here and run xrt2pjrt again (for a module handed
in, only a call the target lacks, under ``--target native``). Libraries with an ``xm`` of their
own (XManager) are left alone.
"""

from __future__ import annotations

import ast
import functools
import re

import libcst as cst

from xrt2pjrt.python import spawn_site
from xrt2pjrt.python.api_surface import lacks
from xrt2pjrt.python.rule import PythonRule, code
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.rules.manual._manual import CONVENTIONAL, rule_names

_LOOK_ALIKES = ("xmanager",)  # libraries with an xm of their own (Google's XManager)
_RELATIVE_IMPORT = r"^[ \t]*from[ \t]+\.[\w.]*[ \t]+import[^\n]*\b{}\b"
_STAR_IMPORT = re.compile(r"^[ \t]*from[ \t]+([\w.]+)[ \t]+import[ \t]+\*", re.M)


class BorrowedAlias(PythonRule):
    id = "manual-borrowed-alias"
    fix = "none"
    words = ("torch_xla", "xrt_world_size")  # a file may call torch_xla by a name borrowed from its own module
    aliases = frozenset(CONVENTIONAL)
    # the calls it judges, wherever the name comes from (a parameter's xm.get_ordinal() holds no other word)
    statement_words = tuple(f"{name}." for name in CONVENTIONAL)
    summary = "xm / xmp taken from a project module or handed in (a parameter, self.xm): reported once a name"
    nodes = (cst.Call,)
    examples = (
        Example(
            dedent("""
                from tpu_utils import xm

                n = xm.xrt_world_size()
            """),
            dedent("""
                from tpu_utils import xm

                # TODO(xrt2pjrt): import it from torch_xla and rerun [manual-borrowed-alias]
                n = xm.xrt_world_size()
            """),
            manual=("comes from tpu_utils",),
        ),
        Example(  # tpu_star 0.0.1: the caller hands its xm in
            dedent("""
                def get_sampler(dataset, xm):
                    return DistributedSampler(dataset, num_replicas=xm.xrt_world_size())
            """),
            dedent("""
                def get_sampler(dataset, xm):
                    # TODO(xrt2pjrt): migrate its XRT-era calls by hand [manual-borrowed-alias]
                    return DistributedSampler(dataset, num_replicas=xm.xrt_world_size())
            """),
            manual=("is no import of this file",),
        ),
        Example(  # a training script whose xm, xmp and pl come from the project's helpers module
            dedent("""
                from util import *

                n = xm.xrt_world_size()
            """),
            dedent("""
                from util import *

                # TODO(xrt2pjrt): import it from torch_xla and rerun [manual-borrowed-alias]
                n = xm.xrt_world_size()
            """),
            manual=("comes from util (a star import)",),
        ),
        Example.unchanged(  # Google's XManager has an xm of its own
            dedent("""
                from xmanager import xm

                with xm.create_experiment('x') as experiment:
                    pass
            """),
        ),
    )

    def __init__(self):
        self.reported: set[str] = set()

    def leave(self, ctx, original, updated):
        func = original.func
        if not isinstance(func, cst.Attribute) or not isinstance(func.value, (cst.Name, cst.Attribute)):
            return updated
        holder = func.value
        local = holder.value if isinstance(holder, cst.Name) else holder.attr.value
        module = CONVENTIONAL.get(local)
        if module is None or code(holder) in self.reported or f"{module}.{func.attr.value}" not in _xrt_era_names():
            return updated
        origin = ctx.resolve(holder)
        if origin is None and isinstance(holder, cst.Name):  # a relative import binds nothing the codemod can read
            relative = re.search(_RELATIVE_IMPORT.format(local), ctx.source, re.M)
            where = relative and relative.group(0).split()[1] or _star_import(ctx, local)
        else:
            where = origin and (
                None if origin.startswith(("torch_xla", "xrt2pjrt", *_LOOK_ALIKES)) else origin.rpartition(".")[0]
            )
        if where:
            self.reported.add(code(holder))
            ctx.decide(
                "import it from torch_xla and rerun",
                detail=f"{local} comes from {where}, not from torch_xla: the codemod follows torch_xla's own "
                f"imports only; import {module} as {local} here, then run xrt2pjrt again",
            )
        elif (
            origin is None
            and ctx.options.target == "native"
            and lacks(f"{module}.{func.attr.value}", ctx.target_version)
            and (isinstance(holder, cst.Attribute) or _a_parameter(ctx.tree, local, ctx.line))
        ):
            # a parameter, an attribute (self.xm): handed the module by other code (a name the
            # file assigns holds what the file says, xm = Fake(); one it never binds may be
            # another notebook cell's import, when the cells are read one by one). Only a
            # call the target lacks fails there: xm.master_print(...) through it runs as before.
            self.reported.add(code(holder))
            ctx.decide(
                "migrate its XRT-era calls by hand",
                detail=f"{code(holder)} is no import of this file (a parameter, an attribute): the codemod "
                f"follows torch_xla's own imports only, so if it holds {module}, its XRT-era calls "
                f"({code(func)}() here) are left as they are, and those torch_xla 2.x removed fail there: "
                "migrate them by hand, or call the module by an import of this file",
            )
        return updated


def _star_import(ctx, name: str) -> str | None:
    """The module of the file's ``from MODULE import *`` (not torch_xla's: manual-star-import
    says those) that must have bound ``name``, which nothing else in the file binds."""
    star = _STAR_IMPORT.search(ctx.source)
    if star is None or star.group(1).startswith("torch_xla") or spawn_site.bindings_seen_at(ctx.tree, ctx.line, name):
        return None
    return f"{star.group(1)} (a star import)"


def _a_parameter(tree: ast.Module | None, name: str, line: int) -> bool:
    """Whether ``name``, read on ``line``, is a parameter (or bound otherwise than by a plain
    assignment) in the innermost scope around it that binds it at all."""
    bound = spawn_site.bindings_seen_at(tree, line, name)
    return bool(bound) and all(value is None for value in bound)


@functools.cache
def _xrt_era_names() -> frozenset[str]:
    """What the Python rules rewrite or report in the modules XRT-era code borrowed."""
    return frozenset(name for name in rule_names() if name.startswith(tuple(CONVENTIONAL.values())))
