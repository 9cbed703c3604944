"""Things only a person can decide: reported (with a TODO comment), never guessed."""

from __future__ import annotations

import ast
import dataclasses
import functools
import re

import libcst as cst

from xrt2pjrt.registry import RULES, Example, register
from xrt2pjrt.python.rule import PythonRule, argument, code, literal
from xrt2pjrt.python import spawn_site
from xrt2pjrt.python.imports import dotted, import_bindings
from xrt2pjrt.rules.pjrt_module import PJRT, PJRT_RENAMES

XM = "torch_xla.core.xla_model"


def _imported_modules(node: cst.Import | cst.ImportFrom) -> list[str]:
    if isinstance(node, cst.Import):
        return [dotted(alias.name) for alias in node.names]
    if node.relative or node.module is None:
        return []
    module = dotted(node.module)
    if isinstance(node.names, cst.ImportStar):
        return [module]
    return [module] + [f"{module}.{alias.name.value}" for alias in node.names]


class _ImportedModuleRule(PythonRule):
    """Reports imports of the modules ``matches`` accepts, and calls into them."""

    nodes = (cst.Import, cst.ImportFrom)

    def matches(self, module: str) -> bool:
        raise NotImplementedError

    def message(self, module: str) -> str:
        raise NotImplementedError

    def leave(self, ctx, original, updated):
        hits = [module for module in _imported_modules(original) if self.matches(module)]
        if hits:
            ctx.manual(self.message(hits[0]))
        return updated

    def call(self, ctx, node, name):
        ctx.manual(self.message(name))
        return node


@register
class XlaDist(_ImportedModuleRule):
    id = "manual-xla-dist"
    summary = "torch_xla.distributed.xla_dist used from Python (removed in 2.1): report"
    prefixes = ("torch_xla.distributed.xla_dist.",)
    examples = (
        Example(  # started from Python: the module is gone, the command fails
            "import subprocess\nimport torch_xla\n\n"
            "subprocess.run(['python3', '-m', 'torch_xla.distributed.xla_dist', '--tpu=p', '--', 'python3', 't.py'])\n",
            "import subprocess\nimport torch_xla\n\n# TODO(xrt2pjrt): this command starts xla_dist, which is gone "
            "from torch_xla 2.1: launch with `gcloud compute tpus tpu-vm ssh NAME --worker=all --command=...` (or "
            "`xrt2pjrt launch`) [manual-xla-dist]\n"
            "subprocess.run(['python3', '-m', 'torch_xla.distributed.xla_dist', '--tpu=p', '--', 'python3', 't.py'])\n",
            manual=("this command starts xla_dist",),
        ),
        Example(
            "from torch_xla.distributed import xla_dist\n\nxla_dist.resolve_and_execute(args)\n",
            "# TODO(xrt2pjrt): xla_dist is gone from torch_xla 2.1: launch with `gcloud compute tpus tpu-vm ssh "
            "NAME --worker=all --command=...` (or `xrt2pjrt launch`) [manual-xla-dist]\n"
            "from torch_xla.distributed import xla_dist\n\n"
            "# TODO(xrt2pjrt): xla_dist is gone from torch_xla 2.1: launch with `gcloud compute tpus tpu-vm ssh "
            "NAME --worker=all --command=...` (or `xrt2pjrt launch`) [manual-xla-dist]\n"
            "xla_dist.resolve_and_execute(args)\n",
            manual=("xla_dist is gone",),
        ),
    )

    nodes = (cst.Import, cst.ImportFrom, cst.SimpleString)

    def matches(self, module):
        return module == "torch_xla.distributed.xla_dist" or module.startswith("torch_xla.distributed.xla_dist.")

    def message(self, module):
        return f"xla_dist is gone from torch_xla 2.1: {_LAUNCH_PODS}"

    def leave(self, ctx, original, updated):
        if not isinstance(original, cst.SimpleString):
            return super().leave(ctx, original, updated)
        # a command that runs it: subprocess.run(['python', '-m', 'torch_xla.distributed.xla_dist', ...]),
        # os.system('python -m torch_xla.distributed.xla_dist ...')
        text = original.evaluated_value
        if isinstance(ctx.parent(1), cst.Expr):
            return updated  # a docstring, or a string standing alone: no command
        if isinstance(text, str) and _XLA_DIST_COMMAND.search(text):
            ctx.manual(f"this command starts xla_dist, which is gone from torch_xla 2.1: {_LAUNCH_PODS}")
        return updated


_LAUNCH_PODS = "launch with `gcloud compute tpus tpu-vm ssh NAME --worker=all --command=...` (or `xrt2pjrt launch`)"
_XLA_DIST_COMMAND = re.compile(r"(?<![\w.])torch_xla\.distributed\.xla_dist\b")


_DATA_PARALLEL = "torch_xla.distributed.data_parallel"


@register
class PreOneZero(_ImportedModuleRule):
    id = "manual-pre-1.0"
    summary = ("torch_xla_py.* (before 1.0), and torch_xla.distributed.data_parallel (threads driving several "
               "devices from one process, the XRT-era way): report; an import of data_parallel that nothing reads "
               "is reported as one to delete")
    examples = (
        Example(
            "import torch_xla_py.xla_model as xm\n",
            "# TODO(xrt2pjrt): torch_xla_py.xla_model is a pre-1.0 module: port this file by hand "
            "(torch_xla.core.xla_model, torch_xla.runtime) [manual-pre-1.0]\nimport torch_xla_py.xla_model as xm\n",
            manual=("pre-1.0",),
        ),
        Example(
            "import torch_xla.distributed.data_parallel as dp\n\nmodel = dp.DataParallel(net, device_ids=devices)\n",
            "# TODO(xrt2pjrt): torch_xla.distributed.data_parallel drives several devices from one process with "
            "threads, the XRT-era way; torch_xla 2.x runs one process per device: port this to xmp.spawn by hand "
            "[manual-pre-1.0]\nimport torch_xla.distributed.data_parallel as dp\n\n"
            "model = dp.DataParallel(net, device_ids=devices)\n",
            manual=("data_parallel",),
        ),
        Example(  # tmabraham/fastai_tpu: a leftover import in a file that already calls xmp.spawn
            "import torch_xla.distributed.data_parallel as dp\nimport torch_xla.distributed.xla_multiprocessing as xmp"
            "\n\nxmp.spawn(train_loop)\n",
            "# TODO(xrt2pjrt): torch_xla.distributed.data_parallel is imported but never used here: delete the "
            "import (torch_xla 2.x still has it: nothing to port) [manual-pre-1.0]\n"
            "import torch_xla.distributed.data_parallel as dp\nimport torch_xla.distributed.xla_multiprocessing as xmp"
            "\n\nxmp.spawn(train_loop)\n",
            manual=("imported but never used here",),
        ),
    )

    def matches(self, module):
        return module == "torch_xla_py" or module.startswith("torch_xla_py.") or module == _DATA_PARALLEL

    def leave(self, ctx, original, updated):
        if _DATA_PARALLEL in _imported_modules(original) and not _reads_data_parallel(ctx.tree, original):
            # every 2.x release has the module (tests/test_target_api.py holds the tables to that)
            ctx.manual(f"{_DATA_PARALLEL} is imported but never used here: delete the import (torch_xla 2.x "
                       "still has it: nothing to port)")
            return updated
        return super().leave(ctx, original, updated)

    def message(self, module):
        if "data_parallel" in module:
            return (f"{module} drives several devices from one process with threads, the XRT-era way; torch_xla 2.x "
                    "runs one process per device: port this to xmp.spawn by hand")
        return f"{module} is a pre-1.0 module: port this file by hand (torch_xla.core.xla_model, torch_xla.runtime)"


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
    for read in ast.walk(tree):
        if isinstance(read, ast.Name) and isinstance(read.ctx, ast.Load) and read.id in wanted:
            return True
        if isinstance(read, ast.Attribute) and read.attr == "data_parallel" and ast.unparse(read) in wanted:
            return True
    return False


@register
class ImportModule(PythonRule):
    id = "manual-import-module"
    summary = "import_module('torch_xla...') / __import__: a module reached by string is not rewritten; report"
    names = frozenset({"importlib.import_module"})
    nodes = (cst.Call,)
    examples = (
        Example(
            "import importlib\n\nxm = importlib.import_module('torch_xla.core.xla_model')\n",
            "import importlib\n\n# TODO(xrt2pjrt): torch_xla.core.xla_model is imported by string: the codemod "
            "cannot follow it; migrate its uses by hand [manual-import-module]\n"
            "xm = importlib.import_module('torch_xla.core.xla_model')\n",
            manual=("imported by string",),
        ),
    )

    def call(self, ctx, node, name):
        if node.args:
            module = literal(node.args[0].value)
            if isinstance(module, str) and module.split(".")[0] in ("torch_xla", "torch_xla_py"):
                ctx.manual(f"{module} is imported by string: the codemod cannot follow it; migrate its uses by hand")
        return node

    def leave(self, ctx, original, updated):
        # ``__import__`` is a builtin: it resolves to nothing unless rebound.
        if isinstance(updated.func, cst.Name) and updated.func.value == "__import__" and ctx.resolve(updated.func) is None:
            return self.call(ctx, updated, "__import__")
        return updated


@register
class RendezvousSubset(PythonRule):
    id = "manual-rendezvous-subset"
    summary = "xm.rendezvous(tag, payload, replicas=[subset]): PJRT requires every replica; report"
    targets = ("native",)  # the shim's rendezvous takes subsets
    names = frozenset({f"{XM}.rendezvous"})
    examples = (
        Example(
            "import torch_xla.core.xla_model as xm\n\nxm.rendezvous('sync', b'', replicas=[0, 1])\n",
            "import torch_xla.core.xla_model as xm\n\n# TODO(xrt2pjrt): xm.rendezvous with replicas=[0, 1]: under PJRT "
            "every replica must join (a subset raises ValueError); use all replicas or a host-side barrier "
            "[manual-rendezvous-subset]\nxm.rendezvous('sync', b'', replicas=[0, 1])\n",
            manual=("every replica must join",),
        ),
        Example(
            "import torch_xla.core.xla_model as xm\n\nxm.rendezvous('init')\n",
            "import torch_xla.core.xla_model as xm\n\nxm.rendezvous('init')\n",
        ),
    )

    def call(self, ctx, node, name):
        hit = argument(node, "replicas", 2)
        if hit is not None and literal(hit[1].value) not in ([], None):
            ctx.manual(f"xm.rendezvous with replicas={code(hit[1].value)}: under PJRT every replica must join "
                       "(a subset raises ValueError); use all replicas or a host-side barrier")
        return node


_BARRIERS = frozenset({f"{XM}.rendezvous", f"{XM}.xla_rendezvous", "torch.distributed.barrier"})
_NO_BARRIER = "xm.save no longer waits for every replica (2.1)"


@register
class SaveBarrier(PythonRule):
    id = "manual-save-barrier"
    summary = ("xm.save(): no longer ends with a rendezvous (2.1); report where code may rely on it (not where a "
               "rendezvous follows), and where xm.save is passed as a function (save_function=xm.save)")
    targets = ("native",)  # the shim's save keeps the barrier
    names = frozenset({f"{XM}.save"})
    examples = (
        Example(
            "import torch_xla.core.xla_model as xm\n\nxm.save(model.state_dict(), path)\n",
            f"import torch_xla.core.xla_model as xm\n\n# TODO(xrt2pjrt): {_NO_BARRIER}: if others read the file "
            "next, add xm.rendezvous('saved') after it [manual-save-barrier]\nxm.save(model.state_dict(), path)\n",
            manual=("rendezvous",),
        ),
        Example(
            "import torch_xla.core.xla_model as xm\n\nxm.save(model.state_dict(), path)\nxm.rendezvous('saved')\n",
            "import torch_xla.core.xla_model as xm\n\nxm.save(model.state_dict(), path)\nxm.rendezvous('saved')\n",
        ),
        Example(  # transformers' Trainer: save_pretrained(..., save_function=xm.save)
            "import torch_xla.core.xla_model as xm\n\nmodel.save_pretrained(out, save_function=xm.save)\n",
            f"import torch_xla.core.xla_model as xm\n\n# TODO(xrt2pjrt): xm.save is passed here as a function: "
            f"{_NO_BARRIER}; if others read what it saves next, add xm.rendezvous('saved') after this "
            "[manual-save-barrier]\nmodel.save_pretrained(out, save_function=xm.save)\n",
            manual=("passed here as a function",),
        ),
    )

    def call(self, ctx, node, name):
        if not _barrier_follows(ctx):
            ctx.manual(f"{_NO_BARRIER}: if others read the file next, add xm.rendezvous('saved') after it")
        return node

    def reference(self, ctx, node, name):
        if not ctx.is_store() and not _barrier_follows(ctx):
            ctx.manual(f"xm.save is passed here as a function: {_NO_BARRIER}; if others read what it saves next, "
                       "add xm.rendezvous('saved') after this")
        return node


def _barrier_follows(ctx) -> bool:
    """Whether the statement after the one being visited, in its block, is a rendezvous
    or a barrier: the replicas wait there anyway."""
    level = 1
    while not isinstance(ctx.parent(level), (cst.SimpleStatementLine, type(None))):
        level += 1
    statement, block = ctx.parent(level), ctx.parent(level + 1)
    body = list(getattr(block, "body", ()))
    if statement is None or statement not in body or body.index(statement) + 1 == len(body):
        return False
    after = body[body.index(statement) + 1]
    first = after.body[0] if isinstance(after, cst.SimpleStatementLine) else None
    return (isinstance(first, cst.Expr) and isinstance(first.value, cst.Call)
            and ctx.resolve(first.value.func) in _BARRIERS)


_WEIGHTS_ONLY = ("torch_xla 2.x's mesh_reduce reads the gathered values back with torch.load, which from torch 2.6 "
                 "loads tensors and plain Python values only (weights_only=True): a numpy value (np.mean(...), "
                 "sklearn's metrics) or an object of a class of yours raises UnpicklingError, at the first reduce, "
                 "after the training before it. Hand it a tensor or a Python number (float(x)), or use the shim's "
                 "mesh_reduce, which loads any value as XRT's did")
# Methods whose result is a tensor or a plain Python value whatever tensor they are called on
# (numpy's arrays have none of them but item and tolist, which give Python values there too).
_PLAIN_RESULTS = frozenset({"item", "tolist", "detach", "cpu", "clone", "to"})


@register
class MeshReduceObjects(PythonRule):
    id = "manual-mesh-reduce-objects"
    summary = ("xm.mesh_reduce(tag, data, fn) with data not surely a tensor or a plain Python value: from torch 2.6 "
               "(torch_xla 2.6+) it loads the gathered values with weights_only=True, and numpy values or objects "
               "raise UnpicklingError; report")
    targets = ("native",)  # the shim's mesh_reduce loads any value
    names = frozenset({f"{XM}.mesh_reduce"})
    examples = (
        Example(  # a Kaggle-style metric: sklearn gives a numpy.float64
            "import torch_xla.core.xla_model as xm\n\n"
            "acc = xm.mesh_reduce('acc', metrics.accuracy_score(y, p), np.mean)\n",
            f"import torch_xla.core.xla_model as xm\n\n# TODO(xrt2pjrt): {_WEIGHTS_ONLY} [manual-mesh-reduce-objects]\n"
            "acc = xm.mesh_reduce('acc', metrics.accuracy_score(y, p), np.mean)\n",
            manual=("UnpicklingError",),
        ),
        Example(
            "import torch_xla.core.xla_model as xm\n\nloss = xm.mesh_reduce('loss', loss.item(), sum)\n",
            "import torch_xla.core.xla_model as xm\n\nloss = xm.mesh_reduce('loss', loss.item(), sum)\n",
        ),
        Example(
            "import torch_xla.core.xla_model as xm\n\nacc = xm.mesh_reduce('acc', np.mean(a), np.mean)\n",
            "import torch_xla.core.xla_model as xm\n\nacc = xm.mesh_reduce('acc', np.mean(a), np.mean)\n",
            options={"target_version": (2, 5)},  # torch 2.5 loads anything by default
        ),
    )

    def call(self, ctx, node, name):
        hit = argument(node, "data", 1)
        if ctx.target_version >= (2, 6) and hit is not None and ctx.tree is not None:
            # in parentheses, as in the call: a line break or a walrus is valid there
            data = ast.parse(f"({code(hit[1].value)})", mode="eval").body
            if not _plain(data, _Names(ctx.tree, ctx.line)):
                ctx.manual(_WEIGHTS_ONLY)
        return node


@dataclasses.dataclass(frozen=True)
class _Names:
    """Where the names of an expression at ``line`` are bound, as far as the file tells."""

    tree: ast.Module
    line: int

    def values(self, name: str) -> list[ast.AST | None]:
        """What binds ``name`` before ``line`` (``acc = xm.mesh_reduce('acc', acc, ...)`` is after),
        or after it in a loop around it (the next round's value)."""
        bound = spawn_site.bindings_seen_at(self.tree, self.line, name)
        return [value for value in bound if value is None or value.lineno < self.line
                or any(loop.lineno <= value.lineno <= loop.end_lineno for loop in self._loops)]

    @functools.cached_property
    def _loops(self) -> list[ast.stmt]:
        """The loops around ``line`` (walked once, whatever the names the expression holds)."""
        return [node for node in ast.walk(self.tree) if isinstance(node, (ast.For, ast.AsyncFor, ast.While))
                and node.lineno <= self.line <= node.end_lineno]

    def called(self, call: ast.Call) -> str | None:
        """The dotted name ``call`` calls, through the file's imports (``np.mean`` -> ``numpy.mean``)."""
        return spawn_site.resolved(call.func, spawn_site.imported(self.tree))


def _plain(value: ast.expr, names: _Names, seen: frozenset[str] = frozenset()) -> bool:
    """Surely a tensor or a plain Python value, as far as the file tells: a literal, a number
    made of them (``100.0 * correct.item() / total``), ``float(x)``, ``x.item()``, a torch call,
    or a name bound to one of those before the call."""
    if isinstance(value, (ast.Constant, ast.JoinedStr)):
        return True
    if isinstance(value, (ast.UnaryOp, ast.NamedExpr)):
        return _plain(value.operand if isinstance(value, ast.UnaryOp) else value.value, names, seen)
    if isinstance(value, ast.BinOp):  # total.item() / flags.batches: a count, as code reads
        sides = (value.left, value.right)
        plain = [_plain(side, names, seen) for side in sides]
        return any(plain) and all(p or isinstance(side, (ast.Name, ast.Attribute)) for p, side in zip(plain, sides))
    if isinstance(value, ast.Name):
        bound = names.values(value.id) if value.id not in seen else []
        return bool(bound) and all(v is not None and _plain(v, names, seen | {value.id}) for v in bound)
    if not isinstance(value, ast.Call):
        return False
    if isinstance(value.func, ast.Attribute) and value.func.attr in _PLAIN_RESULTS:
        return True
    called = names.called(value)
    if called is None:
        return isinstance(value.func, ast.Name) and value.func.id in ("float", "int", "str", "bool", "len")
    return called.startswith("torch.")


_ONE_TENSOR_LIST = ("torch_xla 2.x's send_cpu_data_to_device wraps a bare tensor in a list and returns the list (2.1+), "
                    "where XRT's returned the tensor: if this is one tensor, take [0] of the result, or use "
                    ".to(device); a list, tuple or dict of tensors comes back as before")
_CONTAINER_DISPLAYS = (cst.List, cst.Tuple, cst.Dict, cst.ListComp, cst.DictComp)


@register
class SendCpuDataTensor(PythonRule):
    id = "manual-send-cpu-data-tensor"
    summary = ("xm.send_cpu_data_to_device(data, device) with data not surely a container: 2.1+ returns a one-element "
               "list for a bare tensor (XRT: the tensor); report")
    targets = ("native",)  # the shim's returns a tensor for a tensor
    names = frozenset({f"{XM}.send_cpu_data_to_device"})
    examples = (
        Example(  # an Ising-model sampler's couplings; then couplings.shape[0]: AttributeError on a list
            "import torch_xla.core.xla_model as xm\n\ncouplings = xm.send_cpu_data_to_device(couplings, device)\n",
            f"import torch_xla.core.xla_model as xm\n\n# TODO(xrt2pjrt): {_ONE_TENSOR_LIST} "
            "[manual-send-cpu-data-tensor]\ncouplings = xm.send_cpu_data_to_device(couplings, device)\n",
            manual=("wraps a bare tensor in a list",),
        ),
        Example(
            "import torch_xla.core.xla_model as xm\n\nx, y = xm.send_cpu_data_to_device((x, y), device)\n",
            "import torch_xla.core.xla_model as xm\n\nx, y = xm.send_cpu_data_to_device((x, y), device)\n",
        ),
    )

    def call(self, ctx, node, name):
        hit = argument(node, "datas", 0) or argument(node, "data", 0)
        if hit is not None and not isinstance(hit[1].value, _CONTAINER_DISPLAYS) and not hit[1].star:
            ctx.manual(_ONE_TENSOR_LIST)
        return node


_MEMORY_INFO = ("xm.get_memory_info returns bytes_used, bytes_limit and peak_bytes_used (bytes) under PJRT; kb_free "
                "and kb_total are gone (KeyError): kb_free is (bytes_limit - bytes_used) // 1024")


@register
class MemoryInfo(PythonRule):
    id = "manual-memory-info"
    summary = ("xm.get_memory_info: kb_free/kb_total (KB) became bytes_used/bytes_limit (bytes) under PJRT; report "
               "the call, and each read of those keys in the file")
    names = frozenset({f"{XM}.get_memory_info"})
    nodes = (cst.Subscript,)
    examples = (
        Example(
            "import torch_xla.core.xla_model as xm\n\nfree = xm.get_memory_info(device)['kb_free']\n",
            f"import torch_xla.core.xla_model as xm\n\n# TODO(xrt2pjrt): {_MEMORY_INFO} [manual-memory-info]\n"
            "free = xm.get_memory_info(device)['kb_free']\n",
            manual=("bytes_limit",),
        ),
        Example(  # fairseq's logging: the KeyError is on the line that reads the key
            "import torch_xla.core.xla_model as xm\n\ninfo = xm.get_memory_info(device)\n"
            "used = info['kb_total'] - info['kb_free']\n",
            f"import torch_xla.core.xla_model as xm\n\n# TODO(xrt2pjrt): {_MEMORY_INFO} [manual-memory-info]\n"
            f"info = xm.get_memory_info(device)\n# TODO(xrt2pjrt): {_MEMORY_INFO} [manual-memory-info]\n"
            "used = info['kb_total'] - info['kb_free']\n",
            manual=("bytes_limit", "bytes_limit"),
        ),
    )

    def call(self, ctx, node, name):
        # Found in fairseq (0.10 and today's): a KeyError on every logging step.
        ctx.manual(_MEMORY_INFO)
        return node

    def leave(self, ctx, original, updated):
        key = updated.slice[0].slice if len(updated.slice) == 1 else None
        if (isinstance(key, cst.Index) and literal(key.value) in ("kb_free", "kb_total")
                and "get_memory_info" in ctx.source):
            ctx.manual(_MEMORY_INFO)
        return updated


# The names XRT-era code called torch_xla's modules by, when it borrowed them from a module
# of its own (``from tpu_utils import xm``).
CONVENTIONAL = {"xm": XM, "xmp": "torch_xla.distributed.xla_multiprocessing"}
_LOOK_ALIKES = ("xmanager",)  # libraries with an xm of their own (Google's XManager)
_RELATIVE_IMPORT = r"^[ \t]*from[ \t]+\.[\w.]*[ \t]+import[^\n]*\b{}\b"


@register
class BorrowedAlias(PythonRule):
    id = "manual-borrowed-alias"
    summary = ("xm / xmp imported from a module of the project (from tpu_utils import xm), or handed in (a parameter, "
               "self.xm), then called as torch_xla's (xm.xrt_world_size()): not followed; report once per name")
    nodes = (cst.Call,)
    examples = (
        Example(
            "from tpu_utils import xm\n\nn = xm.xrt_world_size()\n",
            "from tpu_utils import xm\n\n# TODO(xrt2pjrt): xm comes from tpu_utils, not from torch_xla: the codemod "
            "follows torch_xla's own imports only; import torch_xla.core.xla_model as xm here, then run xrt2pjrt "
            "again [manual-borrowed-alias]\nn = xm.xrt_world_size()\n",
            manual=("comes from tpu_utils",),
        ),
        Example(  # tpu_star 0.0.1: the caller hands its xm in
            "def get_sampler(dataset, xm):\n    return DistributedSampler(dataset, num_replicas=xm.xrt_world_size())\n",
            "def get_sampler(dataset, xm):\n    # TODO(xrt2pjrt): xm is no import of this file (a parameter, an "
            "attribute): the codemod follows torch_xla's own imports only, so if it holds torch_xla.core.xla_model, "
            "its XRT-era calls (xm.xrt_world_size() here) are left as they are, and those torch_xla 2.x removed fail "
            "there: migrate them by hand, or call the module by an import of this file [manual-borrowed-alias]\n"
            "    return DistributedSampler(dataset, num_replicas=xm.xrt_world_size())\n",
            manual=("is no import of this file",),
        ),
        Example(  # Google's XManager has an xm of its own
            "from xmanager import xm\n\nwith xm.create_experiment('x') as experiment:\n    pass\n",
            "from xmanager import xm\n\nwith xm.create_experiment('x') as experiment:\n    pass\n",
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
            where = relative and relative.group(0).split()[1]
        else:
            where = origin and (None if origin.startswith(("torch_xla", "xrt2pjrt", *_LOOK_ALIKES))
                                else origin.rpartition(".")[0])
        if where:
            self.reported.add(code(holder))
            ctx.manual(f"{local} comes from {where}, not from torch_xla: the codemod follows torch_xla's own imports "
                       f"only; import {module} as {local} here, then run xrt2pjrt again")
        elif origin is None and ctx.options.target == "native" and (
                isinstance(holder, cst.Attribute) or _a_parameter(ctx.tree, local, ctx.line)):
            # a parameter, an attribute (self.xm): handed the module by other code (a name the
            # file assigns holds what the file says, xm = Fake(); one it never binds may be
            # another notebook cell's import, when the cells are read one by one)
            self.reported.add(code(holder))
            ctx.manual(f"{code(holder)} is no import of this file (a parameter, an attribute): the codemod "
                       f"follows torch_xla's own imports only, so if it holds {module}, its XRT-era calls "
                       f"({code(func)}() here) are left as they are, and those torch_xla 2.x removed fail there: "
                       "migrate them by hand, or call the module by an import of this file")
        return updated


def _a_parameter(tree: ast.Module | None, name: str, line: int) -> bool:
    """Whether ``name``, read on ``line``, is a parameter (or bound otherwise than by a plain
    assignment) in the innermost scope around it that binds it at all."""
    bound = spawn_site.bindings_seen_at(tree, line, name)
    return bool(bound) and all(value is None for value in bound)


def _rule_names():
    """Every name a Python rule rewrites or reports (but the module names of
    manual-module-as-value, which come from these)."""
    return (name for cls in RULES.values() if cls.kind == "python" and cls is not ModuleAsValue
            for name in getattr(cls, "names", ()))


@functools.cache
def _xrt_era_names() -> frozenset[str]:
    """What the Python rules rewrite or report in the modules XRT-era code borrowed."""
    return frozenset(name for name in _rule_names() if name.startswith(tuple(CONVENTIONAL.values())))


@register
class PjrtPrivate(PythonRule):
    id = "manual-pjrt-other"
    summary = "other torch_xla.experimental.pjrt names (spawn_threads, requires_pjrt, ...): report"
    prefixes = (f"{PJRT}.",)
    examples = (
        Example(
            "from torch_xla.experimental import pjrt\n\nSPAWNERS = [xmp.spawn, pjrt.spawn]\n",
            "from torch_xla.experimental import pjrt\n\n# TODO(xrt2pjrt): pjrt.spawn is used here without being called, "
            "and only its calls are rewritten: replace it by hand (torch_xla.experimental.pjrt is gone from 2.5) "
            "[manual-pjrt-other]\nSPAWNERS = [xmp.spawn, pjrt.spawn]\n",
            manual=("without being called",),
        ),
        Example(
            "from torch_xla.experimental import pjrt\n\npjrt.spawn_threads(fn)\n",
            "from torch_xla.experimental import pjrt\n\n# TODO(xrt2pjrt): pjrt.spawn_threads has no public "
            "replacement in torch_xla 2.x (torch_xla.experimental.pjrt is gone from 2.5) [manual-pjrt-other]\n"
            "pjrt.spawn_threads(fn)\n",
            manual=("no public replacement",),
        ),
    )
    # Names other rules rewrite: the renamed ones wherever they appear, these only where called.
    renamed = frozenset(r.old for r in PJRT_RENAMES)
    called = frozenset(f"{PJRT}.{n}" for n in ("rendezvous", "spawn", "run_multiprocess", "_run_multiprocess",
                                               "using_pjrt"))

    def call(self, ctx, node, name):
        if name not in self.renamed | self.called:
            self._no_replacement(ctx, name)
        return node

    def reference(self, ctx, node, name):
        if name in self.called:
            ctx.manual(f"pjrt.{name.rsplit('.', 1)[-1]} is used here without being called, and only its calls are "
                       "rewritten: replace it by hand (torch_xla.experimental.pjrt is gone from 2.5)")
        elif name not in self.renamed:
            self._no_replacement(ctx, name)
        return node

    @staticmethod
    def _no_replacement(ctx, name):
        ctx.manual(f"pjrt.{name.rsplit('.', 1)[-1]} has no public replacement in torch_xla 2.x "
                   "(torch_xla.experimental.pjrt is gone from 2.5)")


@register
class StarImport(PythonRule):
    id = "manual-star-import"
    summary = "from torch_xla... import *: the names it brings cannot be followed; report"
    nodes = (cst.ImportFrom,)
    examples = (
        Example(
            "from torch_xla.core.xla_model import *\n\nn = xrt_world_size()\n",
            "# TODO(xrt2pjrt): names from `from torch_xla.core.xla_model import *` cannot be followed: import "
            "the module by name (import torch_xla.core.xla_model as xm), then run xrt2pjrt again "
            "[manual-star-import]\nfrom torch_xla.core.xla_model import *\n\nn = xrt_world_size()\n",
            manual=("cannot be followed",),
        ),
    )

    def leave(self, ctx, original, updated):
        if isinstance(updated.names, cst.ImportStar) and not updated.relative and updated.module is not None:
            module = dotted(updated.module)
            if module.split(".")[0] in ("torch_xla", "torch_xla_py"):
                alias = {"torch_xla.core.xla_model": " as xm",
                         "torch_xla.distributed.xla_multiprocessing": " as xmp"}.get(module, "")
                ctx.manual(f"names from `from {module} import *` cannot be followed: import the module by name "
                           f"(import {module}{alias}), then run xrt2pjrt again")
        return updated


@functools.cache
def _migrated_modules() -> frozenset[str]:
    """The torch_xla modules whose names the Python rules rewrite or report."""
    return frozenset(name.rpartition(".")[0] for name in _rule_names() if name.startswith("torch_xla."))


class _ModuleNames:
    """``names`` read when the rules are registered, after every module of rules loaded."""

    def __get__(self, instance, owner) -> frozenset[str]:
        return _migrated_modules()


@register
class ModuleAsValue(PythonRule):
    id = "manual-module-as-value"
    summary = ("a torch_xla module handed on as a value (self.xm = xm, f(xm), getattr(xm, ...)): calls made "
               "through the other name are not followed; report")
    targets = ("native",)  # under the shim, the module handed on is the shim's, with the XRT-era API
    names = _ModuleNames()
    examples = (
        Example(  # a trainer keeps the module on self, then self.xm.xrt_world_size() is an AttributeError on 2.9
            "import torch_xla.core.xla_model as xm\n\nclass Trainer:\n    def __init__(self):\n        self.xm = xm\n",
            "import torch_xla.core.xla_model as xm\n\nclass Trainer:\n    def __init__(self):\n"
            "        # TODO(xrt2pjrt): xm (torch_xla.core.xla_model) is stored as self.xm: the codemod follows calls "
            "made by its import name only, so the XRT-era calls made through self.xm are left as they are, and "
            "those torch_xla 2.x removed fail there: call them as xm.…, or migrate them by hand "
            "[manual-module-as-value]\n        self.xm = xm\n",
            manual=("stored as self.xm",),
        ),
        Example(  # its own names, and a test of the import fallback, are no hand-over
            "try:\n    import torch_xla.core.xla_model as xm\nexcept ImportError:\n    xm = None\n\n"
            "if xm is not None:\n    device = xm.xla_device()\n",
            "try:\n    import torch_xla.core.xla_model as xm\nexcept ImportError:\n    xm = None\n\n"
            "if xm is not None:\n    device = xm.xla_device()\n",
        ),
    )

    def reference(self, ctx, node, name):
        parent = ctx.parent(1)
        if (isinstance(parent, cst.Attribute) and parent.value is ctx.original) or isinstance(
                parent, (cst.Comparison, cst.ComparisonTarget)) or ctx.is_store() or _named_attribute(ctx):
            return node
        local = code(ctx.original)
        if isinstance(parent, cst.Assign) and parent.value is ctx.original:
            how = "is stored as " + ", ".join(code(target.target) for target in parent.targets)
            through = code(parent.targets[0].target)
        else:
            how, through = "is handed on here as a value", "another name"
        ctx.manual(f"{local} ({name}) {how}: the codemod follows calls made by its import name only, so the XRT-era "
                   f"calls made through {through} are left as they are, and those torch_xla 2.x removed fail there: "
                   f"call them as {local}.…, or migrate them by hand")
        return node


def _named_attribute(ctx) -> bool:
    """``getattr(xm, 'get_ordinal')``, ``hasattr(xm, ...)`` with the name spelled out: the
    attribute is named at this spot, as in ``xm.get_ordinal`` (and api-not-in-target reads the
    two-argument getattr, the one that raises), so no other name hides it."""
    call = ctx.parent(2)
    return (isinstance(ctx.parent(1), cst.Arg) and isinstance(call, cst.Call) and isinstance(call.func, cst.Name)
            and call.func.value in ("getattr", "hasattr") and len(call.args) >= 2
            and call.args[0] is ctx.parent(1) and isinstance(literal(call.args[1].value), str))
