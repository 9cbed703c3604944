"""Every torch_xla name the migrated file uses, held to the target release's API.

The specific rules rewrite what they know. These two make the rest visible, from the API
surface tables (python/api_surface.py, generated from the released wheels):

- ``import-gone-module``: an import of a module or name the target release lacks fails
  on import; it is removed when nothing uses it once the other rules are done, else
  reported (with its TODO line) with what to use instead;
- ``api-not-in-target``: runs after every other rule, on what they made of each spot: a
  reference the import resolver can resolve (attribute chain, name passed as a value,
  call) that reaches a name the target lacks, or a call passing a keyword or a positional
  argument its signature there does not take, is reported with the release that removed
  it and its replacement where one is known. A spot another rule has reported is left to
  that rule's item.
"""

from __future__ import annotations

import libcst as cst

from xrt2pjrt.registry import Example, register
from xrt2pjrt.python import imports
from xrt2pjrt.python.api_surface import Lack, entry, keyword_lacks, lacks
from xrt2pjrt.python.rule import PythonRule, code, literal
from xrt2pjrt.rules.shim_target import shim_defines

_NO_SCALER = "nothing replaces it (it served XLA:GPU): autocast to bfloat16 on TPU needs no scaler"

# What to use instead of a name (or a call's keyword, as ``name(keyword=)``) a release
# lacks; read from pytorch/xla v1.13 … v2.9. tests/test_target_api.py holds every entry to
# the table: the name is lacking in 2.9, and what the advice names exists there.
REPLACEMENTS = {
    "torch_xla.experimental.pjrt": "use torch_xla.runtime (the pjrt-* rules rewrite the calls they know)",
    "torch_xla.experimental.xla_sharding": "use torch_xla.distributed.spmd (import torch_xla.distributed.spmd as xs)",
    "torch_xla.experimental.xla_sharded_tensor": "use torch_xla.distributed.spmd.xla_sharded_tensor",
    "torch_xla.experimental.tpu": "nothing public replaces it; torch_xla.runtime has the device and process counts",
    "torch_xla.experimental.gpu": "nothing replaces it: torch_xla 2.9 has no GPU device",
    "torch_xla.amp.GradScaler": _NO_SCALER,
    # up to 2.0 it was torch.cuda.amp.autocast, which took no device
    "torch_xla.amp.autocast(device)": "pass the XLA device first: torch_xla.amp.autocast(torch_xla.device(), ...)",
    "torch_xla.amp.grad_scaler": _NO_SCALER,
    "torch_xla.utils.gcsfs": "use a GCS client of your own (google-cloud-storage, gcsfs, fsspec)",
    "torch_xla.utils.cached_dataset": "use a cache of your own (e.g. torch.save shards, or the datasets library)",
    "torch_xla.utils.tf_record_reader": "use a TFRecord reader of your own (e.g. tfrecord, tf.data)",
    "torch_xla.distributed.cluster": "nothing replaces it: it resolved XRT's TPU-node cluster",
    "torch_xla.distributed.worker": "nothing replaces it: it described XRT's TPU-node workers",
    "torch_xla.distributed.xrt_init": "nothing replaces it: PJRT needs no runtime set-up",
    "torch_xla.core.xrt_run_server": "nothing replaces it: PJRT runs no XRT server",
    "torch_xla.server_is_alive": "nothing replaces it: PJRT runs no XRT server",
    "torch_xla.core.xla_model.CollectiveContext": ("XRT's collective context is gone: drop it (the collectives "
                                                   "no longer take cctx=)"),
    "torch_xla._XLAC._xla_set_use_full_mat_mul_precision": (
        "use torch_xla.backends.set_mat_mul_precision('highest') (2.8+; 'default' for the old False), or "
        "torch_xla._XLAC._xla_set_mat_mul_precision('highest') on 2.5-2.7"),
    "torch_xla.runtime.requires_pjrt": "drop the decorator: from 2.1 PJRT is the only runtime",
    "torch_xla.core.xla_model.parse_xla_device": (
        "it parsed a runtime device name ('TPU:3') into ('TPU', 3), None for any other: parse it yourself, "
        "re.match(r'([A-Z]+):(\\d+)$', name) (torch.device() refuses such names)"),
    "torch_xla.core.xla_env_vars.GPU_NUM_DEVICES": "torch_xla 2.9 has no GPU device: stay on 2.8 for CUDA",
    "torch_xla.utils.dlpack.from_xla_cuda_to_cuda": "torch_xla 2.9 has no GPU device: stay on 2.8 for CUDA",
}


def advice(name: str) -> str:
    """The replacement of ``name`` (or of the module or class it is in), if one is known."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        found = REPLACEMENTS.get(".".join(parts[:end]))
        if found:
            return found
    return ""


def _spelled(release: tuple[int, int]) -> str:
    return f"torch_xla {release[0]}.{release[1]}"


def _why(lack: Lack, error: str, replacement: bool = True) -> str:
    """``is not in torch_xla 2.9 (removed in 2.5): an ImportError there; use ...``"""
    text = f"is not in {_spelled(lack.release)} ({lack.history}): {error} there"
    found = advice(lack.name) if replacement else ""
    return f"{text}; {found}" if found else text


@register
class ImportGoneModule(PythonRule):
    id = "import-gone-module"
    summary = ("imports of torch_xla modules and names the target release lacks (experimental.pjrt, utils.gcsfs, "
               "amp.GradScaler, ...): removed when nothing uses them once the other rules are done, else reported "
               "with what to use instead")
    nodes = (cst.Import, cst.ImportFrom)
    examples = (
        Example(
            "import os\nfrom torch_xla.experimental import pjrt\nfrom torch_xla.experimental.pjrt import "
            "world_size\n\nprint(os.getpid())\n",
            "import os\n\nprint(os.getpid())\n",
        ),
        Example(
            "import torch_xla.utils.gcsfs as gcs\n\nblob = gcs.read('gs://bucket/x')\n",
            "# TODO(xrt2pjrt): gcs is still used, and torch_xla.utils.gcsfs is not in torch_xla 2.9 (in no "
            "torch_xla 2.x release): an ImportError there; use a GCS client of your own (google-cloud-storage, "
            "gcsfs, fsspec) [import-gone-module]\nimport torch_xla.utils.gcsfs as gcs\n\nblob = gcs.read('gs://bucket/x')\n",
            manual=("a GCS client of your own",),
        ),
        Example(
            "from torch_xla.amp import GradScaler, autocast\n\nscaler = GradScaler()\n",
            "# TODO(xrt2pjrt): GradScaler is still used, and torch_xla.amp.GradScaler is not in torch_xla 2.9 "
            f"(removed in 2.9): an ImportError there; {_NO_SCALER} [import-gone-module]\n"
            "from torch_xla.amp import GradScaler, autocast\n\nscaler = GradScaler()\n",
            manual=("needs no scaler",),
        ),
        Example(  # the shim keeps the XRT-era names (shim-imports points the import at it)
            "from torch_xla.core.xla_model import xrt_world_size\n\nn = xrt_world_size()\n",
            "from torch_xla.core.xla_model import xrt_world_size\n\nn = xrt_world_size()\n",
            options={"target": "shim"},
        ),
        Example(  # torch_xla 2.8 still has it
            "from torch_xla.amp import GradScaler, autocast\n\nscaler = GradScaler()\n",
            "from torch_xla.amp import GradScaler, autocast\n\nscaler = GradScaler()\n",
            options={"target_version": (2, 8)},
        ),
    )

    def leave(self, ctx, original, updated):
        for local, target, alias in imports.import_bindings(updated):
            spelled = imports.dotted(alias.name) if isinstance(updated, cst.Import) else target
            if ctx.options.target == "shim" and shim_defines(spelled):
                continue  # the import is pointed at the shim, which has it
            lack = lacks(spelled, ctx.target_version)
            if lack is not None:
                ctx.drop_import_if_unused(
                    local, f"import of {spelled} removed: {lack.name} {_why(lack, 'an ImportError', False)}, "
                    "and nothing uses it", f"{local} is still used, and {lack.name} {_why(lack, 'an ImportError')}")
        return updated


@register
class NotInTarget(PythonRule):
    id = "api-not-in-target"
    summary = ("any other torch_xla name, keyword or positional argument the target release lacks (xm.CollectiveContext, "
               "torch_xla.amp.GradScaler through a module alias, removed _XLAC bindings): reported with the release "
               "that removed it and its replacement, as the last check of every spot")
    prefixes = ("torch_xla",)
    runs_last = True
    nodes = (cst.Call,)  # getattr(xm, 'name'), which raises as xm.name does
    examples = (
        Example(
            "import torch_xla.amp as xa\n\nscaler = xa.GradScaler()\n",
            "import torch_xla.amp as xa\n\n# TODO(xrt2pjrt): xa.GradScaler (torch_xla.amp.GradScaler) is not in "
            f"torch_xla 2.9 (removed in 2.9): an AttributeError there; {_NO_SCALER} [api-not-in-target]\n"
            "scaler = xa.GradScaler()\n",
            manual=("removed in 2.9",),
        ),
        Example(
            "import torch_xla\n\ntorch_xla._XLAC._xla_set_use_full_mat_mul_precision(use_full_mat_mul_precision=True)\n",
            "import torch_xla\n\n# TODO(xrt2pjrt): torch_xla._XLAC._xla_set_use_full_mat_mul_precision is not in "
            "torch_xla 2.9 (removed in 2.5): an AttributeError there; use "
            "torch_xla.backends.set_mat_mul_precision('highest') (2.8+; 'default' for the old False), or "
            "torch_xla._XLAC._xla_set_mat_mul_precision('highest') on 2.5-2.7 [api-not-in-target]\n"
            "torch_xla._XLAC._xla_set_use_full_mat_mul_precision(use_full_mat_mul_precision=True)\n",
            manual=("removed in 2.5",),
        ),
        Example(
            "import torch_xla.core.xla_model as xm\n\nCONTEXTS = {'all': xm.CollectiveContext}\n",
            "import torch_xla.core.xla_model as xm\n\n# TODO(xrt2pjrt): xm.CollectiveContext "
            "(torch_xla.core.xla_model.CollectiveContext) is not in torch_xla 2.9 (in no torch_xla 2.x release): "
            "an AttributeError there; XRT's collective context is gone: drop it (the collectives no longer take "
            "cctx=) [api-not-in-target]\nCONTEXTS = {'all': xm.CollectiveContext}\n",
            manual=("in no torch_xla 2.x release",),
        ),
        Example(
            "import torch_xla.core.xla_model as xm\n\nxm.mark_step(reset_scope=False)\n",
            "import torch_xla.core.xla_model as xm\n\n# TODO(xrt2pjrt): xm.mark_step "
            "(torch_xla.core.xla_model.mark_step) takes no reset_scope= in torch_xla 2.3 (added in 2.4): a "
            "TypeError there [api-not-in-target]\nxm.mark_step(reset_scope=False)\n",
            manual=("takes no reset_scope=",),
            options={"target_version": (2, 3)},
        ),
        Example(
            "import torch_xla.core.xla_model as xm\n\nxm.mark_step(reset_scope=False)\n",
            "import torch_xla.core.xla_model as xm\n\nxm.mark_step(reset_scope=False)\n",
        ),
        Example(  # by string: getattr raises as the attribute does (hasattr, or a default, does not)
            "import torch_xla.core.xla_model as xm\n\nn = getattr(xm, 'xrt_world_size')()\n"
            "m = getattr(xm, 'xrt_world_size', None)\n",
            "import torch_xla.core.xla_model as xm\n\n# TODO(xrt2pjrt): getattr(xm, 'xrt_world_size') "
            "(torch_xla.core.xla_model.xrt_world_size) is not in torch_xla 2.9 (removed in 2.7): an AttributeError "
            "there [api-not-in-target]\nn = getattr(xm, 'xrt_world_size')()\nm = getattr(xm, 'xrt_world_size', None)\n",
            manual=("removed in 2.7",),
        ),
    )

    def leave(self, ctx, original, updated):
        func, args = updated.func, updated.args
        if not (isinstance(func, cst.Name) and func.value == "getattr" and len(args) == 2 and ctx.resolve(func) is None):
            return updated
        owner, attr = ctx.resolve(args[0].value), literal(args[1].value)
        if owner and isinstance(attr, str) and not args[0].star:
            lack = lacks(f"{owner}.{attr}", ctx.target_version)
            if lack is not None and lack.name == f"{owner}.{attr}":
                ctx.manual(f"{code(updated)} ({lack.name}) {_why(lack, 'an AttributeError')}")
        return updated

    def call(self, ctx, node, name):
        if ctx.reported_here:
            return node
        written = self._written(ctx, node.func, ctx.original.func, name)
        if written is None:
            return node
        lack = lacks(written, ctx.target_version)
        if lack is not None:
            if lack.name == written:
                self._missing(ctx, node.func, lack)
            return node
        positional = [arg for arg in node.args if arg.keyword is None]
        count = None if any(arg.star for arg in positional) else len(positional)
        keywords = [arg.keyword.value for arg in node.args if arg.keyword is not None]
        for lack in keyword_lacks(written, keywords, count, ctx.target_version):
            ctx.manual(self._argument(ctx, node.func, written, lack))
        return node

    def reference(self, ctx, node, name):
        if ctx.reported_here or ctx.is_store():
            return node
        written = self._written(ctx, node, ctx.original, name)
        lack = written and lacks(written, ctx.target_version)
        if lack and lack.name == written:
            self._missing(ctx, node, lack)
        return node

    @staticmethod
    def _written(ctx, new: cst.BaseExpression, old: cst.BaseExpression, name: str) -> str | None:
        """What the spot names once the other rules are done with it (None: not a name of
        torch_xla's: with --target shim, xm and xmp names the shim defines)."""
        written = name if new.deep_equals(old) else ctx.resolve_written(new)
        if written and ctx.options.target == "shim" and shim_defines(written):
            return None
        return written

    @staticmethod
    def _missing(ctx, node: cst.BaseExpression, lack: Lack) -> None:
        imported = ctx.anchor.target if ctx.anchor is not None else None
        if imported and (imported == lack.name or imported.startswith(lack.name + ".")):
            return  # its import fails first: import-gone-module's spot
        ctx.manual(f"{_named(node, lack.name)} {_why(lack, 'an AttributeError')}")

    @staticmethod
    def _argument(ctx, func: cst.BaseExpression, dotted: str, lack: Lack) -> str:
        spot = _named(func, dotted)
        if lack.name.endswith("=)"):
            keyword = lack.name[len(dotted) + 1:-1]
            return f"{spot} takes no {keyword} in {_spelled(lack.release)} ({lack.history}): a TypeError there" + (
                f"; {advice(lack.name)}" if advice(lack.name) else "")
        if "(argument " not in lack.name:  # name(param): a parameter it needs, not passed
            param = lack.name[len(dotted) + 1:-1]
            return (f"{spot} needs {param} in {_spelled(lack.release)}, which this call does not pass: a TypeError "
                    "there" + (f"; {advice(lack.name)}" if advice(lack.name) else ""))
        limit = entry(dotted, lack.release).positional_limit()
        return (f"{spot} takes at most {limit} positional argument{'s' * (limit != 1)} in "
                f"{_spelled(lack.release)}: a TypeError there")


def _named(node: cst.BaseExpression, dotted: str) -> str:
    """The spot as the file spells it, and what it resolves to when that differs."""
    spelled = code(node)
    return spelled if spelled == dotted else f"{spelled} ({dotted})"
