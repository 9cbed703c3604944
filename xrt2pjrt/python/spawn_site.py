"""What the file's ``ast`` says about one ``xmp.spawn`` call: the scopes around it, what
binds a name there, where a name is read.

The spawn rules (rules/spawn.py) ask it what a name given to the spawn is: a function
defined inside another one (which pickle refuses), a module-level constant (a process
count read elsewhere as the world size). libcst's scopes (python/imports.py) follow
imports only; these questions are about every name, and the file's ``ast`` is at hand.
"""

from __future__ import annotations

import ast
import bisect
import weakref
from collections.abc import Iterator
from dataclasses import dataclass

from xrt2pjrt.file_caches import per_file
from xrt2pjrt.python import imports

# A def or a class statement: a scope of its own whose body runs when it is called, not where it stands.
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_SCOPES = (*_FUNCTIONS, ast.ClassDef)


def argument_of(call: ast.Call, name: str, position: int) -> ast.expr | None:
    """The argument of ``call`` bound to parameter ``name`` (by keyword, or by ``position``)."""
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    for index, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            return None  # *args: positions past here are unknown
        if index == position:
            return arg
    return None


@dataclass
class Site:
    call: ast.Call
    scopes: list[ast.AST]  # the functions around the call, innermost first, then the module
    # The statements that run after the call in the innermost scope: of each block around
    # the call, those after the statement that holds it (not another branch of its ``if``).
    after: list[ast.stmt]

    def argument(self, name: str, position: int) -> ast.expr | None:
        """The argument bound to parameter ``name`` (by keyword, or by ``position``)."""
        return argument_of(self.call, name, position)

    def binding_scope(self, name: str) -> ast.AST | None:
        """The scope whose own code binds ``name`` as the call sees it (None: a builtin,
        or a name made by ``*`` imports)."""
        return next((scope for scope in self.scopes if name in bindings(scope)), None)


def find(tree: ast.Module | None, line: int, func: str) -> Site | None:
    """The call of ``func`` (its code, ``xmp.spawn``) that starts on ``line``."""
    if tree is None:
        return None

    def search(node: ast.AST, scopes: list[ast.AST], after: list[ast.stmt]) -> Site | None:
        for value in (value for _, value in ast.iter_fields(node)):
            children = value if isinstance(value, list) else [value]
            for index, child in holding(children, line) if is_block(children) else enumerate(children):
                if not isinstance(child, ast.AST) or (
                    hasattr(child, "end_lineno") and not child.lineno <= line <= child.end_lineno
                ):
                    continue
                if isinstance(child, ast.Call) and child.lineno == line and ast.unparse(child.func) == func:
                    return Site(child, scopes, after)
                if isinstance(child, _FUNCTIONS):
                    found = search(child, [child, *scopes], [])
                else:
                    found = search(
                        child, scopes, [*children[index + 1 :], *after] if isinstance(child, ast.stmt) else after
                    )
                if found:
                    return found
        return None

    return search(tree, [tree], [])


# The nodes below a node, walked once: the rules ask about the same file and the same
# functions at every spot they look at, and a walk each time was quadratic in a file dense
# with such spots. Keyed weakly by the node (each list leaves its key out, so that it does
# not keep the key alive): a tree's lists go with the tree.
_BELOW: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_OWN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# a module -> the parent of each node of its walk (None for the module: it leaves its key out)
_UP: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def walk(node: ast.AST) -> list[ast.AST]:
    """``ast.walk(node)``, in its order (breadth first), as a list. A module's walk notes the
    parent of each node as it goes (:func:`parents`): several rules climb from a node."""
    below = _BELOW.get(node)
    if below is None:
        found = [node]
        up: list[ast.AST] | None = [] if isinstance(node, ast.Module) else None  # (found[1:]'s parents)
        for parent in found:  # (the list grows as it is read: ast.walk's queue, without its generators)
            start = len(found)
            for name in parent._fields:  # (children(parent), inline: a call per node costs a third more)
                value = getattr(parent, name, None)
                if isinstance(value, ast.AST):
                    found.append(value)
                elif isinstance(value, list):
                    found += [item for item in value if isinstance(item, ast.AST)]
            if up is not None:
                up += [parent if parent is not node else None] * (len(found) - start)
        below = _BELOW[node] = found[1:]
        if up is not None:
            _UP[node] = up
    return [node, *below]


@per_file(16)
def of_type(tree: ast.Module, kinds: tuple[type, ...]) -> list[ast.AST]:
    """The file's nodes of these types (exactly: ``ast.Call``, ``ast.FunctionDef``), in its
    walk's order: the file's nodes are sorted by type once, where each rule that looked for its
    calls (or defs, or subscripts) read every node of the file. Not to be changed."""
    below, by_type = _below(tree), _by_type(tree)
    places = sorted(place for kind in kinds for place in by_type.get(kind, ()))  # (one kind's are in order)
    return [below[place] for place in places]


@per_file()
def _by_type(tree: ast.Module) -> dict[type, list[int]]:
    """A type -> the places in the module's walk (without the module) of its nodes."""
    found: dict[type, list[int]] = {}
    for place, node in enumerate(_below(tree)):
        found.setdefault(type(node), []).append(place)
    return found


@per_file()
def parents(tree: ast.Module) -> dict[int, ast.AST]:
    """The id of each node of the file below its module -> the node it is a child of: from the
    file's one walk, where each rule that climbed built a map of its own."""
    found = dict(zip(map(id, _below(tree)), _UP[tree]))
    found.update(dict.fromkeys(map(id, children(tree)), tree))
    return found


def _below(node: ast.AST) -> list[ast.AST]:
    """:func:`walk` without ``node``, not copied."""
    if node not in _BELOW:
        walk(node)
    return _BELOW[node]


def enclosing(tree: ast.Module, node: ast.AST, kinds: tuple[type, ...]) -> tuple[ast.AST | None, ast.AST]:
    """The nearest node of ``kinds`` above ``node`` (None: none up to the module), and the child
    of it that holds ``node`` (which part of it: its body, its decorators, ...)."""
    up = parents(tree)
    child, above = node, up.get(id(node))
    while above is not None and not isinstance(above, kinds):
        child, above = above, up.get(id(above))
    return above, child


def own_of(tree: ast.Module, scope: ast.AST, kind: type) -> list[ast.AST]:
    """The nodes of type ``kind`` (a call, an ``if``, a loop) in ``scope``'s own code, those
    :func:`own_nodes` lists but in the file's walk order: found for every scope at once by
    climbing from each such node to its scope, where the rules that ask of many scopes listed
    each one's nodes anew."""
    return _owned(tree).get((id(scope), kind), [])


_OWNED = (ast.Call, ast.If, ast.For, ast.AsyncFor, ast.While)


@per_file()
def _owned(tree: ast.Module) -> dict[tuple[int, type], list[ast.AST]]:
    """(id of a scope, a type of _OWNED) -> the nodes of the type in its own code: the scope
    is the nearest function, class or lambda above the node (or the module), when the node is
    in its body (a def's decorators and defaults are in no scope's own code)."""
    found: dict[tuple[int, type], list[ast.AST]] = {}
    for node in of_type(tree, _OWNED):
        scope, child = enclosing(tree, node, (*_SCOPES, ast.Module))
        if isinstance(scope, ast.Lambda):
            scope = scope if child is scope.body else None
        elif isinstance(scope, _SCOPES):  # (a def's or class's body: its statements)
            scope = scope if isinstance(child, ast.stmt) else None
        if scope is not None:
            found.setdefault((id(scope), type(node)), []).append(node)
    return found


def children(node: ast.AST) -> list[ast.AST]:
    """``ast.iter_child_nodes(node)``, in its order, as a list: without its two generators
    (a whole file's nodes: 0.54 s against 0.93 s at 1 MB)."""
    found = []
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            found.append(value)
        elif isinstance(value, list):
            found += [item for item in value if isinstance(item, ast.AST)]
    return found


# Calls that show or pass on a value as text: print(n), str(n) in a command line, logging.
_AS_TEXT = frozenset({"str", "repr", "format", "print", "master_print", "debug", "info", "warning", "warn", "error"})


def made_text(read: ast.expr, tree: ast.Module) -> bool:
    """Whether ``read`` is printed, logged or made text (an f-string, ``str(n)``) within its
    statement: its value reaches the program only as text."""
    up = parents(tree)
    node = read
    while (parent := up.get(id(node))) is not None and not isinstance(parent, ast.stmt):
        if isinstance(parent, ast.JoinedStr):
            return True
        if isinstance(parent, ast.Call) and node is not parent.func and called_name(parent.func) in _AS_TEXT:
            return True
        node = parent
    return False


def calls_at(tree: ast.Module, line: int, func: str) -> list[ast.Call]:
    """The calls starting on ``line`` whose callee is written ``func`` (the ``ast`` of a call a
    libcst hook is at), in the order of :func:`of_type`."""
    return [call for call in _calls_by_line(tree).get(line, ()) if ast.unparse(call.func) == func]


@per_file()
def _calls_by_line(tree: ast.Module) -> dict[int, list[ast.Call]]:
    """The file's calls by their first line: a scan of every call at each spot made a file of
    many calls and spots quadratic."""
    by_line: dict[int, list[ast.Call]] = {}
    for call in of_type(tree, (ast.Call,)):
        by_line.setdefault(call.lineno, []).append(call)
    return by_line


def called_name(func: ast.expr) -> str | None:
    """The name a call of ``func`` calls by: ``f`` of ``f(x)`` and of ``obj.f(x)``."""
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def is_block(value) -> bool:
    """Whether a field's value is a block of statements (a body, an ``else``)."""
    return isinstance(value, list) and bool(value) and isinstance(value[0], ast.stmt)


def holding(block: list[ast.stmt], line: int) -> Iterator[tuple[int, ast.stmt]]:
    """The statements of ``block`` whose lines (from the first of their own, decorators not
    counted) hold ``line``, with their index: found by bisection, a block being in the order
    of its lines, where a scan at each spot made a long module quadratic."""
    index = bisect.bisect_left(block, line, key=lambda statement: statement.end_lineno)
    while index < len(block) and block[index].lineno <= line:
        yield index, block[index]
        index += 1


def own_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of ``scope``'s own code: the functions, classes and lambdas it defines are
    listed, not entered."""
    own = _OWN.get(scope)
    if own is None:
        own = _OWN[scope] = list(nodes_of([scope.body] if isinstance(scope, ast.Lambda) else scope.body))
    return own


def nodes_of(roots: list[ast.AST]) -> Iterator[ast.AST]:
    """The nodes of ``roots``, and under them; the functions, classes and lambdas among them
    are yielded, not entered."""
    pending = list(roots)
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, _SCOPES):
            pending += children(node)


def outside_main_block(tree: ast.Module) -> list[ast.stmt]:
    """The module's statements but its ``if __name__ == '__main__':`` blocks: what a spawned
    process runs when it loads the module."""
    return [
        statement
        for statement in tree.body
        if not (isinstance(statement, ast.If) and "__name__" in ast.unparse(statement.test))
    ]


def bindings(scope: ast.AST) -> dict[str, list[ast.AST | None]]:
    """Name -> what binds it in ``scope``'s own code: a def or class statement, the value of
    a plain assignment (``name = value``), None for anything else (a parameter, an import,
    a loop target, ``global``). Found once per scope: not to be changed."""
    found = _BINDINGS.get(scope)
    if found is None:
        found = _BINDINGS[scope] = _bindings(scope)
    return found


_BINDINGS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _bindings(scope: ast.AST) -> dict[str, list[ast.AST | None]]:
    out: dict[str, list[ast.AST | None]] = {}
    if isinstance(scope, _FUNCTIONS):
        arguments = scope.args
        for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg):
            if arg is not None:
                out.setdefault(arg.arg, []).append(None)
    assigned: set[int] = set()  # the Name targets of plain assignments, bound to their value
    for node in own_nodes(scope):
        if isinstance(node, DEFINITIONS):
            out.setdefault(node.name, []).append(node)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out.setdefault(node.targets[0].id, []).append(node.value)
            assigned.add(id(node.targets[0]))
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and id(node) not in assigned:
            out.setdefault(node.id, []).append(None)
        elif isinstance(node, ast.alias):
            out.setdefault(node.asname or node.name.split(".")[0], []).append(None)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                out.setdefault(name, []).append(None)
    return out


def reads(nodes, name: str) -> list[ast.Name]:
    """The reads of ``name`` among ``nodes``."""
    return [node for node in nodes if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)]


def bindings_seen_at(tree: ast.Module | None, line: int, name: str) -> list[ast.AST | None]:
    """What binds ``name`` (as :func:`bindings` says) in the innermost scope around ``line``
    that binds it at all: the functions around the line, then the module; [] for none."""
    if tree is None:
        return []
    scopes = [tree, *around(tree, line)]
    for scope in sorted(scopes, key=lambda scope: -getattr(scope, "lineno", 0)):  # innermost first
        bound = bindings(scope).get(name)
        if bound:
            return bound
    return []


# Asked once per call a rule looks at: a walk of the whole file each time was quadratic in
# a file dense with such calls. The caches are emptied when the file is done (file_caches.py).
@per_file()
def functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every def of the file, nested ones too."""
    return of_type(tree, (ast.FunctionDef, ast.AsyncFunctionDef))


def defs_named(tree: ast.Module, name: str) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The defs of the file named ``name``, in the order of :func:`functions`."""
    return _defs_by_name(tree).get(name, [])


@per_file()
def _defs_by_name(tree: ast.Module) -> dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]]:
    found: dict[str, list] = {}
    for function in functions(tree):
        found.setdefault(function.name, []).append(function)
    return found


def function_at(tree: ast.Module, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The innermost def whose lines hold ``line``; None at module level."""
    return min(around(tree, line), key=lambda f: f.end_lineno - f.lineno, default=None)


def around(tree: ast.Module, line: int) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, ...]:
    """The defs whose lines (from ``def``, its decorators not counted) hold ``line``, in the
    order of :func:`functions`."""
    by_line = _defs_by_line(tree)
    return by_line[line] if 0 <= line < len(by_line) else ()


@per_file()
def _defs_by_line(tree: ast.Module) -> list[tuple]:
    """For each line of the file, the defs around it: a lookup per spot, where a scan of every
    def at each spot made a file of many functions and spots quadratic."""
    defs = functions(tree)
    by_line: list[list] = [[] for _ in range(max((f.end_lineno for f in defs), default=0) + 1)]
    for f in defs:
        for line in range(f.lineno, f.end_lineno + 1):
            by_line[line].append(f)
    return [tuple(found) for found in by_line]


@per_file()
def imported(tree: ast.Module) -> dict[str, str]:
    """The names the file's imports bind, each to the one dotted name it is bound to."""
    return {local: next(iter(fulls)) for local, fulls in imports.import_names(tree).items() if len(fulls) == 1}


def resolved(node: ast.expr, bound: dict[str, str]) -> str | None:
    """The dotted name ``node`` (``np.mean``, ``get_context``) stands for through ``bound``
    (:func:`imported`); None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id in bound:
        return ".".join([bound[node.id], *reversed(parts)])
    return None
