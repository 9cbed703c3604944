"""Exact import-alias resolution, cheaper than libcst's qualified-name providers.

Every scope (module, function, lambda, class) records what each of its names is bound
to: the dotted name an import gives it (``import torch_xla.core.xla_model as xm`` binds
``xm`` to ``torch_xla.core.xla_model``), or ``UNKNOWN`` for any other binding
(assignment, parameter, ``def``, loop target ...). A name resolves only when the
innermost scope that binds it binds it to exactly one dotted name, so ``from xmanager
import xm`` in one function and torch_xla's ``xm`` in another are told apart, and a
parameter called ``xm`` is never mistaken for the module. ``x = None`` (or ``x, y = None,
None``) is not counted as a binding: it is the fallback of ``try: import ... except
ImportError: x = None``; nor is any stand-in a ``try``'s handler gives a name its body
imports from torch_xla (``xm = SimpleNamespace(...)``: manual-import-stand-in reports it).

Scopes follow Python's rules: a name bound anywhere in a function is local to it for
the whole body, and class bodies are not visible from the methods inside them.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import weakref
from dataclasses import dataclass, field

import libcst as cst

from xrt2pjrt.file_caches import per_file
from xrt2pjrt.rewriters import TODO

UNKNOWN = "<unknown>"


@functools.cache
def subclass(node_type: type, kind: type | tuple[type, ...]) -> bool:
    """``issubclass``, remembered: libcst's abstract node classes make ``isinstance`` slow,
    and a pass asks it for every node."""
    return issubclass(node_type, kind)


STATEMENT = (cst.SimpleStatementLine, cst.BaseCompoundStatement)


class Marks:
    """Nodes marked by identity, each with a value.

    Holds the nodes it marks: a node that is garbage-collected while still marked by its
    bare ``id()`` would pass its id on to a new node, which would then be taken for it.
    """

    def __init__(self):
        self._entries: dict[int, tuple[cst.CSTNode, object]] = {}

    def add(self, node: cst.CSTNode, value: object = True) -> None:
        self._entries[id(node)] = (node, value)

    def get(self, node: cst.CSTNode, default=None):
        entry = self._entries.get(id(node))
        return entry[1] if entry is not None and entry[0] is node else default

    def __contains__(self, node: cst.CSTNode) -> bool:
        return self.get(node, _ABSENT) is not _ABSENT

    def __bool__(self) -> bool:
        return bool(self._entries)


_ABSENT = object()


def dotted(node: cst.BaseExpression) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None. (Types compared, not ``isinstance``:
    see subclass; the engine asks at every name.)"""
    parts = []
    while type(node) is cst.Attribute:
        parts.append(node.attr.value)
        node = node.value
    if type(node) is not cst.Name:
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


@dataclass(eq=False)
class Binding:
    _scope: weakref.ref  # (weak: the scope holds its bindings, see codemod._no_cyclic_gc)
    origins: set[str] = field(default_factory=set)
    # The statement line of each import that bound the name: where new imports that
    # replace it are placed.
    statements: list[cst.SimpleStatementLine] = field(default_factory=list)

    @property
    def scope(self) -> Scope:
        return self._scope()

    @property
    def target(self) -> str | None:
        if len(self.origins) == 1:
            (origin,) = self.origins
            return None if origin == UNKNOWN else origin
        return None


@dataclass(eq=False)
class Scope:
    node: cst.CSTNode
    parent: Scope | None
    is_class: bool = False
    path: tuple[str, ...] = ()  # names of the enclosing functions and classes
    names: dict[str, Binding] = field(default_factory=dict)
    _targets: dict[str, list[str]] | None = field(default=None, repr=False)

    def lookup(self, name: str) -> Binding | None:
        scope: Scope | None = self
        skip_classes = False
        while scope is not None:
            if not (scope.is_class and skip_classes) and name in scope.names:
                return scope.names[name]
            # Methods do not see their class's names.
            skip_classes = skip_classes or not scope.is_class
            scope = scope.parent
        return None

    def resolve(self, node: cst.BaseExpression) -> tuple[str | None, Binding | None]:
        """The dotted name ``node`` refers to (imports followed), and the binding of its head."""
        path = dotted(node)
        if path is None:
            return None, None
        head, _, rest = path.partition(".")
        binding = self.lookup(head)
        if binding is None or binding.target is None:
            return None, binding
        return (f"{binding.target}.{rest}" if rest else binding.target), binding

    def names_for(self, module: str) -> str | None:
        """A name visible here that is bound to exactly ``module``."""
        scope: Scope | None = self
        while scope is not None:
            for name in scope._bound_to().get(module, ()):
                if self.lookup(name) is scope.names[name]:
                    return name
            scope = scope.parent
        return None

    def _bound_to(self) -> dict[str, list[str]]:
        """Dotted name -> the names bound to it, in binding order. Built once, when the scope's
        names are all collected: asked for each new import, a walk over every name of a module
        made a file of many names and many rewrites quadratic."""
        if self._targets is None:
            self._targets = {}
            for name, binding in self.names.items():
                if binding.target is not None:
                    self._targets.setdefault(binding.target, []).append(name)
        return self._targets


def import_bindings(node: cst.Import | cst.ImportFrom) -> list[tuple[str, str, cst.ImportAlias | None]]:
    """(local name, dotted name it is bound to, alias node) for each name an import binds."""
    out = []
    if isinstance(node, cst.Import):
        for alias in node.names:
            full = dotted(alias.name)
            if alias.asname is not None:
                out.append((alias.asname.name.value, full, alias))
            else:
                # ``import a.b.c`` binds ``a`` to the package ``a``.
                top = full.split(".")[0]
                out.append((top, top, alias))
        return out
    if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
        return out
    module = dotted(node.module)
    for alias in node.names:
        name = alias.name.value
        local = alias.asname.name.value if alias.asname is not None else name
        out.append((local, f"{module}.{name}", alias))
    return out


# What holds statements (an ``except``'s or a ``case``'s block is no statement of its own).
_HOLDS_STATEMENTS = (ast.stmt, ast.excepthandler, ast.match_case)


@per_file()  # (the fold asks, then the rules: spawn_site.imported)
def import_names(tree: ast.Module) -> dict[str, set[str]]:
    """Every local name an import in the file (``ast``) binds -> the dotted names it binds it
    to, whatever the scope: what the folding of quiet statements and the rules that read a
    file before its pass ask (``x`` of ``from .utils import x`` -> ``.utils.x``). Not to be
    changed."""
    out, pending = {}, list(tree.body)
    while pending:  # statements only, where imports are: a tenth of the nodes
        node = pending.pop()
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                out.setdefault(alias.asname or top, set()).add(alias.name if alias.asname else top)
        elif isinstance(node, ast.ImportFrom):  # (relative ones too: ".utils.xm")
            module = "." * node.level + (node.module or "")
            for alias in node.names:
                if alias.name != "*":
                    out.setdefault(alias.asname or alias.name, set()).add(f"{module}.{alias.name}")
        else:
            pending += [child for child in ast.iter_child_nodes(node) if isinstance(child, _HOLDS_STATEMENTS)]
    return out


class _Collector:
    """Records the names one scope binds, without entering nested scopes.

    Walks statements only: bindings are made by statements (imports, assignments, loop
    and ``with`` targets, ``except ... as``, ``def``/``class``). An assignment expression
    (``:=``) inside an expression is not seen, which only makes a name look more
    torch_xla than it is where someone reuses an import alias that way.
    """

    def __init__(self, scope: Scope):
        self.scope = scope
        self.stand_ins: frozenset[str] = frozenset()  # torch_xla names the handler being walked stands in for

    def bind(self, name: str, origin: str = UNKNOWN) -> Binding:
        binding = self.scope.names.get(name) or self.scope.names.setdefault(name, Binding(weakref.ref(self.scope)))
        binding.origins.add(origin)
        return binding

    def bind_target(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.bind(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self.bind_target(element.value)
        elif isinstance(target, cst.StarredElement):
            self.bind_target(target.value)

    def block(self, block) -> None:
        if isinstance(block, cst.SimpleStatementSuite):
            self.small_statements(block.body, None)
        elif block is not None:
            self.statements(block.body)

    def statements(self, statements) -> None:
        for statement in statements:
            if isinstance(statement, cst.SimpleStatementLine):
                self.small_statements(statement.body, statement)
            elif isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                self.bind(statement.name.value)  # its body is a scope of its own
            else:
                self.compound(statement)

    def compound(self, statement) -> None:
        if isinstance(statement, cst.For):
            self.bind_target(statement.target)
        elif isinstance(statement, cst.With):
            for item in statement.items:
                if item.asname is not None:
                    self.bind_target(item.asname.name)
        self.block(getattr(statement, "body", None))
        outer, self.stand_ins = self.stand_ins, self.stand_ins | torch_xla_imports(statement)
        for handler in getattr(statement, "handlers", ()):
            if handler.name is not None:
                self.bind_target(handler.name.name)
            self.block(handler.body)
        self.stand_ins = outer
        for case in getattr(statement, "cases", ()):
            self.block(case.body)
        orelse = getattr(statement, "orelse", None)
        if isinstance(orelse, cst.If):
            self.compound(orelse)
        elif orelse is not None:
            self.block(orelse.body)
        final = getattr(statement, "finalbody", None)
        if final is not None:
            self.block(final.body)

    def small_statements(self, smalls, line: cst.SimpleStatementLine | None) -> None:
        for small in smalls:
            if isinstance(small, (cst.Import, cst.ImportFrom)):
                for local, origin, _ in import_bindings(small):
                    binding = self.bind(local, origin)
                    if line is not None:
                        binding.statements.append(line)
            elif isinstance(small, cst.Assign):
                if only_none(small.value) or all(
                    isinstance(target.target, cst.Name) and target.target.value in self.stand_ins
                    for target in small.targets
                ):
                    continue  # an ImportError fallback does not change what the name is
                for target in small.targets:
                    self.bind_target(target.target)
            elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
                self.bind_target(small.target)


def torch_xla_imports(statement: cst.CSTNode) -> frozenset[str]:
    """The names a ``try`` statement's own body imports from torch_xla ({} for another statement)."""
    if not isinstance(statement, cst.Try) or not isinstance(statement.body, cst.IndentedBlock):
        return frozenset()
    return frozenset(
        local
        for line in statement.body.body
        if isinstance(line, cst.SimpleStatementLine)
        for small in line.body
        if isinstance(small, (cst.Import, cst.ImportFrom))
        for local, origin, _ in import_bindings(small)
        if origin.split(".")[0] == "torch_xla"
    )


def only_none(value: cst.BaseExpression) -> bool:
    """``None``, and the ways fallbacks set several names to it: ``None, None``,
    ``[None] * 4`` (PyTorch Lightning 1.3's ``xm, xmp, MpDeviceLoader, rendezvous = [None] * 4``)."""
    if isinstance(value, cst.Name):
        return value.value == "None"
    if isinstance(value, (cst.Tuple, cst.List)):
        return bool(value.elements) and all(only_none(element.value) for element in value.elements)
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Multiply):
        return any(
            only_none(side) and isinstance(other, cst.Integer)
            for side, other in ((value.left, value.right), (value.right, value.left))
        )
    return False


def collect(node: cst.CSTNode, parent: Scope | None) -> Scope:
    """The scope ``node`` opens, with every name it binds."""
    path = (*parent.path, _label(node)) if parent is not None else ()
    scope = Scope(node, parent, is_class=isinstance(node, cst.ClassDef), path=path)
    collector = _Collector(scope)
    if isinstance(node, (cst.FunctionDef, cst.Lambda)):
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            collector.bind(param.name.value)
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                collector.bind(star.name.value)
    if isinstance(node, cst.Module):
        collector.statements(node.body)
    elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        collector.block(node.body)
    return scope


_SCOPE_NODES = (cst.Module, cst.FunctionDef, cst.ClassDef, cst.Lambda)


def _label(node: cst.CSTNode) -> str:
    if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        return node.name.value
    return "<lambda>" if isinstance(node, cst.Lambda) else ""


class NameUses:
    """How often each binding is read: (path of the scope that binds it, name) -> count.

    ``tables`` maps the path of each scope (``("Trainer", "train")`` for a method) to
    whether it is a class and the names it binds, as the engine's pass over the original
    tree found them: the rewritten tree is counted without collecting its scopes again,
    and its counts compare with the original's key for key.

    ``count`` walks the tree's fields itself: libcst's visit builds every node anew even for
    a visitor, which cost as much as the rules' pass on a file dense with rewrites. The
    names of a def, its decorators and defaults count in its own scope, as libcst's order
    of visit had them; the ``.attr`` of an attribute and the keyword of an argument are no
    reads; whitespace and operators hold no names.
    """

    def __init__(self, tables: dict[tuple[str, ...], tuple[bool, frozenset[str]]]):
        self.tables = tables
        self.counts: dict[tuple[tuple[str, ...], str], int] = {}

    def key(self, name: str, path: tuple[str, ...]) -> tuple[tuple[str, ...], str]:
        innermost = True
        while True:
            is_class, names = self.tables.get(path, (False, frozenset()))
            if name in names and (innermost or not is_class):
                return path, name
            if not path:
                return (), name
            path, innermost = path[:-1], False

    def count(self, tree: cst.CSTNode) -> "NameUses":
        pending: list[tuple[cst.CSTNode, tuple[str, ...]]] = [(tree, ())]
        while pending:
            node, path = pending.pop()
            kind = type(node)
            if kind is cst.Name:
                key = self.key(node.value, path)
                self.counts[key] = self.counts.get(key, 0) + 1
                continue
            if kind is cst.Attribute or kind is cst.Arg:
                pending.append((node.value, path))  # not the ``.attr`` name, not the keyword
                continue
            if kind is cst.Import or kind is cst.ImportFrom:
                continue
            if kind is not cst.Module and subclass(kind, _SCOPE_NODES):
                path = (*path, _label(node))
            for name in _node_fields(type(node)):
                value = getattr(node, name)
                for child in value if isinstance(value, (list, tuple)) else (value,):
                    if may_hold_names(type(child)):
                        pending.append((child, path))
        return self


@functools.cache
def _node_fields(node_type: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(node_type))


@functools.cache
def may_hold_names(field_type: type) -> bool:
    """Whether a value of this type (a node's field, a node) is a libcst node that may hold a
    name: not whitespace, a comment or an operator, nor a string or None (by type: see
    subclass)."""
    return issubclass(field_type, cst.CSTNode) and field_type.__module__ not in (
        "libcst._nodes.whitespace",
        "libcst._nodes.op",
    )


class Transformer(cst.CSTTransformer):
    """A transformer without ``visit_<Node>_<field>`` hooks: libcst's default looks one up
    by name for each field of each node visited (a tenth of a pass over a dense file)."""

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        pass

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        pass


class FinishImports(Transformer):
    """The import edits a rewrite leaves: new imports in, stale ones out.

    ``additions`` marks statement lines with the import lines that go beside them;
    ``top`` are the import lines for the top of the file, after the leading imports. ``stale`` names
    lose their import aliases when the alias binds one of ``modules``. ``comments`` marks
    import lines with the comment lines to put above them (unless there already, or in
    the module's ``header`` above the first one).
    """

    def __init__(
        self,
        stale: set[str],
        modules: tuple[str, ...],
        keep: frozenset[str],
        additions: Marks,
        top: list[str],
        comments: Marks | None = None,
        header=(),
    ):
        self.comments = comments or Marks()
        self.header = header
        self.stale = stale
        self.modules = modules
        self.keep = keep
        self.additions = additions
        self.top = top
        self.doomed = Marks()
        self.path: list[str] = []
        # a statement line of this pass's output -> the import lines planned beside it
        self.renamed = Marks()
        self.reaching = Marks()  # the compound statements with an import or a marked line in them

    def _rebuild(self, updated):
        kept = [
            alias
            for local, origin, alias in import_bindings(updated)
            if not (
                (tuple(self.path), local) in self.stale
                and origin.startswith(self.modules)
                and dotted(alias.name) not in self.keep
            )
        ]
        if len(kept) == len(updated.names):
            return updated
        if not kept:
            return cst.RemoveFromParent()
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        changes = {"names": kept}
        if isinstance(updated, cst.ImportFrom) and len(kept) == 1:
            changes.update(lpar=None, rpar=None)
        return updated.with_changes(**changes)

    def on_visit(self, node):
        if subclass(type(node), cst.BaseExpression):
            return False  # only statements and imports change here (and no import is in a lambda)
        if isinstance(node, cst.Module):
            self.reaching = Marks()
            self._reaches(node)
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            self.path.append(_label(node))
        if isinstance(node, cst.BaseCompoundStatement) and node not in self.reaching:
            return False  # no import and no marked line in it: nothing to do there
        return super().on_visit(node)

    def _reaches(self, node: cst.CSTNode) -> bool:
        """Whether an import or a marked line is in ``node`` (or is it); each compound
        statement that holds one is marked in ``reaching``."""
        found = isinstance(node, (cst.Import, cst.ImportFrom)) or node in self.comments or node in self.additions
        for name in _node_fields(type(node)):
            value = getattr(node, name)
            for child in value if isinstance(value, (list, tuple)) else (value,):
                if (
                    may_hold_names(type(child))
                    and not subclass(type(child), cst.BaseExpression)
                    and self._reaches(child)
                ):
                    found = True
        if found and isinstance(node, cst.BaseCompoundStatement):
            self.reaching.add(node)
        return found

    def on_leave(self, original, updated):
        if isinstance(original, (cst.FunctionDef, cst.ClassDef)):
            self.path.pop()
        return super().on_leave(original, updated)

    def leave_Import(self, original, updated):
        return self._rebuild(updated)

    def leave_ImportFrom(self, original, updated):
        if isinstance(updated.names, cst.ImportStar) or updated.relative:
            return updated
        return self._rebuild(updated)

    def leave_SimpleStatementLine(self, original, updated):
        if original in self.comments:
            present = {line.comment.value for line in [*updated.leading_lines, *self.header] if line.comment}
            new = [cst.EmptyLine(comment=cst.Comment(c)) for c in self.comments.get(original) if c not in present]
            updated = updated.with_changes(leading_lines=[*updated.leading_lines, *new])
        if not updated.body:
            updated = updated.with_changes(body=[cst.Pass()])  # a placeholder until its block drops it
            self.doomed.add(updated)
        if original in self.additions:
            self.renamed.add(updated, self.additions.get(original))
        return updated

    def leave_IndentedBlock(self, original, updated):
        return keep_block_valid(updated.with_changes(body=self._place(updated.body)), self.doomed)

    def leave_Module(self, original, updated):
        body = list(updated.body)
        top = self.top
        if top:
            last = None
            for index, statement in enumerate(body):
                if is_import_line(statement) or (index == 0 and _is_docstring(statement)):
                    last = index
                elif isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                    break
            if last is None or not is_import_line(body[last]):
                at = 0 if last is None else last + 1
                body[at:at] = [cst.parse_statement(text + "\n") for text in sorted(set(top))]
            else:
                body = self._insert(body, last, top)
        return keep_block_valid(updated, self.doomed, self._place(body))

    def _place(self, body) -> list:
        """``body`` with the planned imports placed among the imports next to their anchors."""
        body, done = list(body), []
        while True:
            hit = next(
                (
                    (index, self.renamed.get(s))
                    for index, s in enumerate(body)
                    if s in self.renamed and not any(self.renamed.get(s) is d for d in done)
                ),
                None,
            )
            if hit is None:
                return body
            index, lines = hit
            done.append(lines)
            body = self._insert(body, index, lines)

    def _moved(self, statement, **changes):
        """``statement.with_changes(...)``, keeping what this pass knows about it."""
        new = statement.with_changes(**changes)
        if statement in self.doomed:
            self.doomed.add(new)
        if statement in self.renamed:
            self.renamed.add(new, self.renamed.get(statement))
        return new

    def _insert(self, body: list, index: int, texts: list[str]) -> list:
        # The paragraph of import lines around the anchor: sorted (as isort sorts, or by module
        # alone), the new lines join in that order; else they follow it.
        def importish(statement):
            return is_import_line(statement) or statement in self.doomed

        start = index
        while start > 0 and not body[start].leading_lines and importish(body[start - 1]):
            start -= 1
        end = index
        while end + 1 < len(body) and not body[end + 1].leading_lines and importish(body[end + 1]):
            end += 1
        run = body[start : end + 1]
        new = [cst.parse_statement(text + "\n") for text in sorted(set(texts))]
        replaced = body[index]
        if replaced in self.doomed and replaced.trailing_whitespace.comment is not None:
            # The import line they replace had a comment (# noqa, # pylint: ...): it goes on with them.
            new[0] = new[0].with_changes(trailing_whitespace=replaced.trailing_whitespace)
        kept = [statement for statement in run if statement not in self.doomed]
        key = next((key for key in (_isort_key, _sort_key) if [key(s) for s in kept] == sorted(map(key, kept))), None)
        if key is None:
            return [*body[: end + 1], *new, *body[end + 1 :]]
        # The paragraph's blank lines and comments go to its new first line; the TODO lines
        # that mark the old first one stay with it, wherever the sort puts it.
        lead = [line for line in run[0].leading_lines if not _is_todo(line)]
        run[0] = self._moved(run[0], leading_lines=[line for line in run[0].leading_lines if _is_todo(line)])
        merged = sorted(run + new, key=key)
        merged[0] = self._moved(merged[0], leading_lines=[*lead, *merged[0].leading_lines])
        return [*body[:start], *merged, *body[end + 1 :]]


def _is_todo(line: cst.EmptyLine) -> bool:
    return line.comment is not None and line.comment.value.startswith(TODO)


def _isort_key(statement: cst.SimpleStatementLine) -> tuple[bool, str]:
    """isort's order (its default profile): every ``import x`` of a block before its ``from x import``."""
    return isinstance(statement.body[0], cst.ImportFrom), _sort_key(statement)


def _sort_key(statement: cst.SimpleStatementLine) -> str:
    """By module alone (isort's force_sort_within_sections, Google's style)."""
    first = statement.body[0]
    if isinstance(first, cst.Import):
        return dotted(first.names[0].name).lower()
    if isinstance(first, cst.ImportFrom) and first.module is not None:
        return dotted(first.module).lower()
    return ""


def is_import_line(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in statement.body
    )


def _is_docstring(statement: cst.CSTNode) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def without_statements(body, doomed: Marks, tail: list | None = None) -> list:
    """``body`` without the statements marked in ``doomed``.

    The blank lines and comments above a removed statement move to the next one, so the
    layout around it stays as it was; those of removed statements with none after them are
    added to ``tail``.
    """
    kept, carried, dropped = [], [], False
    for statement in body:
        if statement in doomed:
            carried += list(statement.leading_lines)
            dropped = True
            continue
        if dropped:
            dropped = False
            own = list(statement.leading_lines)
            if not kept:
                # Now first in its block: it starts where the removed lines started.
                own = [line for line in own if line.comment is not None]
            elif any(line.comment is None for line in own):  # it has its own blank lines
                carried = [line for line in carried if line.comment is not None]
            statement = statement.with_changes(leading_lines=_once(carried, own))
            carried = []
        kept.append(statement)
    if tail is not None and any(line.comment is not None for line in carried):
        tail += _once(carried, [])
    return kept


def _once(carried: list, own: list) -> list:
    """``carried`` then ``own``, a TODO line of removed statements kept once (two settings
    a launcher made, each with the same item)."""
    seen = {line.comment.value for line in own if _is_todo(line)}
    lines = []
    for line in carried:
        if _is_todo(line):
            if line.comment.value in seen:
                continue
            seen.add(line.comment.value)
        lines.append(line)
    return [*lines, *own]


def keep_block_valid(block: cst.IndentedBlock | cst.Module, doomed: Marks | None = None, body=None):
    """``block`` (or the module) with ``body`` (default: its own) less the statements in
    ``doomed``. The comments above removed statements at its end (a TODO among them) go to its
    footer, or onto the ``pass`` an emptied block gets."""
    body, tail = block.body if body is None else body, []
    body = without_statements(body, doomed, tail) if doomed else body
    if not body and isinstance(block, cst.IndentedBlock):
        body = [cst.SimpleStatementLine([cst.Pass()], leading_lines=[line for line in tail if line.comment])]
    elif tail:
        block = block.with_changes(footer=[*tail, *block.footer])
    return block.with_changes(body=body) if body is not block.body else block
