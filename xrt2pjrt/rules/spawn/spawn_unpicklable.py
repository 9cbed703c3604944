"""What xmp.spawn or torch_xla.launch cannot pickle, handed to it: reported.

XRT's spawn handed ``fn`` and ``args`` to forked replicas as they were. torch_xla 2.x's
xmp.spawn (and torch_xla.launch, which calls it) pickles them for each process, even with
``start_method='fork'``. pickle refuses what has no importable name (a nested function, a
lambda, an instance of a class defined in a function) and what holds a lock (multiprocessing
and threading locks, queues and events, xmp.MpModelWrapper, xmp.MpSerialExecutor), so the spawn
fails ("Can't pickle local object"). Each such ``fn`` or argument (or a partial of one; in an
args tuple, or a name bound to one) is reported: define it at module level, and let the spawned
function read a lock from a module global. The shim's spawn, as XRT's, pickles them only
where it does not fork (``start_method='fork'`` hands them over as they are).
"""

from __future__ import annotations

import ast

from xrt2pjrt.python import spawn_site
from xrt2pjrt.python.rule import PythonRule, argument, code, literal
from xrt2pjrt.python.spawn_graph import LAUNCH, SHIM_SPAWNS, SPAWN, START_METHOD_POSITION, elements, in_one_process
from xrt2pjrt.registry import Example, dedent

_LOCKED = "which holds a lock"  # pickle refuses a lock: 'Lock objects should only be shared ... through inheritance'
# What multiprocessing makes that holds a lock ('... objects should only be shared between
# processes through inheritance'), as module functions and as methods of a context.
_MP_LOCKED = (
    "Lock",
    "RLock",
    "Semaphore",
    "BoundedSemaphore",
    "Condition",
    "Event",
    "Barrier",
    "Queue",
    "SimpleQueue",
    "JoinableQueue",
    "Value",
    "Array",
)
_MP_MODULES = ("multiprocessing", "torch.multiprocessing")
_CONTEXTS = frozenset(f"{module}.get_context" for module in _MP_MODULES)
_LOCK_HOLDERS = {
    "torch_xla.distributed.xla_multiprocessing.MpModelWrapper": f"an xmp.MpModelWrapper, {_LOCKED}",
    "torch_xla.distributed.xla_multiprocessing.MpSerialExecutor": f"an xmp.MpSerialExecutor, {_LOCKED}",
    **{f"{module}.{name}": f"a {module}.{name}, {_LOCKED}" for module in _MP_MODULES for name in _MP_LOCKED},
    **{f"threading.{name}": f"a threading.{name}, {_LOCKED}" for name in ("Lock", "RLock", "Condition", "Event")},
}


def _pickled(refused: list[tuple[str, str]], shim: bool = False, launch: bool = False) -> tuple[str, str]:
    """The item's message (what to do with the refused arguments) and its long text (what
    pickle refuses and why). ``refused``: (argument, what it is), e.g. ("fn", "a lambda")."""
    places = " and ".join(place for place, _ in refused)
    what = " and ".join(f"{place} ({kind})" for place, kind in refused)
    advice = "define it at module level"
    if any(_LOCKED in kind for _, kind in refused):  # a forked replica inherits the module's globals, locks included
        advice = "define functions at module level, and let the spawned function read a lock from a module global"
    if shim:  # xrt2pjrt/shim/spawn_targets.py: under fork the shim hands them over unpickled
        advice += ", or spawn with start_method='fork'"
        why = "the shim's xmp.spawn pickles fn and args for each process unless start_method='fork', as XRT's did"
    elif launch:
        why = (
            "torch_xla.launch pickles fn and args for each process (it calls xmp.spawn), even with start_method='fork'"
        )
    else:
        why = (
            "torch_xla 2.x's xmp.spawn pickles fn and args for each process, even with start_method='fork' (XRT's "
            "forked them unpickled)"
        )
    return f"move {places} to module level", f"pickle refuses {what}: {advice}; {why}"


class Unpicklable(PythonRule):
    id = "spawn-unpicklable"
    fix = "none"
    summary = "xmp.spawn of a nested function, a lambda or a lock (torch_xla 2.x pickles them): reported"
    names = frozenset({SPAWN, LAUNCH, *SHIM_SPAWNS})
    examples = (
        Example(
            dedent("""
                import torch_xla.distributed.xla_multiprocessing as xmp

                def train_all(flags):
                    def _mp_fn(index):
                        print(index, flags)

                    xmp.spawn(_mp_fn, start_method='fork')
            """),
            dedent("""
                import torch_xla.distributed.xla_multiprocessing as xmp

                def train_all(flags):
                    def _mp_fn(index):
                        print(index, flags)

                    # TODO(xrt2pjrt): move fn to module level [spawn-unpicklable]
                    xmp.spawn(_mp_fn, start_method='fork')
            """),
            manual=("refuses fn (`_mp_fn`, a function defined in train_all)",),
        ),
        Example(
            dedent("""
                import torch_xla.distributed.xla_multiprocessing as xmp

                xmp.spawn(_mp_fn, args=(lambda r: r * 10,), start_method='fork')
            """),
            dedent("""
                import torch_xla.distributed.xla_multiprocessing as xmp

                # TODO(xrt2pjrt): move args[0] to module level [spawn-unpicklable]
                xmp.spawn(_mp_fn, args=(lambda r: r * 10,), start_method='fork')
            """),
            manual=("refuses args[0] (a lambda)",),
        ),
        Example(  # torch_xla.launch calls xmp.spawn; an instance pickles by its class's name
            dedent("""
                import torch_xla

                def main():
                    class Cfg:
                        lr = 0.1

                    args = (Cfg(),)
                    torch_xla.launch(_mp_fn, args=args)
            """),
            dedent("""
                import torch_xla

                def main():
                    class Cfg:
                        lr = 0.1

                    args = (Cfg(),)
                    # TODO(xrt2pjrt): move args[0] to module level [spawn-unpicklable]
                    torch_xla.launch(_mp_fn, args=args)
            """),
            manual=("refuses args[0] (an instance of `Cfg`, a class defined in main)",),
        ),
        Example.unchanged(  # the shim's spawn forks them over unpickled, as XRT's did
            dedent("""
                import torch_xla.distributed.xla_multiprocessing as xmp

                xmp.spawn(_mp_fn, args=(lambda r: r * 10,), start_method='fork')
            """),
            options={"target": "shim"},
        ),
        Example.unchanged(  # one process: torch_xla calls fn in this one, unpickled
            dedent("""
                import torch_xla.distributed.xla_multiprocessing as xmp

                xmp.spawn(_mp_fn, args=(lambda r: r * 10,), nprocs=1)
            """),
        ),
    )

    def call(self, ctx, node, name):
        if in_one_process(ctx.original, name):
            return node
        # torch_xla.launch is torch_xla's own spawn under either target: the shim does not replace it
        shim = name != LAUNCH and (ctx.options.target == "shim" or name in SHIM_SPAWNS)
        if (
            shim
            and (start := argument(ctx.original, "start_method", START_METHOD_POSITION))
            and (literal(start[1].value) == "fork")
        ):
            return node
        site = spawn_site.find(ctx.tree, ctx.line, code(ctx.original.func))
        if site is None:
            return node
        bound = spawn_site.imported(ctx.tree)
        refused = []
        fn = site.argument("fn", 0)
        if fn is not None and (what := _refused(fn, site, bound, set())):
            refused.append(("fn", what))
        for index, value in enumerate(elements(site.argument("args", 1), site)):
            if what := _refused(value, site, bound, set()):
                refused.append((f"args[{index}]", what))
        if refused:
            message, detail = _pickled(refused, shim, name == LAUNCH)
            ctx.decide(message, detail=detail)
        return node


def _local_class(func: ast.expr, site: spawn_site.Site) -> str | None:
    """``Cfg``'s description when ``func`` names a class defined in a function: pickle finds
    an instance's class by its name, which is not there ('Can't pickle local object'),
    unless the class says how it pickles (``__reduce__``)."""
    scope = isinstance(func, ast.Name) and site.binding_scope(func.id)
    if not scope or isinstance(scope, ast.Module):
        return None
    classes = spawn_site.bindings(scope)[func.id]
    if not all(
        isinstance(cls, ast.ClassDef)
        and not any(
            isinstance(item, ast.FunctionDef) and item.name in ("__reduce__", "__reduce_ex__") for item in cls.body
        )
        for cls in classes
    ):
        return None
    return f"`{func.id}`, a class defined in {scope.name}"


def _refused(value: ast.expr, site: spawn_site.Site, bound: dict[str, str], seen: set[str]) -> str | None:
    """What ``value``, given to the spawn, is when pickle refuses it (a function defined in
    another one, a lambda, an instance of a class defined in one, what holds a lock); None
    when it pickles or this file cannot tell (a parameter, an import, another call's result)."""
    if isinstance(value, ast.Lambda):
        return "a lambda"
    if isinstance(value, ast.Call) and (cls := _local_class(value.func, site)):
        return f"an instance of {cls}"
    if isinstance(value, ast.Call) and (what := _lock_holder(value, site, bound)):
        return what
    if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == "self":
        return _method_of_a_lock_holder(value.attr, site, bound)
    if isinstance(value, ast.Call) and spawn_site.resolved(value.func, bound) == "functools.partial":
        parts = (*value.args, *(keyword.value for keyword in value.keywords))
        inner = next((what for part in parts if (what := _refused(part, site, bound, seen))), None)
        return inner and f"a functools.partial of {inner}"
    if not isinstance(value, ast.Name) or value.id in seen:
        return None
    scope = site.binding_scope(value.id)
    if scope is None:
        return None
    found = []
    for binding in spawn_site.bindings(scope)[value.id]:
        if isinstance(binding, spawn_site.DEFINITIONS):
            if isinstance(scope, ast.Module):
                return None  # pickled by its name
            found.append(f"a {'class' if isinstance(binding, ast.ClassDef) else 'function'} defined in {scope.name}")
        else:
            found.append(binding and _refused(binding, site, bound, seen | {value.id}))
    return f"`{value.id}`, {found[0]}" if all(found) else None


def _lock_holder(call: ast.Call, site: spawn_site.Site, bound: dict[str, str]) -> str | None:
    """What ``call`` makes, when it holds a lock: ``multiprocessing.Lock()``, and a
    context's ``ctx.SimpleQueue()`` (Lightning's launchers: ``get_context(method).SimpleQueue()``)."""
    if (name := spawn_site.resolved(call.func, bound)) in _LOCK_HOLDERS:
        return _LOCK_HOLDERS[name]
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in _MP_LOCKED and _is_context(func.value, site, bound):
        return f"a multiprocessing context's {func.attr}, {_LOCKED}"
    return None


def _is_context(node: ast.expr, site: spawn_site.Site, bound: dict[str, str]) -> bool:
    """``multiprocessing.get_context(...)``, or a name bound only to such calls."""
    if isinstance(node, ast.Call):
        return spawn_site.resolved(node.func, bound) in _CONTEXTS
    if not isinstance(node, ast.Name) or (scope := site.binding_scope(node.id)) is None:
        return False
    values = spawn_site.bindings(scope)[node.id]
    return bool(values) and all(
        isinstance(v, ast.Call) and spawn_site.resolved(v.func, bound) in _CONTEXTS for v in values
    )


# A class that says what of its instance pickle takes (it may leave its locks out).
_PICKLED_BY_ITSELF = frozenset({"__reduce__", "__reduce_ex__", "__getstate__"})


def _method_of_a_lock_holder(method: str, site: spawn_site.Site, bound: dict[str, str]) -> str | None:
    """``self.runner`` given to the spawn from a method of a class whose instances hold a
    lock (``self.lock = mp.Lock()`` in a method): pickling a bound method pickles its
    instance (hivemind's TPUManager). None when the class says how it pickles."""
    function = site.scopes[0]
    cls = next(
        (node for node in spawn_site.walk(site.scopes[-1]) if isinstance(node, ast.ClassDef) and function in node.body),
        None,
    )
    if cls is None or any(isinstance(item, ast.FunctionDef) and item.name in _PICKLED_BY_ITSELF for item in cls.body):
        return None
    if not any(isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == method for item in cls.body):
        return None  # an attribute (self.config): what it holds, this file does not tell
    for node in spawn_site.walk(cls):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and (what := _lock_holder(node.value, site, bound))
        ):
            for target in node.targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                ):
                    return (
                        f"`self.{method}`, a method: pickle takes its instance along, whose `self.{target.attr}` "
                        f"is {what}"
                    )
    return None
