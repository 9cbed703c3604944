"""TPU_NAME / TPU_IP_ADDRESS used in Python, and profiler traces of a TPU node's port 8466:
reported.

On a TPU node, users exported TPU_NAME and TPU_IP_ADDRESS for the XRT client to find the
node (``XRT_TPU_CONFIG="tpu_worker;0;$TPU_IP_ADDRESS:8470"``), and code took them as a TPU
test (``num_cores = 8 if os.environ.get('TPU_NAME') else 1``), parsed ``grpc://`` addresses
out of them, or traced the node's profiler (``xp.trace(f'{tpu_ip}:8466')``). A TPU VM sets
neither: torch_xla 2.x reads its TPU from the VM's metadata server (or, with
TPU_SKIP_MDS_QUERY, from TPU_ACCELERATOR_TYPE, TPU_PROCESS_BOUNDS, TPU_WORKER_ID and
TPU_WORKER_HOSTNAMES), so such a test is False on every TPU VM and the program takes its
non-TPU path. The program runs on the VM itself: test ``xr.device_type() == 'TPU'``, count
with ``xr.world_size()``, and profile a server the program starts
(``xp.start_server(9012)``, then trace ``localhost:9012``). Only files that use PyTorch are
reported, those that import it: TensorFlow's TPUClusterResolver reads TPU_NAME too, and a copy of
pytorch-xla-env-setup.py tests it before any torch is installed. Nor is a name that only builds
XRT_TPU_CONFIG (``'tpu_worker;0;' + os.environ['TPU_IP_ADDRESS'] + ':8470'``, whose own item,
env-xrt-tpu-config, says to run on a TPU VM), or a setting the file never reads.
"""

from __future__ import annotations

import ast

import libcst as cst

from xrt2pjrt.meanings.settings import ADVICE, SHORT
from xrt2pjrt.python import imports, spawn_site
from xrt2pjrt.python.environment import is_environ
from xrt2pjrt.python.rule import PythonRule, argument, code
from xrt2pjrt.registry import Example, dedent

NAMES = ("TPU_NAME", "TPU_IP_ADDRESS")
TRACE = "torch_xla.debug.profiler.trace"
# XRT's TPU node served its profiler on port 8466 of the node's address.
_NODE_PROFILER = ":8466"


class TpuNodeAddress(PythonRule):
    id = "env-tpu-node-address"
    summary = "TPU_NAME / TPU_IP_ADDRESS and a TPU node's profiler port 8466 in Python: reported"
    fix = "none"
    words = (*NAMES, "8466")
    names = frozenset({TRACE})
    nodes = (cst.SimpleString,)
    examples = (
        Example(
            dedent("""
                import os
                import torch_xla.core.xla_model as xm

                num_cores = 8 if os.environ.get('TPU_NAME') else 1
            """),
            dedent("""
                import os
                import torch_xla.core.xla_model as xm

                # TODO(xrt2pjrt): test xr.device_type() == 'TPU' instead [env-tpu-node-address]
                num_cores = 8 if os.environ.get('TPU_NAME') else 1
            """),
            manual=("xr.device_type() == 'TPU'",),
        ),
        Example(
            dedent("""
                import os
                import torch_xla.debug.profiler as xp

                xp.trace(f"{os.environ['TPU_IP_ADDRESS']}:8466", logdir='/tmp/tb')
            """),
            dedent("""
                import os
                import torch_xla.debug.profiler as xp

                # TODO(xrt2pjrt): profile with xp.start_server(9012) [env-tpu-node-address]
                xp.trace(f"{os.environ['TPU_IP_ADDRESS']}:8466", logdir='/tmp/tb')
            """),
            manual=("xp.start_server",),
        ),
        Example.unchanged(  # TensorFlow's: not PyTorch's to report
            dedent("""
                import os
                import tensorflow as tf

                resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=os.environ['TPU_NAME'])
            """),
        ),
        Example.unchanged(  # a copy of pytorch-xla-env-setup.py, run before torch is installed
            dedent("""
                import os

                WHEEL = 'torch-{version}.whl'

                def is_tpu_runtime():
                    return 'TPU_NAME' in os.environ
            """),
        ),
    )

    def leave(self, ctx, original, updated):
        name = updated.evaluated_value
        if name in NAMES and _imports_torch(ctx) and not (ctx.tree and _feeds_xrt_tpu_config(ctx.tree, ctx.line, name)):
            ctx.decide(SHORT[name], detail=ADVICE[name])
        return updated

    def call(self, ctx, node, name):
        target = argument(node, "service_addr", 0)
        if target is not None and _NODE_PROFILER in code(target[1].value):
            ctx.decide(SHORT["TPU_IP_ADDRESS"], detail=ADVICE["TPU_IP_ADDRESS"])
        return node


def _imports_torch(ctx) -> bool:
    if ctx.tree is None:
        return ctx.options.uses_torch(ctx.source)
    return any(
        full == "torch" or full.startswith(("torch.", "torch_xla"))
        for fulls in imports.import_names(ctx.tree).values()
        for full in fulls
    )


def _feeds_xrt_tpu_config(tree: ast.Module, line: int, name: str) -> bool:
    """Whether ``name`` on ``line`` only builds XRT_TPU_CONFIG (``os.environ['XRT_TPU_CONFIG'] =
    'tpu_worker;0;' + os.environ['TPU_IP_ADDRESS'] + ':8470'``), whose own item (env-xrt-tpu-config)
    says to run on a TPU VM: a read in that setting, or a setting of ``name`` the file reads
    only there, or nowhere."""
    assignments = spawn_site.of_type(tree, (ast.Assign,))
    settings = [node for node in assignments if node.lineno <= line <= node.end_lineno]
    configs = [
        (node.lineno, node.end_lineno)
        for node in assignments
        if any(_environ_key(target) == "XRT_TPU_CONFIG" for target in node.targets)
    ]
    in_config = [
        any(first <= node.lineno <= last for first, last in configs)
        for node in spawn_site.of_type(tree, (ast.Constant,))
        if node.value == name and node.lineno != line
    ]
    if any(first <= line <= last for first, last in configs):
        return True
    sets_it = any(_environ_key(target) == name for node in settings for target in node.targets)
    return sets_it and all(in_config)  # (read nowhere: nothing on 2.9 reads it either)


def _environ_key(target: ast.expr) -> str | None:
    """``K`` of an ``os.environ['K']`` target."""
    if isinstance(target, ast.Subscript) and is_environ(target.value):
        key = target.slice
        return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None
    return None
