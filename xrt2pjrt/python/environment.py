"""XRT environment variables in Python: set, read, deleted, or listed in dict literals.

From torch_xla 2.1 every ``XRT_*`` variable is silently ignored. One mechanism
(``EnvRule``) finds every access — ``os.environ[K] = v``, ``os.environ[K]``,
``os.environ.get/setdefault/pop/update``, ``os.getenv``, ``os.putenv``, ``K in
os.environ``, ``del os.environ[K]``, ``{K: v}`` literals, and the environments launchers
build for child processes (``env[K] = v`` on a copy, ``env.update(K=v)``, ``dict(os.environ,
K=v)``) — with ``K`` a string or an ``xenv.*`` name; each rule only says what becomes of its
variables:

- a write becomes a PJRT setting (``Setting``) or goes (``None``), with a manual item
  where its value asks for one (a remote TPU node, a GPU map, an unreadable map);
- a read becomes a manual item naming the PJRT replacement;
- a write to ``os.environ`` of a variable the file also reads stays as it is while those
  reads do (renamed, they would raise KeyError), with a manual item."""

from __future__ import annotations

import ast
import re
from typing import ClassVar

import libcst as cst

from xrt2pjrt.file_caches import per_file
from xrt2pjrt.python import imports, spawn_site
from xrt2pjrt.python.rule import PythonRule, argument, code, literal, says, without_args
from xrt2pjrt.report import Advice
from xrt2pjrt.xrt_variables import DEVICE_SETTINGS, REMOTE_TPU, SHARED, UNPREFIXED, device_for

XENV = "torch_xla.core.xla_env_vars"

# The xla_env_vars names that spelled XRT variables; none of them exists in torch_xla 2.9.
XENV_XRT = {
    "MP_DEVICE": "XRT_MULTI_PROCESSING_DEVICE",
    "LOCAL_WORKER": "XRT_LOCAL_WORKER",
    "TPU_CONFIG": "XRT_TPU_CONFIG",
    "SERVICE_ADDRESS": "XRT_MESH_SERVICE_ADDRESS",
    "DEVICE_MAP": "XRT_DEVICE_MAP",
    "WORKERS": "XRT_WORKERS",
    "LOCAL_ORDINAL": "XRT_SHARD_LOCAL_ORDINAL",
    "ORDINAL": "XRT_SHARD_ORDINAL",
    "WORLD_SIZE": "XRT_SHARD_WORLD_SIZE",
    "HOST_WORLD_SIZE": "XRT_HOST_WORLD_SIZE",
    "HOST_ORDINAL": "XRT_HOST_ORDINAL",
    "TORCH_DIST_METHOD": "XRT_TORCH_DIST_METHOD",
    "TORCH_DIST_ROOT": "XRT_TORCH_DIST_ROOT",
    "START_LOCAL_SERVER": "XRT_START_LOCAL_SERVER",
}
# The xla_env_vars names torch_xla 2.9 still has for XRT-era variables, which it neither
# sets nor reads: os.environ[xenv.TPU_MESH_CTLER_ADDR] is a KeyError under PJRT.
XENV_STILL = {
    "TPUVM_MODE": "TPUVM_MODE",
    "TPU_NUM_DEVICES": "TPU_NUM_DEVICES",
    "TPU_MESH_CTLER_ADDR": "TPU_MESH_CONTROLLER_ADDRESS",
    "TPU_MESH_CTLER_PORT": "TPU_MESH_CONTROLLER_PORT",
}
ENVIRON = "os.environ"
# callee -> the position of the variable's name; torch_xla's own reader too (Lightning's
# XLA environment read getenv_as(xenv.HOST_ORDINAL, int, 0))
_READS = {f"{ENVIRON}.get": 0, "os.getenv": 0, f"{ENVIRON}.pop": 0, "torch_xla.utils.utils.getenv_as": 0}
# Where each read takes the value it falls back on when nothing sets the variable.
_DEFAULTS = {
    f"{ENVIRON}.get": ("default", 1),
    "os.getenv": ("default", 1),
    f"{ENVIRON}.pop": ("default", 1),
    "torch_xla.utils.utils.getenv_as": ("defval", 2),
}
_WRITES = {f"{ENVIRON}.setdefault": 0, "os.putenv": 0}
# The last word of every callee above, and monkeypatch's setenv and an environment's update.
_METHODS = frozenset({"setenv", "update", *(callee.rsplit(".", 1)[-1] for callee in (*_READS, *_WRITES))})


# (variable, value): what a write becomes.
Setting = tuple[str, str]
# A write that stays as it is: a setting the target still reads, or one whose loss a person
# must weigh (its item says why).
KEEP: Setting = ("", "")
# What a write becomes (None: it goes; KEEP: it stays), and the manual item to add with it (None: none).
Write = tuple[Setting | None, Advice | None]


class EnvRule(PythonRule):
    words = ("XRT_", "xenv", *UNPREFIXED)
    nodes = (cst.Assign, cst.Call, cst.Subscript, cst.Dict, cst.Comparison, cst.Del)
    # False: a read with a fallback of its own (``os.environ.get(K, '1')``) needs nothing.
    asks_reads_with_a_default: ClassVar[bool] = True

    def handles(self, variable: str) -> bool:
        raise NotImplementedError

    def write(self, variable: str, value: str, target: tuple[int, int]) -> Write:
        """What a write of ``value`` (source text) to ``variable`` becomes, for torch_xla ``target``."""
        raise NotImplementedError

    def read(self, variable: str) -> Advice | None:
        """The manual item for a read of ``variable``: what to do, and why (None: nothing to do)."""
        raise NotImplementedError

    def removed_because(self, variable: str, target: tuple[int, int]) -> str:
        """Why a write of ``variable`` goes, for torch_xla ``target``: its change's message."""
        return "PJRT ignores it"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.names = frozenset(f"{XENV}.{name}" for name, var in XENV_XRT.items() if cls.handles(cls, var))

    # ``xenv.TPU_CONFIG`` no longer exists: spell the variable out, then treat the access.
    def reference(self, ctx, node, name):
        ctx.change(f"xenv.{name.rsplit('.', 1)[-1]} is gone from torch_xla: spelled out")
        return ctx.string(XENV_XRT[name.rsplit(".", 1)[-1]])

    def _key(self, ctx, node: cst.BaseExpression) -> str | None:
        """The XRT-era variable ``node`` names: a string, or one of the xla_env_vars names
        torch_xla 2.9 still has for one (``xenv.TPUVM_MODE``)."""
        if isinstance(node, cst.SimpleString):
            value = node.evaluated_value
        elif isinstance(node, cst.Attribute) and node.attr.value in XENV_STILL:
            value = XENV_STILL[node.attr.value] if ctx.resolve(node) == f"{XENV}.{node.attr.value}" else None
        else:
            return None
        return value if isinstance(value, str) and self._here(ctx, value) else None

    def _here(self, ctx, variable: str) -> bool:
        """Whether this rule treats ``variable`` in this file: a variable other frameworks
        read too is left to a TensorFlow or JAX file that does not use PyTorch, and to a
        notebook saved for a GPU runtime, which never had it."""
        return self.handles(variable) and (
            variable not in SHARED
            or not ctx.options.gpu_runtime
            and (ctx.options.uses_torch(ctx.source) or not _OTHER_FRAMEWORK.search(ctx.source))
        )

    def _environ(self, ctx, node) -> bool:
        return ctx.resolve(node) == ENVIRON

    # --- the access forms -------------------------------------------------------------
    def leave(self, ctx, original, updated):
        self.target_version = ctx.target_version  # the file's target, for read()'s advice
        try:
            return getattr(self, f"_{type(updated).__name__}")(ctx, original, updated)
        except _SetForATest:
            return updated

    def _left_alone_in_tests(self, ctx, variable: str) -> None:
        """A test that sets an XRT variable (for a mock, or for the code it tests) is left
        as it is: rewritten, it would no longer match the asserts that follow it."""
        if _sets_for_a_test(ctx):
            self._set_for_a_test(ctx, variable)
            raise _SetForATest

    def _set_for_a_test(self, ctx, variable: str) -> None:
        ctx.decide(
            "update this once its code is migrated",
            detail=f"{variable} is set for a test here: left as it is, with the test's expectations; once "
            f"the code under test is migrated, set what it reads now ({self.read(variable)})",
        )

    def _Assign(self, ctx, original, updated):
        if len(updated.targets) != 1:
            return updated
        target = updated.targets[0].target
        # os.environ, or a copy of it for a child process (env = os.environ.copy()): an
        # XRT_* key says which, as it does in a dict literal.
        if not isinstance(target, cst.Subscript):
            return updated
        variable = self._subscript_key(ctx, target)
        if variable is None or self._still_read(ctx, variable, updated.value):
            return updated
        setting = self._written(ctx, variable, updated.value)
        if setting is None:
            return self._drop_statement(ctx, variable, updated)
        if setting is KEEP:
            return updated
        new_target = target.with_changes(
            slice=[
                target.slice[0].with_changes(
                    slice=cst.Index(self._string(ctx, setting[0], target.slice[0].slice.value))
                )
            ]
        )
        value = self._string(ctx, setting[1], target.slice[0].slice.value)
        return updated.with_changes(targets=[updated.targets[0].with_changes(target=new_target)], value=value)

    def _subscript_key(self, ctx, node: cst.Subscript) -> str | None:
        if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
            return self._key(ctx, node.slice[0].slice.value)
        return None

    def _Subscript(self, ctx, original, updated):
        if ctx.is_store(original) or not self._environ(ctx, updated.value):
            return updated
        variable = self._subscript_key(ctx, updated)
        if variable is not None and not self._said_where_written(ctx, variable):
            self._ask(ctx, self.read(variable))
        return updated

    def _Del(self, ctx, original, updated):
        target = updated.target
        if isinstance(target, cst.Subscript) and self._environ(ctx, target.value):
            variable = self._subscript_key(ctx, target)
            if variable is not None and self.write(variable, "", ctx.target_version)[0] is not KEEP:
                self._left_alone_in_tests(ctx, variable)
                ctx.change(f"del {variable} removed: PJRT ignores it")
                if ctx.is_whole_statement():
                    ctx.remove_statement()
                else:
                    ctx.decide("remove this del: PJRT ignores it", detail=f"{variable} is ignored by PJRT")
        return updated

    def _Comparison(self, ctx, original, updated):
        for left, target in zip([updated.left] + [c.comparator for c in updated.comparisons], updated.comparisons):
            if isinstance(target.operator, (cst.In, cst.NotIn)) and self._environ(ctx, target.comparator):
                variable = self._key(ctx, left)
                if variable is not None:
                    self._ask(ctx, self.read(variable))
        return updated

    def _Call(self, ctx, original, updated):
        func = updated.func
        if isinstance(func, cst.Attribute) and func.attr.value not in _METHODS:
            return updated  # (most calls of a file: known before their names are resolved)
        if isinstance(func, cst.Attribute) and func.attr.value == "setenv" and updated.args:  # pytest's monkeypatch
            variable = self._key(ctx, updated.args[0].value)
            if variable is not None:
                self._set_for_a_test(ctx, variable)
            return updated
        callee = ctx.resolve(updated.func)
        if callee in _READS:
            hit = argument(updated, "key", 0)
            variable = hit and self._key(ctx, hit[1].value)
            fallback = argument(updated, *_DEFAULTS[callee])
            defaulted = fallback is not None and literal(fallback[1].value) is not None  # (None: as no default)
            if (
                variable
                and not self._said_where_written(ctx, variable)
                and (self.asks_reads_with_a_default or not defaulted)
            ):
                self._ask(ctx, self.read(variable))
            return updated
        if callee == f"{ENVIRON}.update" or _builds_an_environment(ctx, updated):
            return self._update_keywords(ctx, updated)
        if callee not in _WRITES or len(updated.args) != 2 or any(a.keyword or a.star for a in updated.args):
            return updated
        key, value = updated.args
        variable = self._key(ctx, key.value)
        if variable is None or self._still_read(ctx, variable, value.value):
            return updated
        setting = self._written(ctx, variable, value.value)
        if setting is None:
            return self._drop_statement(ctx, variable, updated)
        if setting is KEEP:
            return updated
        return updated.with_changes(
            args=[
                key.with_changes(value=self._string(ctx, setting[0], key.value)),
                value.with_changes(value=self._string(ctx, setting[1], key.value)),
            ]
        )

    def _update_keywords(self, ctx, call: cst.Call) -> cst.Call:
        args, dropped = list(call.args), set()
        present = {arg.keyword.value for arg in call.args if arg.keyword is not None}
        for index, arg in enumerate(call.args):
            variable = arg.keyword.value if arg.keyword is not None and self._here(ctx, arg.keyword.value) else None
            if variable is None:
                continue
            setting = self._written(ctx, variable, arg.value, memo=False)
            if setting is KEEP:
                continue
            if setting is not None and (setting[0] not in present or setting[0] == variable):
                present.add(setting[0])
                args[index] = arg.with_changes(
                    keyword=cst.Name(setting[0]), value=self._string(ctx, setting[1], arg.value)
                )
            else:
                dropped.add(index)
        if args == list(call.args) and not dropped:
            return call
        if len(dropped) < len(args):
            return without_args(call.with_changes(args=args), dropped)
        if isinstance(call.func, cst.Attribute) and ctx.is_whole_statement():
            ctx.remove_statement()  # an update with nothing left to set
        return call.with_changes(args=[], whitespace_before_args=cst.SimpleWhitespace(""))

    def _Dict(self, ctx, original, updated):
        elements, changed = [], False
        present = {
            e.key.evaluated_value
            for e in updated.elements
            if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
        }
        for element in updated.elements:
            variable = self._key(ctx, element.key) if isinstance(element, cst.DictElement) else None
            setting = None if variable is None else self._written(ctx, variable, element.value, memo=False)
            if variable is None or setting is KEEP:
                elements.append(element)
                continue
            changed = True
            if setting is None or (setting[0] in present and setting[0] != variable):
                continue
            present.add(setting[0])
            elements.append(
                element.with_changes(
                    key=self._string(ctx, setting[0], element.key), value=self._string(ctx, setting[1], element.key)
                )
            )
        if not changed:
            return updated
        if elements:
            elements[-1] = elements[-1].with_changes(comma=updated.elements[-1].comma)
            return updated.with_changes(elements=elements)
        # ``{}``: the braces' line breaks and indents go with the last element
        return updated.with_changes(elements=[], lbrace=cst.LeftCurlyBrace(), rbrace=cst.RightCurlyBrace())

    # --- shared pieces ---------------------------------------------------------------
    def _said_where_written(self, ctx, variable: str) -> bool:
        """Whether the read only prints or logs the value, in a file that also sets the
        variable: that write's item names this line (it stays while the file reads it), and
        a read that is no test needs no test of PJRT_DEVICE."""
        if not hasattr(self, "_writes"):
            self._writes = _environ_writes(ctx.tree)
        return variable in self._writes and _said(ctx)

    def _still_read(self, ctx, variable: str, value: cst.BaseExpression) -> bool:
        """Whether the file reads ``variable`` from os.environ elsewhere; if so, the write
        that sets it stays, reported with what it becomes once those reads are migrated."""
        if not hasattr(self, "_reads"):
            self._reads = _environ_reads(ctx.tree)
        lines = [line for line in self._reads.get(variable, ()) if line != ctx.line]
        setting, _ = self.write(variable, code(value), ctx.target_version)
        if not lines or setting is KEEP:
            return False
        then = f"set {setting[0]}={setting[1]!r} instead" if setting else "remove it"
        why = f"this write stays while it is, or that read raises KeyError; once the reads are migrated, {then}"
        ctx.decide(
            "migrate the reads first, then this write",
            cites=lines,
            detail=f"{variable} is read elsewhere in this file: {why}",
        )
        return True

    def _written(self, ctx, variable: str, value: cst.BaseExpression, memo: bool = True) -> Setting | None:
        setting, note = self.write(variable, code(value), ctx.target_version)
        if setting is not KEEP:
            self._left_alone_in_tests(ctx, variable)
        if note and not (note is REMOTE_TPU and ctx.options.xla_unreached):  # (no torch_xla to reach the node)
            self._ask(ctx, note)
        if setting is None:
            ctx.change(f"{variable} removed: {self.removed_because(variable, ctx.target_version)}")
            return None
        if setting is KEEP:
            return KEEP
        if memo and ctx.block.get(setting):
            ctx.change(f"{variable} removed: {setting[0]}={setting[1]} is already set here")
            return None
        if memo:
            ctx.block[setting] = True
        ctx.change(f"{variable} → {setting[0]}={setting[1]}")
        return setting

    @staticmethod
    def _drop_statement(ctx, variable: str, node):
        if ctx.is_whole_statement():
            ctx.remove_statement()
        else:
            ctx.decide("remove this write: PJRT ignores it", detail=f"{variable} is ignored by PJRT")
        return node

    @staticmethod
    def _ask(ctx, advice: Advice | None) -> None:
        if advice is not None:
            ctx.decide(advice.do, detail=advice.more)

    @staticmethod
    def _string(ctx, text: str, like: cst.BaseExpression) -> cst.SimpleString:
        return ctx.string(text, like)


class DeviceRule(EnvRule):
    """A variable that chose the device: a write becomes the PJRT_DEVICE its value names."""

    def handles(self, variable):
        return variable in DEVICE_SETTINGS

    def write(self, variable, value, target):
        choice = device_for(variable, value, target)
        return (None if choice.device is None else ("PJRT_DEVICE", choice.device)), choice.note


_OTHER_FRAMEWORK = re.compile(r"\b(?:import|from)\s+(?:tensorflow|jax)\b")


class _SetForATest(Exception):
    """A write found to be a test's: the node it is in stays as it is."""


_MOCKS = ("mock.patch.dict", "patch.dict", "monkeypatch.setenv", "monkeypatch.setitem")


def _sets_for_a_test(ctx) -> bool:
    """Whether the node being visited is inside ``mock.patch.dict(os.environ, {...})`` (or
    pytest's ``monkeypatch``), or in a test file (``_is_test_file``)."""
    return any(
        isinstance(node, cst.Call) and (ctx.resolve(node.func) or imports.dotted(node.func) or "").endswith(_MOCKS)
        for node in ctx.ancestors()
    ) or _is_test_file(ctx.tree)


@per_file()  # (asked at each write the file makes: a scan each time was quadratic)
def _is_test_file(tree: ast.Module | None) -> bool:
    """A module-level ``test_*`` function, or a ``test*`` method of a class: a training script's
    evaluation loop is often called ``test(model, loader)``, and is no test."""
    if tree is None:
        return False
    tests = [(tree.body, "test_")] + [(node.body, "test") for node in tree.body if isinstance(node, ast.ClassDef)]
    return any(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith(prefix)
        for body, prefix in tests
        for node in body
    )


def _builds_an_environment(ctx, call: cst.Call) -> bool:
    """``dict(os.environ, K=v)`` or ``env.update(K=v)`` on a copy of it: what a launcher
    hands to a child process (a keyword that is an XRT variable says so)."""
    func = call.func
    if isinstance(func, cst.Name) and func.value == "dict" and ctx.resolve(func) is None:
        return True
    return isinstance(func, cst.Attribute) and func.attr.value == "update"


def is_environ(node: ast.AST | None) -> bool:
    """Whether ``node`` is ``os.environ`` (or an ``environ`` imported from os)."""
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


@per_file()  # (each env rule that meets a write asks, of the same file)
def _environ_reads(tree: ast.Module | None) -> dict[str, list[int]]:
    """The variables the file (``tree``) reads from os.environ by a literal name, with the
    lines: ``environ[K]``, ``environ.get/pop(K)``, ``getenv(K)``, ``K in environ``. Names are
    not resolved here: a read that only looks like one keeps a write, which is the safe side.
    For a file only libcst can read no read is known, and writes are migrated as ever."""
    if tree is None:
        return {}
    reads: dict[str, list[int]] = {}
    for node in spawn_site.of_type(tree, (ast.Subscript, ast.Call, ast.Compare)):
        key = None
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and is_environ(node.value):
            key = node.slice
        elif isinstance(node, ast.Call) and node.args and isinstance(node.func, (ast.Attribute, ast.Name)):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
            if name in ("getenv", "getenv_as") or (
                name in ("get", "pop") and is_environ(getattr(node.func, "value", None))
            ):
                key = node.args[0]
        elif (
            isinstance(node, ast.Compare)
            and isinstance(node.ops[0], (ast.In, ast.NotIn))
            and is_environ(node.comparators[0])
        ):
            key = node.left
        if isinstance(key, ast.Attribute):  # xenv.TPUVM_MODE, xenv.HOST_ORDINAL
            key = ast.Constant(XENV_STILL.get(key.attr) or XENV_XRT.get(key.attr))
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            reads.setdefault(key.value, []).append(node.lineno)
    return reads


def _said(ctx) -> bool:
    """Whether the node being visited is an argument (or part of one) of a print or log call."""
    level = 1
    while (parent := ctx.parent(level)) is not None and not isinstance(parent, cst.BaseStatement):
        if isinstance(parent, cst.Call):
            return says(parent)
        level += 1
    return False


@per_file()  # (each env rule that meets a write asks, of the same file)
def _environ_writes(tree: ast.Module | None) -> set[str]:
    """The variables the file sets in os.environ by a literal name: ``environ[K] = ...``,
    ``environ.setdefault(K, ...)``."""
    if tree is None:
        return set()
    written = set()
    for node in spawn_site.of_type(tree, (ast.Subscript, ast.Call)):
        key = None
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and is_environ(node.value):
            key = node.slice
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "setdefault"
            and is_environ(node.func.value)
            and node.args
        ):
            key = node.args[0]
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            written.add(key.value)
    return written
