"""XLA runtime touched in a file that calls xmp.spawn or torch_xla.launch (of more than one process),
on import or in code the launching process calls before the spawn (RuntimeError from 2.4), report
once; or on import before a launch that spawns for the file (Lightning's TPU Trainer,
notebook_launcher, launch(fn))

A function that starts the runtime is reported on evidence that the launching process runs it
before the spawn: the file calls it there (before the spawn in the function that spawns, in that
function's callers, in the module's code, through the calls the file shows), or it is a method of
the class whose method spawns, which the launcher's users call first (pytorch-ignite 0.4.8's logger
asked its XLA model for the rank, and the spawn raised). A function only the replicas reach, one of
a branch beside the spawn's (``if one_core: ... else: xmp.spawn(...)``), or one called after the
spawn returns is not reported: the launching process does not start the runtime there.
"""

from __future__ import annotations

import ast
import bisect
import builtins
import re

import libcst as cst

from xrt2pjrt.file_caches import per_file
from xrt2pjrt.python import imports, spawn_site
from xrt2pjrt.python.rule import PythonRule, argument, literal
from xrt2pjrt.python.spawn_graph import (
    LAUNCH,
    REPLICA_IDENTITY,
    RUNTIME_STARTERS,
    SPAWN,
    in_one_process,
    reached_from,
    spawn_calls,
    spawned_code,
)
from xrt2pjrt.registry import Example, dedent


# What to do, each item's message (its TODO line); and why, its long text.
_STARTED = "move XLA calls into the spawned fn"
_BEYOND = "keep XLA out of the launching process"
_LAUNCHED = "move this call into the replicas' code"


def _started(spawn: str = "xmp.spawn") -> str:
    return (
        f"this file starts the XLA runtime at module level, in the launching process, before {spawn}, which "
        "then raises 'Runtime is already initialized' (torch_xla 2.4+): move the calls that start it into the "
        "spawned function"
    )


def _beyond(spawn: str = "xmp.spawn") -> str:
    return (
        f"this file starts the XLA runtime in code the launching process runs before {spawn}: a function called "
        "before this call, or a method of the class that spawns, which its users call first (a library's set-up, "
        f"a logger asking for the rank); {spawn} then raises 'Runtime is already initialized' (torch_xla 2.4+)"
    )


def _launched(launcher: str) -> str:
    return (
        f"this call starts the XLA runtime in the launching process, before {launcher} starts the replicas: "
        "torch_xla 2.4+ then raises 'Runtime is already initialized' (XRT's did not start there): move this call "
        "into the function the replicas run"
    )


_EXAMPLE_TRAINER = "Lightning's `pl.Trainer(tpu_cores=8)`"


class RuntimeBeforeSpawn(PythonRule):
    id = "spawn-runtime-before"
    fix = "none"
    statement_words = ("'xla", '"xla')  # x.to('xla'), torch.zeros(2, device="xla")
    summary = "XLA runtime touched before xmp.spawn / torch_xla.launch (RuntimeError from 2.4): reported"
    names = RUNTIME_STARTERS | {SPAWN, LAUNCH}
    examples = (
        Example(
            dedent("""
                import torch_xla.core.xla_model as xm
                import torch_xla.distributed.xla_multiprocessing as xmp

                DEVICE = xm.xla_device()

                if __name__ == '__main__':
                    xmp.spawn(_mp_fn)
            """),
            dedent("""
                import torch_xla.core.xla_model as xm
                import torch_xla.distributed.xla_multiprocessing as xmp

                DEVICE = xm.xla_device()

                if __name__ == '__main__':
                    # TODO(xrt2pjrt): move XLA calls into the spawned fn [spawn-runtime-before]
                    xmp.spawn(_mp_fn)
            """),
            manual=("before xmp.spawn, which then raises",),
        ),
        Example(  # a class body and a function's default values run on import too
            dedent("""
                import torch_xla.core.xla_model as xm
                import torch_xla.distributed.xla_multiprocessing as xmp

                class Cfg:
                    world = xm.xrt_world_size()

                def log(msg, rank=xm.get_ordinal()):
                    print(rank, msg)

                if __name__ == '__main__':
                    xmp.spawn(_mp_fn)
            """),
            dedent("""
                import torch_xla.core.xla_model as xm
                import torch_xla.distributed.xla_multiprocessing as xmp

                class Cfg:
                    world = xm.xrt_world_size()

                def log(msg, rank=xm.get_ordinal()):
                    print(rank, msg)

                if __name__ == '__main__':
                    # TODO(xrt2pjrt): move XLA calls into the spawned fn [spawn-runtime-before]
                    xmp.spawn(_mp_fn)
            """),
            manual=("(line 5, 7)",),
        ),
        Example(  # dinhanhx/VisualRoBERTa: no spawn in the file, Lightning's Trainer spawns after the sampler
            dedent("""
                import pytorch_lightning as pl
                import torch_xla.core.xla_model as xm

                if __name__ == '__main__':
                    sampler = DistributedSampler(data, num_replicas=xm.xrt_world_size())
                    pl.Trainer(tpu_cores=8).fit(model, DataLoader(data, sampler=sampler))
            """),
            dedent("""
                import pytorch_lightning as pl
                import torch_xla.core.xla_model as xm

                if __name__ == '__main__':
                    # TODO(xrt2pjrt): move this call into the replicas' code [spawn-runtime-before]
                    sampler = DistributedSampler(data, num_replicas=xm.xrt_world_size())
                    pl.Trainer(tpu_cores=8).fit(model, DataLoader(data, sampler=sampler))
            """),
            manual=(f"before {_EXAMPLE_TRAINER} starts the replicas",),
        ),
        Example.unchanged(  # the spawned function and what it calls: the workers' code
            dedent("""
                import torch_xla.core.xla_model as xm
                import torch_xla.distributed.xla_multiprocessing as xmp

                def _device():
                    return xm.xla_device()

                def _mp_fn(index):
                    device = _device()

                xmp.spawn(_mp_fn)
            """),
        ),
        Example.unchanged(  # tmabraham/fastai_tpu: a callback class the replica hands to its framework, a patched method
            dedent("""
                import torch_xla.core.xla_model as xm
                import torch_xla.distributed.xla_multiprocessing as xmp

                class OnTPU(Callback):
                    def before_fit(self):
                        self.device = xm.xla_device()

                def _to_tpu(learn):
                    learn.callback_fns.append(OnTPU)

                Learner.to_tpu = _to_tpu

                def _mp_fn(index):
                    make_learner().to_tpu().fit(1)

                xmp.spawn(_mp_fn)
            """),
        ),
        Example(  # pytorch-ignite 0.4.8: the launcher's own class asks for the rank in the launching process
            dedent("""
                import torch_xla.core.xla_model as xm
                import torch_xla.distributed.xla_multiprocessing as xmp

                class XlaModel:
                    def get_rank(self):
                        return xm.get_ordinal()

                    @staticmethod
                    def _worker(index, fn):
                        fn(index)

                    @staticmethod
                    def spawn(fn):
                        xmp.spawn(XlaModel._worker, args=(fn,))
            """),
            dedent("""
                import torch_xla.core.xla_model as xm
                import torch_xla.distributed.xla_multiprocessing as xmp

                class XlaModel:
                    def get_rank(self):
                        return xm.get_ordinal()

                    @staticmethod
                    def _worker(index, fn):
                        fn(index)

                    @staticmethod
                    def spawn(fn):
                        # TODO(xrt2pjrt): keep XLA out of the launching process [spawn-runtime-before]
                        xmp.spawn(XlaModel._worker, args=(fn,))
            """),
            manual=("(in get_rank)",),
        ),
    )

    def __init__(self):
        self.started_at: list[int] = []  # lines run on import that start the runtime
        self.reported = False  # the first spawn after them raises: the later ones never run
        self.launcher: tuple[str, int] | None | bool = False  # _launcher's answer, once asked

    nodes = (cst.Call,)  # x.to('xla'), torch.zeros(2, device='xla'): the device by its name

    def leave(self, ctx, original, updated):
        if _names_the_xla_device(original):
            self._runtime_started(ctx)
        return updated

    def _runtime_started(self, ctx) -> None:
        if ctx.runs_on_import:
            self.started_at.append(ctx.line)
            if self.launcher is False:
                self.launcher = _launcher(ctx.tree)
            if self.launcher and ctx.line < self.launcher[1]:
                ctx.decide(_LAUNCHED, detail=_launched(self.launcher[0]))

    def call(self, ctx, node, name):
        if name not in (SPAWN, LAUNCH):
            self._runtime_started(ctx)
            return node
        if self.reported or in_one_process(ctx.original, name):  # (one process: torch_xla checks nothing)
            return node
        spawn = "torch_xla.launch" if name == LAUNCH else "xmp.spawn"
        if self.started_at:
            ctx.decide(_STARTED, cites=self.started_at, detail=_started(spawn))
            self.reported = True
            return node
        beyond = _started_beyond(ctx.tree, argument(ctx.original, "fn", 0), ctx.line, argument(ctx.original, "args", 1))
        if beyond:
            ctx.decide(f"{_BEYOND} (in {', '.join(beyond)})", comment=_BEYOND, detail=_beyond(spawn))
            self.reported = True
        return node


_LIGHTNING = ("pytorch_lightning", "lightning")
_LIGHTNING_RUNS = frozenset({"fit", "validate", "test", "predict"})
_NOTEBOOK_LAUNCHERS = frozenset({"accelerate.notebook_launcher", "accelerate.launchers.notebook_launcher"})
# Calls that run the function they are given in this process (absl's app.run(main)).
_IN_PROCESS = frozenset({"absl.app.run", "fire.Fire", "typer.run", "atexit.register"})


# 'xla' or 'xla:0' (what torch takes for the XLA device; checked on CPU: a tensor moved there
# on import made the spawn raise 'Runtime is already initialized')
_XLA_DEVICE = re.compile(r"xla(:\d+)?")


def _names_the_xla_device(call: cst.Call) -> bool:
    """``x.to('xla')``, ``torch.zeros(2, device='xla')``: a call that puts data on the XLA
    device by its name, which starts the runtime."""

    def named(arg: cst.Arg) -> bool:
        value = literal(arg.value)
        return isinstance(value, str) and bool(_XLA_DEVICE.fullmatch(value))

    to = isinstance(call.func, cst.Attribute) and call.func.attr.value == "to"
    return any(
        named(arg)
        for arg in call.args
        if (arg.keyword is not None and arg.keyword.value == "device") or (to and arg.keyword is None)
    )


def _launcher(tree: ast.Module | None) -> tuple[str, int] | None:
    """In a file that calls no xmp.spawn, the first call run on import that has the replicas
    spawned for it (what it is, its line): Lightning's Trainer(accelerator='tpu') (from the
    trainer's run), accelerate's notebook_launcher, or a call given one of the file's
    functions that uses the XLA runtime (a launcher of the project's own, r3's launch(fn)).
    A runtime call before it runs in the launching process; a spawn in the file is judged at
    the spawn."""
    if tree is None:
        return None
    if spawn_calls(tree):
        return None
    bound = spawn_site.imported(tree)
    replicas = {
        name
        for name, values in spawn_site.bindings(tree).items()
        if any(
            isinstance(value, (ast.FunctionDef, ast.AsyncFunctionDef))
            and any(
                isinstance(call, ast.Call) and spawn_site.resolved(call.func, bound) in REPLICA_IDENTITY
                for call in spawn_site.walk(value)
            )
            for value in values
        )
    }
    lightning = any(full.startswith(_LIGHTNING) for full in bound.values())
    calls = sorted(
        (node for node in spawn_site.nodes_of(tree.body) if isinstance(node, ast.Call)),
        key=lambda call: (call.lineno, call.col_offset),
    )
    for index, call in enumerate(calls):
        if spawn_site.resolved(call.func, bound) in _NOTEBOOK_LAUNCHERS:
            return "accelerate's notebook_launcher", call.lineno
        given = [
            arg.id
            for arg in (*call.args, *(keyword.value for keyword in call.keywords))
            if isinstance(arg, ast.Name) and arg.id in replicas
        ]
        callee = spawn_site.resolved(call.func, bound) or ""
        if (
            given
            and not callee.startswith("torch_xla")
            and callee not in _IN_PROCESS
            and not (isinstance(call.func, ast.Name) and call.func.id not in bound and hasattr(builtins, call.func.id))
        ):
            return (
                f"`{ast.unparse(call.func)}(...)`, given {given[0]}, a function of this file that uses it,",
                call.lineno,
            )
        if lightning and (keyword := _on_tpu(call)):
            run = next(
                (
                    later
                    for later in calls[index:]
                    if isinstance(later.func, ast.Attribute) and later.func.attr in _LIGHTNING_RUNS
                ),
                call,
            )
            return f"Lightning's `{ast.unparse(call.func)}({keyword})`", run.lineno
    return None


def _on_tpu(call: ast.Call) -> str | None:
    """The keyword by which a Lightning Trainer (or Fabric) spawns a replica per TPU device:
    tpu_cores=8 (Lightning < 2), a TPU strategy ('tpu_spawn', 'xla'), accelerator='tpu'
    unless on one device. A count the code reads (``tpu_cores=args.tpus``) counts: the file
    is written to spawn with it, and a TPU run gives it 8."""
    keywords = {keyword.arg: keyword.value for keyword in call.keywords}
    given = {name: value.value for name, value in keywords.items() if isinstance(value, ast.Constant)}
    cores, strategy = given.get("tpu_cores"), given.get("strategy")
    if (isinstance(cores, int) and cores > 1) or isinstance(keywords.get("tpu_cores"), (ast.Name, ast.Attribute)):
        return f"tpu_cores={ast.unparse(keywords['tpu_cores'])}"
    if isinstance(strategy, str) and ("tpu" in strategy or "xla" in strategy):
        return f"strategy={strategy!r}"
    if given.get("accelerator") == "tpu" and given.get("devices") != 1:
        return "accelerator='tpu'"
    return None


def _started_beyond(
    tree: ast.Module | None, fn: tuple[int, cst.Arg] | None, line: int, args: tuple[int, cst.Arg] | None = None
) -> list[str]:
    """The functions that start the runtime in the launching process before the spawn on
    ``line``: those it calls before it (:meth:`_Calls.called_before`), and the methods of the class
    whose method spawns that the spawned function does not reach (:func:`reached_from`): a
    launcher object lives in the launching process, and its users ask it first (pytorch-ignite
    0.4.8's logger asked its XLA model for the rank). Not when the spawn hands the object
    itself to the replicas (``args=(params, self)``): its methods are theirs then. Names: a
    second pass, where lines have moved, says the same."""
    spawned = fn and imports.dotted(fn[1].value)
    if tree is None or not spawned:
        return []
    calls = _file_calls(tree)
    before = calls.called_before(line)
    owner = calls.class_of.get(spawn_site.function_at(tree, line))  # the class whose method spawns
    launcher = (
        set()
        if owner is None or (args is not None and _hands_self(args[1].value))
        else {  # (its __init__ goes by the class's name, as _starting names it)
            owner.name if method.name == "__init__" else method.name
            for method in owner.body
            if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
    )
    launcher -= reached_from(tree, spawned) | spawned_code(tree)  # another spawn's replicas run it: not the launcher
    holder = spawn_site.function_at(tree, line)
    own = {holder.name} if holder is not None and calls.starts_before(holder, line) else set()
    return [function for function in _starting(tree) if function in before | launcher | own]


def _hands_self(args: cst.BaseExpression) -> bool:
    """``args=(params, self)``: the spawn hands the object whose method spawns to the replicas."""
    return isinstance(args, (cst.Tuple, cst.List)) and any(
        isinstance(element.value, cst.Name) and element.value.value == "self" for element in args.elements
    )


@per_file()  # (once per file: each spawn asks)
def _starting(tree: ast.Module) -> tuple[str, ...]:
    """The file's functions whose own code starts the runtime, in the file's order. The walk
    enters only the nodes on the way down to a call that starts it."""
    bound = spawn_site.imported(tree)
    found: list[str] = []
    up, toward = spawn_site.parents(tree), set()
    for node in spawn_site.of_type(tree, (ast.Call,)):
        if spawn_site.resolved(node.func, bound) in RUNTIME_STARTERS:
            while node is not None and id(node) not in toward:
                toward.add(id(node))
                node = up.get(id(node))

    # depth first, in the file's order (a recursive closure would be a cycle: codemod._no_cyclic_gc)
    stack: list[tuple[ast.AST, str | None]] = [(tree, None)] if toward else []
    while stack:
        node, function = stack.pop()
        if isinstance(node, ast.Call) and function is not None and function not in found:
            if spawn_site.resolved(node.func, bound) in RUNTIME_STARTERS:
                found.append(function)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            # its decorators and default values run where it is defined, its body when it is called
            parts = (*node.decorator_list, *node.args.defaults, *filter(None, node.args.kw_defaults))
            # a class's __init__ runs where the class is called: it goes by the class's name
            owner = up.get(id(node))
            name = owner.name if node.name == "__init__" and isinstance(owner, ast.ClassDef) else node.name
            below = [*((part, function) for part in parts), *((statement, name) for statement in node.body)]
        else:
            below = [(child, function) for child in spawn_site.children(node)]
        stack += reversed([entry for entry in below if id(entry[0]) in toward])
    return tuple(found)


@per_file()  # (built at the file's first spawn, asked at each)
def _file_calls(tree: ast.Module) -> _Calls:
    return _Calls(tree)


class _Calls:
    """The file's functions and calls, found in one walk of it, as the rule asks about them at
    each spawn: a walk of the file for each spawn made a file of many spawns quadratic."""

    def __init__(self, tree: ast.Module):
        self.tree = tree
        self.bound = spawn_site.imported(tree)
        # name -> its defs (and a class's ``__init__``: Trainer(...) runs it); name -> the calls of it
        self.defs: dict[str, list[ast.AST]] = {}
        self.calls_of: dict[str | None, list[ast.Call]] = {}
        self.class_of: dict[ast.AST, ast.ClassDef] = {}  # a statement of a class's body -> the class
        for node in spawn_site.of_type(tree, (*spawn_site.DEFINITIONS, ast.Call)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.defs.setdefault(node.name, []).append(node)
            elif isinstance(node, ast.ClassDef):
                self.defs.setdefault(node.name, []).extend(
                    method for method in node.body if isinstance(method, ast.FunctionDef) and method.name == "__init__"
                )
                self.class_of.update(dict.fromkeys(node.body, node))
            elif isinstance(node, ast.Call):
                self.calls_of.setdefault(spawn_site.called_name(node.func), []).append(node)
        self._own: dict[ast.AST, tuple[list[ast.Call], list[int], list[list[str]], list[ast.If]]] = {}
        self._called: dict[str, set[str]] = {}
        self._outside_main: set[str] | None = None

    def called_before(self, line: int) -> set[str]:
        """The names of the file's functions (and classes' ``__init__``) the launching process
        calls before the spawn on ``line``, through the calls this file shows: the code before
        it in the function that holds it, in that function's callers before their call, and in
        the module before the first of them (all of the module's code outside its main block
        when nothing here calls it: a library's, imported first)."""
        tree = self.tree
        names: set[str] = set()
        pending, holders = [(spawn_site.function_at(tree, line), line)], set()
        while pending:
            holder, at = pending.pop()
            if holder is None:
                names |= self._names_before(tree, at)
                continue
            if holder in holders:
                continue
            holders.add(holder)
            names |= self._names_before(holder, at)
            callers = [
                (spawn_site.function_at(tree, call.lineno), call.lineno)
                for call in self.calls_of.get(holder.name, ())
                if not holder.lineno <= call.lineno <= holder.end_lineno and not self._of_another_object(call, holder)
            ]
            pending += callers
            if not callers:
                names |= self._outside_main_block()
        reached: set[str] = set()
        pending_names = list(names)
        while pending_names:
            name = pending_names.pop()
            if name in reached or name not in self.defs:
                continue
            reached.add(name)
            pending_names += self._called_by(name)
        return reached

    def _of_another_object(self, call: ast.Call, method: ast.AST) -> bool:
        """Whether ``call``, in the class that defines ``method``, calls a method of the same name
        on another object (``inside_model.train()`` beside the trainer's own ``train``): its own
        methods call it through ``self``."""
        owner = self.class_of.get(method)
        return (
            owner is not None
            and owner.lineno <= call.lineno <= owner.end_lineno
            and isinstance(call.func, ast.Attribute)
            and not (isinstance(call.func.value, ast.Name) and call.func.value.id in ("self", "cls", owner.name))
        )

    def _own_calls(self, scope: ast.AST) -> tuple[list[ast.Call], list[int], list[list[str]], list[ast.If]]:
        """The calls of ``scope``'s own code in the order of their lines, their lines, the names
        each runs (:func:`_called_names`); and its ``if`` statements."""
        own = self._own.get(scope)
        if own is None:
            calls = sorted(spawn_site.own_of(self.tree, scope, ast.Call), key=lambda call: call.lineno)
            own = self._own[scope] = (
                calls,
                [call.lineno for call in calls],
                [self._names_run(call, scope) for call in calls],
                spawn_site.own_of(self.tree, scope, ast.If),
            )
        return own

    def _names_run(self, call: ast.Call, scope: ast.AST) -> list[str]:
        """:func:`_called_names` of ``call`` in ``scope``; ``super().__init__()`` in a method runs
        the ``__init__`` of its class's bases, not every ``__init__`` of the file."""
        func = call.func
        if not (
            isinstance(func, ast.Attribute)
            and func.attr == "__init__"
            and isinstance(func.value, ast.Call)
            and isinstance(func.value.func, ast.Name)
            and func.value.func.id == "super"
        ):
            return _called_names(call, self.bound)
        owner = self.class_of.get(scope)
        return [base.id for base in owner.bases if isinstance(base, ast.Name)] if owner else []

    def _names_before(self, scope: ast.AST, line: int) -> set[str]:
        """The names the calls of ``scope``'s own code run before ``line`` (:meth:`_before`)."""
        names = self._own_calls(scope)[2]
        return {name for index in self._before(scope, line) for name in names[index]}

    def starts_before(self, scope: ast.AST, line: int) -> bool:
        """Whether ``scope``'s own code calls what starts the runtime before ``line``
        (:meth:`_before`): ``device = xm.xla_device()`` above the spawn in the function that spawns."""
        calls = self._own_calls(scope)[0]
        return any(
            spawn_site.resolved(calls[index].func, self.bound) in RUNTIME_STARTERS
            for index in self._before(scope, line)
        )

    def _before(self, scope: ast.AST, line: int) -> list[int]:
        """The indexes (in :meth:`_own_calls`' order) of the calls of ``scope``'s own code that run
        before ``line``: not those in one branch of an ``if`` whose other branch holds ``line``
        (``if one_core: main() else: xmp.spawn(...)``)."""
        _, lines, _, ifs = self._own_calls(scope)
        other = [
            (other[0].lineno, other[-1].end_lineno)
            for node in ifs
            for block, other in ((node.body, node.orelse), (node.orelse, node.body))
            if other and _within(block, line)
        ]
        return [
            index
            for index, at in enumerate(lines[: bisect.bisect_left(lines, line)])
            if not any(first <= at <= last for first, last in other)
        ]

    def _called_by(self, name: str) -> set[str]:
        """The names the defs of ``name`` run in their own code."""
        called = self._called.get(name)
        if called is None:
            called = self._called[name] = {
                each for function in self.defs[name] for names in self._own_calls(function)[2] for each in names
            }
        return called

    def _outside_main_block(self) -> set[str]:
        """The names the module's code runs outside its ``if __name__ == '__main__':`` blocks."""
        if self._outside_main is None:
            self._outside_main = {
                name
                for node in spawn_site.nodes_of(spawn_site.outside_main_block(self.tree))
                if isinstance(node, ast.Call)
                for name in _called_names(node, self.bound)
            }
        return self._outside_main


def _within(block: list[ast.stmt], line: int) -> bool:
    return bool(block) and block[0].lineno <= line <= block[-1].end_lineno


def _called_names(call: ast.Call, bound: dict[str, str]) -> list[str]:
    """The names ``call`` runs now: its callee's, and the functions it hands to a call that
    runs them in this process (absl's ``app.run(main)``)."""
    handed = (
        [arg.id for arg in call.args if isinstance(arg, ast.Name)]
        if (spawn_site.resolved(call.func, bound) in _IN_PROCESS)
        else []
    )
    return [name for name in (spawn_site.called_name(call.func), *handed) if name]
