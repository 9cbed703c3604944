"""The Python rewriter: one libcst pass running every selected Python rule.

Implements the contract in xrt2pjrt/rewriters.py. The pass keeps a stack of scopes
(rules/imports.py) so each Name/Attribute chain resolves to the dotted name its imports
give it, and dispatches:

- calls and other references, by the resolved name, to rules that list that name;
- any node, by its type, to rules that list the type in ``nodes``.

Rules edit through a ``Context``: ``ref`` gives an expression for a new API and plans
the import it needs (placed right after the import that bound the name being replaced,
or at the top of the file), ``change``/``manual`` report, ``manual`` also leaves a
``# TODO(xrt2pjrt): ...`` comment above the statement (once), and ``remove_statement``
drops the statement being visited. After the pass, imports whose names are no longer
used because of a rewrite are removed.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from xrt2pjrt.registry import RULES, Options
from xrt2pjrt.report import Finding
from xrt2pjrt.rewriters import Outcome, SourceError
from xrt2pjrt.rules import imports
from xrt2pjrt.rules.base import PythonRule

# Importing the rule modules registers their rules.
from xrt2pjrt.rules import (  # noqa: F401, E402  isort: skip
    distributed, environment, manual, pjrt_module, runtime_api, shim_target, spawn,
)

# A file that matches none of these cannot hold anything a Python rule acts on.
TRIGGER = re.compile(r"torch_xla|XRT_|\bxenv\b|xla_dist")

# Modules whose imports may be dropped once a rewrite leaves them unused.
REWRITTEN_MODULES = ("torch_xla", "xrt2pjrt.shim")
# ... except these, imported for what importing them does.
SIDE_EFFECT_MODULES = frozenset({"torch_xla.distributed.xla_backend"})

TODO = "# TODO(xrt2pjrt): "


@dataclass
class _Statement:
    node: cst.CSTNode
    comments: list[str] = field(default_factory=list)
    remove: bool = False


class Context:
    """What a rule sees and may do while the engine visits one node."""

    def __init__(self, engine: _Engine, options: Options):
        self._engine = engine
        self.options = options
        self.rule_id = ""
        self.line = 0
        self.anchor: imports.Binding | None = None
        self.original: cst.CSTNode | None = None  # the node being visited, as parsed

    @property
    def target_version(self) -> tuple[int, int]:
        return self.options.target_version

    def resolve(self, node: cst.BaseExpression) -> str | None:
        return self._engine.scope.resolve(node)[0]

    def change(self, message: str) -> None:
        self._engine.changes.append(Finding(self.rule_id, self.line, message))

    def manual(self, message: str, comment: bool = True) -> None:
        finding = Finding(self.rule_id, self.line, message)
        if finding in self._engine.manual:
            return  # one item per spot, however many arguments led to it
        self._engine.manual.append(finding)
        if comment and self._engine.statements:
            self._engine.statements[-1].comments.append(f"{TODO}{message} [{self.rule_id}]")

    def is_whole_statement(self, original: cst.CSTNode | None = None) -> bool:
        """True when ``original`` (default: the node being visited) is the one small
        statement, or its expression, of its line."""
        original = original if original is not None else self.original
        frames = self._engine.statements
        if not frames or not isinstance(frames[-1].node, cst.SimpleStatementLine):
            return False
        body = frames[-1].node.body
        if len(body) != 1:
            return False
        small = body[0]
        return small is original or (isinstance(small, cst.Expr) and small.value is original)

    @property
    def at_module_level(self) -> bool:
        """True outside every function and class: code that runs on import."""
        return isinstance(self._engine.scope.node, cst.Module)

    def is_store(self, original: cst.CSTNode | None = None) -> bool:
        """True when ``original`` (default: the node being visited) is assigned to or deleted."""
        return id(original if original is not None else self.original) in self._engine.stores

    def remove_statement(self) -> None:
        self._engine.statements[-1].remove = True

    @property
    def block(self) -> dict:
        """Scratch space shared by rules within the current block of statements."""
        return self._engine.blocks[-1]

    def ref(self, module: str, attr: str | None = None, alias: str | None = None) -> cst.BaseExpression:
        """An expression for ``module.attr`` (or the module), importing ``module`` if needed."""
        name = self._engine.name_for(module, alias, self.anchor)
        expr: cst.BaseExpression = cst.Name(name)
        if alias is None:  # ``import a.b`` binds ``a``: spell the whole path
            for part in module.split(".")[1:]:
                expr = cst.Attribute(expr, cst.Name(part))
        if attr:
            for part in attr.split("."):
                expr = cst.Attribute(expr, cst.Name(part))
        return expr

    def require(self, module: str) -> None:
        """Make sure ``import module`` runs (for its side effects)."""
        self._engine.taken()
        if module not in self._engine.imported:
            self._engine.name_for(module, None, self.anchor, exact=True)


class _Engine(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, options: Options, rules: list[PythonRule]):
        super().__init__()
        self.ctx = Context(self, options)
        self.by_name: dict[str, list[PythonRule]] = {}
        self.by_prefix: list[tuple[str, PythonRule]] = []
        self.by_type: dict[type, list[PythonRule]] = {}
        for rule in rules:
            for name in rule.names:
                self.by_name.setdefault(name, []).append(rule)
            self.by_prefix += [(prefix, rule) for prefix in rule.prefixes]
            for node_type in rule.nodes:
                self.by_type.setdefault(node_type, []).append(rule)
        self.changes: list[Finding] = []
        self.manual: list[Finding] = []
        self.scope: imports.Scope | None = None
        self.statements: list[_Statement] = []
        self.blocks: list[dict] = []  # per block of statements: Context.block
        self.not_references: set[int] = set()  # ids of Names/Attributes that are no expression of their own
        self.stores: set[int] = set()  # ids of assignment and ``del`` targets
        self.doomed = imports.Marks()  # (new) statements to drop from their block
        self.module: cst.Module | None = None
        self._taken: set[str] | None = None
        # (id of the anchor statement line or None for the top of the file) -> import lines
        self.additions: dict[int | None, list[tuple[str, str | None]]] = {}
        self.planned: dict[tuple[imports.Scope | None, str], str] = {}  # (scope, module) -> name
        self.anchors: dict[int, cst.CSTNode] = {}  # id of an original import line -> its new node
        self.imported: set[str] = set()  # every module an ``import a.b`` statement names

    # --- imports -------------------------------------------------------------------
    def taken(self) -> set[str]:
        if self._taken is None:
            names: set[str] = set()

            imported = self.imported

            class AllNames(cst.CSTVisitor):
                def visit_Name(self, node):
                    names.add(node.value)

                def visit_Import(self, node):
                    imported.update(imports.dotted(alias.name) for alias in node.names)

            self.module.visit(AllNames())
            self._taken = names
        return self._taken

    def name_for(self, module: str, alias: str | None, anchor: imports.Binding | None, exact=False) -> str:
        local = alias or module.split(".")[0]
        existing = None if exact else self.scope.names_for(module if alias else local)
        if existing is not None and (alias or existing == local):
            return existing
        # Place it after the import that bound the replaced name, when that import is
        # visible from here; else at the top of the file. One import per scope.
        anchor_line, anchor_scope = None, None
        if anchor is not None and anchor.statements and self._encloses(anchor.scope):
            # Original nodes live as long as the rewrite, so their ids stay theirs; a
            # Scope may not, hence the object itself as the key.
            anchor_line, anchor_scope = id(anchor.statements[0]), anchor.scope
        for key in ((anchor_scope, module), (None, module)):
            if key in self.planned:
                return self.planned[key]
        if alias is not None and alias in self.taken():
            base, n = alias, 2
            alias = f"{base}_{module.rsplit('.', 1)[-1]}"
            while alias in self.taken():
                alias, n = f"{base}{n}", n + 1
        text = f"import {module} as {alias}" if alias else f"import {module}"
        name = alias or local
        # (import line, the name that must be used for it to stay; None: imported for its effect)
        self.additions.setdefault(anchor_line, []).append((text, None if exact else name))
        self.planned[(anchor_scope, module)] = name
        return name

    def _encloses(self, scope: imports.Scope) -> bool:
        current = self.scope
        while current is not None:
            if current is scope:
                return True
            current = current.parent
        return False

    # --- traversal -----------------------------------------------------------------
    def _line(self, node: cst.CSTNode) -> int:
        try:
            return self.get_metadata(PositionProvider, node).start.line
        except KeyError:
            return 0

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.Module, cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            self.scope = imports.collect(node, self.scope)
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            self.statements.append(_Statement(node))
        if isinstance(node, (cst.Module, cst.IndentedBlock)):
            self.blocks.append({})
        if isinstance(node, cst.Module):
            self.module = node
        elif isinstance(node, cst.Attribute):
            self.not_references.add(id(node.attr))
        elif isinstance(node, cst.Call):
            self.not_references.add(id(node.func))
        elif isinstance(node, cst.Arg) and node.keyword is not None:
            self.not_references.add(id(node.keyword))
        elif isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.Del)):
            self.stores.add(id(node.target))
        elif isinstance(node, (cst.Import, cst.ImportFrom)):
            return False  # imports are handled whole; the names inside are no references
        return True

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):
        updated = self._dispatch(original, updated)
        if isinstance(original, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            updated = self._finish_statement(self.statements.pop(), original, updated)
        if isinstance(original, cst.IndentedBlock):
            self.blocks.pop()
            updated = imports.keep_block_valid(updated, self.doomed)
        if isinstance(original, cst.Module):
            self.blocks.pop()
            updated = updated.with_changes(body=imports.without_statements(updated.body, self.doomed))
        if isinstance(original, (cst.Module, cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            self.scope = self.scope.parent
        return updated

    def _dispatch(self, original: cst.CSTNode, updated: cst.CSTNode):
        updated = self._dispatch_type(original, updated)
        is_call = isinstance(original, cst.Call)
        if is_call or (isinstance(original, (cst.Name, cst.Attribute)) and id(original) not in self.not_references):
            target = original.func if is_call else original
            name, binding = self.scope.resolve(target)
            if name is not None:
                rules = self.by_name.get(name, []) + [r for p, r in self.by_prefix if name.startswith(p)]
                if rules:
                    updated = self._run(rules, original, updated, name, binding)
        return updated

    def _dispatch_type(self, original, updated):
        rules = self.by_type.get(type(original))
        if not rules:
            return updated
        self.ctx.line, self.ctx.anchor, self.ctx.original = self._line(original), None, original
        for rule in rules:
            if not isinstance(updated, type(original)):
                break
            self.ctx.rule_id = rule.id
            updated = rule.leave(self.ctx, original, updated)
        return updated

    def _run(self, rules, original, updated, name, binding):
        self.ctx.line, self.ctx.anchor, self.ctx.original = self._line(original), binding, original
        for rule in rules:
            self.ctx.rule_id = rule.id
            if isinstance(original, cst.Call):
                if not isinstance(updated, cst.Call):
                    break
                updated = rule.call(self.ctx, updated, name)
            else:
                updated = rule.reference(self.ctx, updated, name)
        return updated

    def _finish_statement(self, frame: _Statement, original, updated):
        if frame.remove:
            self.doomed.add(updated)  # the enclosing block drops it, keeping the layout
            return updated
        if frame.comments and hasattr(updated, "leading_lines"):
            # Comments above the first statement of a file belong to the module's header.
            above = [*updated.leading_lines, *(self.module.header if self.module else ())]
            present = {line.comment.value for line in above if line.comment}
            new = [c for c in dict.fromkeys(frame.comments) if c not in present]
            if new:
                lines = [cst.EmptyLine(comment=cst.Comment(c)) for c in new]
                updated = updated.with_changes(leading_lines=[*updated.leading_lines, *lines])
        if isinstance(original, cst.SimpleStatementLine) and any(
            isinstance(small, (cst.Import, cst.ImportFrom)) for small in original.body
        ):
            self.anchors[id(original)] = updated  # new imports may go after it, see rewrite()
        return updated


def _selected(options: Options) -> list[PythonRule]:
    return [
        cls()
        for rule_id, cls in sorted(RULES.items())
        if cls.kind == "python" and options.on(rule_id) and options.target in cls.targets
    ]


def rewrite(text: str, options: Options) -> Outcome:
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        # Python's own parser names the line and the problem the way users know them.
        try:
            ast.parse(text)
        except SyntaxError as error:
            raise SourceError(error.msg, error.lineno or 1) from None
        raise SourceError(exc.message, exc.raw_line) from None
    rules = _selected(options)
    if not rules:
        return Outcome(text)
    engine = _Engine(options, rules)
    new = MetadataWrapper(module, unsafe_skip_copy=True).visit(engine)
    if engine.changes or engine.additions:
        # Imports whose every use went away with a rewrite are stale; planned imports
        # whose use a later rewrite removed again are not needed.
        before, after = imports.name_uses(module), imports.name_uses(new)
        stale = {key for key in before if not after.get(key)}
        used = {name for (_, name), count in after.items() if count}
        additions, top = imports.Marks(), []
        for key, lines in engine.additions.items():
            needed = [text for text, name in lines if name is None or name in used]
            if key is None:
                top = needed
            elif needed:
                additions.add(engine.anchors[key], needed)
        if stale or additions or top:
            new = new.visit(imports.FinishImports(stale, REWRITTEN_MODULES, SIDE_EFFECT_MODULES, additions, top))
    return Outcome(new.code, engine.changes, engine.manual)


def check(text: str) -> str | None:
    try:
        ast.parse(text)
    except SyntaxError as exc:
        return f"line {exc.lineno}: {exc.msg}"
    return None
