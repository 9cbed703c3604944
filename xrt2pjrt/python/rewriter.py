"""The Python rewriter: one libcst pass running every selected Python rule.

Implements the contract in xrt2pjrt/rewriters.py. Before libcst parses a file, the
statements no rule can act on are folded into placeholders (python/quiet.py), which get
their text back after the pass. The pass keeps a stack of scopes
(python/imports.py) so each Name/Attribute chain resolves to the dotted name its imports
give it, and dispatches:

- calls and other references, by the resolved name, to rules that list that name;
- any node, by its type, to rules that list the type in ``nodes``.

Rules edit through a ``Context`` (python/context.py): ``ref`` gives an expression for a new API and plans
the import it needs (placed right after the import that bound the name being replaced,
or at the top of the file), ``change``/``decide`` report, ``decide`` also leaves a
``# TODO(xrt2pjrt): ...`` comment above the statement (once), and ``remove_statement``
drops the statement being visited. After the pass, imports whose names are no longer
used because of a rewrite are removed.
"""

from __future__ import annotations

import ast
import bisect
import functools
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from xrt2pjrt import width
from xrt2pjrt.file_caches import per_file
from xrt2pjrt.registry import Options, all_rules, selected
from xrt2pjrt.report import Cite, Finding
from xrt2pjrt.rewriters import Outcome, SourceError, TooDeep, same_todo, todo_comment, trigger_for
from xrt2pjrt.python import imports, layout, nesting, quiet, spawn_site
from xrt2pjrt.python.rule import PythonRule
from xrt2pjrt.shim_packages import CARRIED, INSTALLED
from xrt2pjrt.python.context import Context
from xrt2pjrt.suppress import Suppressions


# Modules whose imports may be dropped once a rewrite leaves them unused.
REWRITTEN_MODULES = ("torch_xla", INSTALLED, CARRIED)
# ... except these, imported for what importing them does.
SIDE_EFFECT_MODULES = frozenset({"torch_xla.distributed.xla_backend"})

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class _Statement:
    node: cst.CSTNode
    index: int  # of its first statement in _Lines.starts
    comments: list[str] = field(default_factory=list)
    remove: bool = False
    changed: bool = False  # a rule rewrote something in it


# What the engine does with a node, by its type (one cached lookup instead of isinstance
# chains, many of them against libcst's abstract classes, for every node of the tree).
(_SCOPE, _STATEMENT, _SMALL_STATEMENTS, _BLOCK, _NAME, _ATTRIBUTE, _CALL, _ARG, _STORE, _IMPORT) = (
    1 << i for i in range(10)
)
_DISPATCHED = _NAME | _ATTRIBUTE | _CALL


@functools.cache
def _roles(node_type: type) -> int:
    roles = 0
    for role, types in (
        (_SCOPE, (cst.Module, cst.FunctionDef, cst.Lambda, cst.ClassDef)),
        (_STATEMENT, imports.STATEMENT),
        (_SMALL_STATEMENTS, (cst.SimpleStatementLine, cst.SimpleStatementSuite)),
        (_BLOCK, (cst.Module, cst.IndentedBlock)),
        (_NAME, cst.Name),
        (_ATTRIBUTE, cst.Attribute),
        (_CALL, cst.Call),
        (_ARG, cst.Arg),
        (_STORE, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.Del)),
        (_IMPORT, (cst.Import, cst.ImportFrom)),
    ):
        if issubclass(node_type, types):
            roles |= role
    return roles


@functools.cache
def _looked_for() -> tuple[tuple[str, ...], tuple[str, ...], frozenset[str]]:
    """What the Python rules look for in a statement, all of them whatever is selected (a use
    of an import a rewrite may drop must be seen): their words, the dotted names they act on
    (and the modules whose imports the engine may drop), and the names they take as aliases."""
    rules = [cls for cls in all_rules().values() if issubclass(cls, PythonRule)]
    words = tuple(dict.fromkeys(word for cls in rules for word in (*cls.words, *cls.statement_words)))
    targets = tuple(
        dict.fromkeys(
            (*REWRITTEN_MODULES, "xrt2pjrt", *(name for cls in rules for name in (*cls.names, *cls.prefixes)))
        )
    )
    return words, targets, frozenset(alias for cls in rules for alias in cls.aliases)


def _relevant(bound: dict[str, set[str]]) -> tuple[tuple[str, ...], list[str]]:
    """What a statement must hold for a rule to act on it (python/quiet.py): a word of the
    rules, or, as a whole identifier, a name an import of torch_xla (or of a rule's own
    name, like ``from torch.distributed import init_process_group as ipg``) binds."""
    words, targets, conventional = _looked_for()
    aliases = sorted(
        local
        for local, fulls in bound.items()
        if any(full.startswith(targets) for full in fulls) or local in conventional
    )
    return words, aliases


def _node_lines(node: cst.CSTNode, positions) -> tuple[int, int]:
    """The first and last line of ``node`` by libcst's ``positions``: a compound statement's
    (an ``if``, a ``def``) are its first line, not its whole block."""
    position = positions[node]
    last = position.start if isinstance(node, cst.BaseCompoundStatement) else position.end
    return position.start.line, last.line


class _Lines:
    """Lines of original nodes without libcst's PositionProvider, which regenerates the
    whole module's code to find them (a sixth of the rewriter's time on real files).

    Statements are met in the same order in the libcst and the ``ast`` trees (``elif`` is
    an ``if`` in the ``else`` of both), ``a; b`` and the body of ``if x: a`` being one
    libcst node for several ``ast`` ones; ``ast`` gives where each begins. A node's line is
    then its statement's line plus the lines between the two in that statement's code,
    taken back to the file as read by ``original_line`` (the parsed text has its quiet
    statements folded)."""

    def __init__(self, tree: ast.Module, original_line):
        # (the rules' walk of the file when nothing is folded: spawn_site keeps it)
        spans = sorted((n.lineno, n.col_offset, n.end_lineno) for n in spawn_site.walk(tree) if isinstance(n, ast.stmt))
        self.starts = [(line, column) for line, column, _ in spans]
        self._ends = [end for _, _, end in spans]
        self.original_line = original_line
        self._positions: dict[int, object] = {}  # id of a statement -> positions in its code

    def lines_of(self, node: cst.CSTNode, statement: _Statement) -> tuple[int, int]:
        """The first and last line of ``node`` (see _node_lines), in ``statement``."""
        first = self.starts[statement.index][0]
        if isinstance(statement.node, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            # A line of small statements that ast finds on one line: every node in it is on
            # that line, with no positions to compute (which cost a millisecond a finding).
            covered = range(statement.index, min(statement.index + len(statement.node.body), len(self.starts)))
            if all(self.starts[k][0] == first and self._ends[k] == first for k in covered):
                return self.original_line(first), self.original_line(first)
        key = id(statement.node)
        if key not in self._positions:
            alone = cst.Module(body=[statement.node])
            self._positions[key] = MetadataWrapper(alone, unsafe_skip_copy=True).resolve(PositionProvider)
        positions = self._positions[key]
        start, end = _node_lines(node, positions)
        above = first - positions[statement.node].start.line
        return self.original_line(start + above), self.original_line(end + above)


class _Engine(imports.Transformer):
    def __init__(
        self,
        text: str,
        module: cst.Module,
        options: Options,
        rules: list[PythonRule],
        lines: _Lines | None,
        tree: ast.Module | None,
    ):
        super().__init__()
        self.text = text  # as read, quiet statements included
        self.tree = tree  # ``text``'s ast; None when ast cannot read it
        self.module = module
        self._positions = None  # libcst's, only where ``ast`` cannot parse: see lines_of
        self.lines = lines  # None when ``ast`` cannot parse
        self.next_statement = 0
        self.ctx = Context(self, options)
        self.suppressions = Suppressions(text, lambda: _simple_statements(tree))
        self.by_name: dict[str, list[PythonRule]] = {}
        self.by_prefix: list[tuple[str, PythonRule]] = []
        self.last: list[tuple[str, PythonRule]] = []  # (prefix, rule) of the rules that run last
        self.by_type: dict[type, list[PythonRule]] = {}
        for rule in rules:
            for name in rule.names:
                self.by_name.setdefault(name, []).append(rule)
            (self.last if rule.runs_last else self.by_prefix).extend((prefix, rule) for prefix in rule.prefixes)
            for node_type in rule.nodes:
                self.by_type.setdefault(node_type, []).append(rule)
        self.dispatch_start = 0  # len(manual) when the node being visited was reached
        self.ancestors: list[cst.CSTNode] = []  # the original nodes around the one being visited
        self.changes: list[Finding] = []
        self.manual: list[Finding] = []
        self.fix_notes: list[Finding] = []  # items to decide about a fix (Context.manual's of_fix)
        self.scope: imports.Scope | None = None
        self.statements: list[_Statement] = []
        self.blocks: list[dict] = []  # per block of statements: Context.block
        self.block_nodes: list[cst.CSTNode] = []  # the blocks being visited (Module, IndentedBlock)
        self.not_references: set[int] = set()  # ids of Names/Attributes that are no expression of their own
        self.stores: set[int] = set()  # ids of assignment and ``del`` targets
        self.labels: set[int] = set()  # ids of Names that name no variable (``.attr``, ``key=``)
        # For judging imports after the pass (imports.NameUses): the names each scope
        # binds, by scope path, and how often each binding is read in the original.
        self.tables: dict[tuple[str, ...], tuple[bool, frozenset[str]]] = {}
        self.uses: dict[tuple[tuple[str, ...], str], int] = {}
        self.doomed = imports.Marks()  # (new) statements to drop from their block
        # (scope path, name) of imports to drop if unused after the pass -> (change, manual
        # item, id of the import's statement line)
        self.droppable: dict[tuple[tuple[str, ...], str], tuple[Finding, Finding, int]] = {}
        self._taken: set[str] | None = None
        self._text_lines: list[str] | None = None
        self._quote: str | None = None
        self._piece_lines: list[int] | None = None  # the line of each boundary of pieces (piece_of)
        # (id of the anchor statement line or None for the top of the file) -> import lines
        self.additions: dict[int | None, list[tuple[str, str | None]]] = {}
        # (id of the block of the anchor import line, or None for the top of the file, module) -> name
        self.planned: dict[tuple[int | None, str], str] = {}
        # id of an original import line -> (its statement index, id of its block)
        self.import_lines: dict[int, tuple[int, int]] = {}
        self.anchors: dict[int, cst.CSTNode] = {}  # id of an original import line -> its new node

    # --- imports -------------------------------------------------------------------
    def taken(self) -> set[str]:
        """Every word of the file: a new alias must be none of them (strings and comments
        included, which only makes the choice more careful)."""
        if self._taken is None:
            self._taken = set(_WORD.findall(self.text))
        return self._taken

    def text_lines(self) -> list[str]:
        """The file's lines as read, split once for all the items that quote one."""
        if self._text_lines is None:
            self._text_lines = self.text.splitlines()
        return self._text_lines

    def quote(self) -> str:
        """The quote most of the file's one-line strings are written in (' when none is)."""
        if self._quote is None:
            double, single = (len(re.findall(rf"(?<![\w'\"]){q}(?!{q})", self.text)) for q in ('"', "'"))
            self._quote = '"' if double > single else "'"
        return self._quote

    def new_names(self) -> dict[str, str]:
        """The names the imports planned so far bind -> what they are bound to."""
        return {name: (name if name == module.split(".")[0] else module) for (_, module), name in self.planned.items()}

    def imports_module(self, module: str) -> bool:
        """True when the file has ``import module`` or ``from parent import leaf``."""
        parent, _, leaf = module.rpartition(".")
        pattern = rf"^\s*(import\s+{re.escape(module)}\b|from\s+{re.escape(parent)}\s+import\s[^\n]*\b{leaf}\b)"
        return re.search(pattern, self.text, re.MULTILINE) is not None

    def name_for(self, module: str, alias: str | None, anchor: imports.Binding | None, exact=False) -> str:
        local = alias or module.split(".")[0]
        existing = None if exact else self.scope.names_for(module if alias else local)
        if existing is not None and (alias or existing == local):
            return existing
        # Place it after the import that bound the replaced name, when that import is
        # visible from here; else at the top of the file. One import per block.
        anchor_line = anchor_block = None
        if anchor is not None and anchor.statements and self._encloses(anchor.scope):
            # Original nodes live as long as the rewrite, so their ids stay theirs.
            line = self._nearest_above(anchor.statements)
            anchor_line, anchor_block = id(line), self.import_lines.get(id(line), (0, None))[1]
        # An import planned at the top of the file, or after a module-level import line,
        # binds everywhere: the module's block and None are one for reuse.
        module_block = id(self.block_nodes[0]) if self.block_nodes else None
        for key in ((anchor_block, module), (None, module), (module_block, module)):
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
        self.planned[(anchor_block, module)] = name
        return name

    def _nearest_above(self, statements: list[cst.SimpleStatementLine]) -> cst.SimpleStatementLine:
        """Of the import lines that bind a name, the last one above the statement being
        visited: an import in one ``if`` block binds nothing in the next block when the
        first did not run (fairseq's train_step imports xm in two such blocks)."""
        here = self.statements[-1].index if self.statements else 0
        above = [s for s in statements if self.import_lines.get(id(s), (here + 1, None))[0] <= here]
        return above[-1] if above else statements[0]

    def _encloses(self, scope: imports.Scope) -> bool:
        current = self.scope
        while current is not None:
            if current is scope:
                return True
            current = current.parent
        return False

    # --- traversal -----------------------------------------------------------------
    def piece_of(self, line: int) -> int:
        """The piece of the file (rewrite_together) line ``line`` is in: 0 before the first
        boundary."""
        if self._piece_lines is None:
            self._piece_lines = [self.text.count("\n", 0, m.start()) + 1 for m in _PIECES.finditer(self.text)]
        return bisect.bisect_right(self._piece_lines, line)

    def import_line(self, statement: cst.SimpleStatementLine) -> int | None:
        """The line of an import statement the pass has met; None when not known."""
        if self.lines is None or id(statement) not in self.import_lines:
            return None
        return self.lines.original_line(self.lines.starts[self.import_lines[id(statement)][0]][0])

    def lines_of(self, node: cst.CSTNode) -> tuple[int, int]:
        """The first and last 1-based line of an original node inside the statement being
        visited (see _node_lines); (0, 0) when it has none."""
        if self.lines is not None and self.statements:
            return self.lines.lines_of(node, self.statements[-1])
        if self._positions is None:
            self._positions = MetadataWrapper(self.module, unsafe_skip_copy=True).resolve(PositionProvider)
        return _node_lines(node, self._positions) if node in self._positions else (0, 0)

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.ancestors.append(node)
        roles = _roles(type(node))
        if not roles:
            # Whitespace, comments and operators (six nodes in ten) hold nothing a rule
            # reads: left as they are, libcst neither visits below them nor rebuilds them.
            return imports.may_hold_names(type(node))
        if roles & _SCOPE:
            self.scope = imports.collect(node, self.scope)
            old = self.tables.get(self.scope.path, (False, frozenset()))[1]
            self.tables[self.scope.path] = (self.scope.is_class, old | frozenset(self.scope.names))
        if roles & _STATEMENT:
            self.statements.append(_Statement(node, self.next_statement))
            if roles & _SMALL_STATEMENTS and _roles(type(node.body[0])) & _IMPORT:
                self.import_lines[id(node)] = (self.next_statement, id(self.block_nodes[-1]))
        if roles & _SMALL_STATEMENTS:
            self.next_statement += len(node.body)
        elif roles & _STATEMENT:
            self.next_statement += 1
        if roles & _BLOCK:
            self.blocks.append({})
            self.block_nodes.append(node)
        if roles & _NAME:
            if id(node) not in self.labels:
                binding = self.scope.lookup(node.value)
                key = (binding.scope.path if binding else (), node.value)
                self.uses[key] = self.uses.get(key, 0) + 1
        elif roles & _ATTRIBUTE:
            self.not_references.add(id(node.attr))
            self.labels.add(id(node.attr))
        elif roles & _CALL:
            self.not_references.add(id(node.func))
        elif roles & _ARG:
            if node.keyword is not None:
                self.not_references.add(id(node.keyword))
                self.labels.add(id(node.keyword))
        elif roles & _STORE:
            self.stores.update(_stored(node.target))
        elif roles & _IMPORT:
            return False  # imports are handled whole; the names inside are no references
        return True

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):
        self.ancestors.pop()
        roles = _roles(type(original))
        if roles & _DISPATCHED or type(original) in self.by_type:
            updated = self._dispatch(original, updated)
        if not roles:
            return updated
        if roles & _STATEMENT:
            updated = self._finish_statement(self.statements.pop(), original, updated)
        if roles & _BLOCK:
            self.blocks.pop()
            self.block_nodes.pop()
            updated = imports.keep_block_valid(updated, self.doomed)
        if roles & _SCOPE:
            self.scope = self.scope.parent
        return updated

    def _dispatch(self, original: cst.CSTNode, updated: cst.CSTNode):
        self.dispatch_start = len(self.manual)
        updated = self._dispatch_type(original, updated)
        is_call = type(original) is cst.Call
        if is_call or (type(original) in (cst.Name, cst.Attribute) and id(original) not in self.not_references):
            target = original.func if is_call else original
            name, binding = self.scope.resolve(target)
            if name is not None:
                rules = (
                    self.by_name.get(name, [])
                    + [r for p, r in self.by_prefix if name.startswith(p)]
                    + [r for p, r in self.last if name.startswith(p)]
                )
                if rules:
                    updated = self._run(rules, original, updated, name, binding)
        return updated

    def _dispatch_type(self, original, updated):
        rules = self.by_type.get(type(original))
        if not rules:
            return updated
        self.ctx.anchor, self.ctx.original = None, original
        for rule in rules:
            if not isinstance(updated, type(original)):
                break
            if self._suppressed(rule, original):
                continue
            self.ctx.rule_id = rule.id
            updated = self._gated(rule, updated, lambda node: rule.leave(self.ctx, original, node))
        return updated

    def _run(self, rules, original, updated, name, binding):
        self.ctx.anchor, self.ctx.original = binding, original
        for rule in rules:
            if self._suppressed(rule, original):
                continue
            self.ctx.rule_id = rule.id
            if isinstance(original, cst.Call):
                if not isinstance(updated, cst.Call):
                    break
                updated = self._gated(rule, updated, lambda node: rule.call(self.ctx, node, name))
            else:
                updated = self._gated(rule, updated, lambda node: rule.reference(self.ctx, node, name))
        return updated

    def _gated(self, rule: PythonRule, updated: cst.CSTNode, hook: Callable[[cst.CSTNode], cst.CSTNode]):
        """``hook(updated)``, a hook of ``rule``: the node it returns, unless the fix-safety
        gate withholds the rule's fixes and it made a change. Then ``updated`` stays, the
        changes are reported as pending, and what the hook did besides returning a node is
        undone: a statement it removed stays, an import it required for its effect is not
        added (one it planned by name goes unused, and is dropped after the pass), nor is one
        it would drop once unused, and the items to decide about the fix go with it (the
        others stand: they are no fix)."""
        if not rule.gated(self.ctx.options):
            return hook(updated)
        frame = self.statements[-1] if self.statements else None
        before = (
            len(self.changes),
            frame and (frame.remove, frame.changed),
            set(self.planned),
            set(self.droppable),
            {key: len(lines) for key, lines in self.additions.items()},
            len(self.fix_notes),
        )
        new = hook(updated)
        changes, flags, planned, droppable, additions, notes = before
        if len(self.changes) == changes:
            return new
        self.changes[changes:] = [replace(f, fix=replace(f.fix, applied=False)) for f in self.changes[changes:]]
        for note in self.fix_notes[notes:]:
            self.manual.remove(note)
            if frame:
                frame.comments.remove(self.todo(note.message, note.rule))
        del self.fix_notes[notes:]
        if frame:
            frame.remove, frame.changed = flags
        for key, lines in self.additions.items():
            required = {text for text, name in lines[additions.get(key, 0) :] if name is None}
            lines[additions.get(key, 0) :] = [line for line in lines[additions.get(key, 0) :] if line[1] is not None]
            for planned_key in set(self.planned) - planned:
                if f"import {planned_key[1]}" in required:
                    del self.planned[planned_key]
        for key in set(self.droppable) - droppable:
            del self.droppable[key]
        return updated

    def settled(self, line: int) -> bool:
        """A suppression marker covers ``line``: the user decided what is there."""
        return bool(self.suppressions) and self.suppressions.settles(line)

    def _suppressed(self, rule: PythonRule, original: cst.CSTNode) -> bool:
        """An ``# xrt2pjrt: ignore`` marker keeps ``rule`` off this node (suppress.py)."""
        return bool(self.suppressions) and self.suppressions.covers(rule.id, self.lines_of(original)[0])

    def indent(self) -> str:
        """The indentation of the statement being visited."""
        step = self.module.default_indent
        return "".join(
            b.indent if b.indent is not None else step for b in self.block_nodes if isinstance(b, cst.IndentedBlock)
        )

    def todo(self, message: str, rule: str) -> str:
        """The TODO comment of an item to decide, for above the statement being visited:
        it fits the file's width at that statement's indentation."""
        return todo_comment(message, rule, self.ctx.options.width or width.DEFAULT, self.indent())

    def _finish_statement(self, frame: _Statement, original, updated):
        if frame.remove:
            if frame.comments:  # its items' TODO lines move to the next statement with its comments
                todos = [cst.EmptyLine(comment=cst.Comment(c)) for c in dict.fromkeys(frame.comments)]
                updated = updated.with_changes(leading_lines=[*updated.leading_lines, *todos])
            self.doomed.add(updated)  # the enclosing block drops it, keeping the layout
            return updated
        limit = self.ctx.options.line_length
        if limit and frame.changed and isinstance(updated, cst.SimpleStatementLine):
            updated = layout.split(updated, original, self.indent(), self.module.default_indent, limit, self.module)
        if frame.comments and hasattr(updated, "leading_lines"):
            # Comments above the first statement of a file belong to the module's header.
            above = [*updated.leading_lines, *self.module.header]
            present = [line.comment.value for line in above if line.comment]
            new = [c for c in dict.fromkeys(frame.comments) if not any(same_todo(c, p) for p in present)]
            if new:
                lines = [cst.EmptyLine(comment=cst.Comment(c)) for c in new]
                updated = updated.with_changes(leading_lines=[*updated.leading_lines, *lines])
        if isinstance(original, cst.SimpleStatementLine) and any(
            isinstance(small, (cst.Import, cst.ImportFrom)) for small in original.body
        ):
            self.anchors[id(original)] = updated  # new imports may go after it, see rewrite()
        return updated


def _simple_statements(tree: ast.Module | None):
    """(first, last) line of each statement that holds no others: a marker on any of its
    lines covers it whole (a compound statement's marker covers its own line only)."""
    if tree is None:
        return ()
    return [
        (n.lineno, n.end_lineno or n.lineno)
        for n in ast.walk(tree)
        if isinstance(n, ast.stmt) and not hasattr(n, "body")
    ]


def _selected(options: Options) -> list[PythonRule]:
    return [cls() for cls in selected(options, "python")]


def rewrite(text: str, options: Options, fold: bool = True) -> Outcome:
    """Run the selected rules over ``text``. The quiet statements are folded away before
    libcst parses it (python/quiet.py); ``fold=False`` parses all of it, which gives the
    same outcome more slowly (the tests hold folding to that)."""
    try:
        tree = tree_of(text)
    except SyntaxError as exc:
        deep = nesting.too_deep(text, exc)  # libcst would crash on it, or take minutes
        if deep:
            raise TooDeep(nesting.TOO_DEEP, deep[0]) from None
        tree = None  # libcst may still read it; if not, Python's message is the one to show
    except ValueError:
        tree = None
    rules = _selected(options)
    if tree is None or not rules or not fold:
        return _rewrite(text, _parse(text), options, rules, tree and _Lines(tree, _same_line), tree)
    bound = imports.import_names(tree)
    folded = quiet.fold(text, tree, *_relevant(bound), set(bound))
    # (nothing folded, as in a file dense with XRT calls: the tree of the text is that of the folded text)
    lines = _Lines(tree if folded.text == text else tree_of(folded.text), folded.original_line)
    outcome = _rewrite(text, _parse(folded.text), options, rules, lines, tree)
    if outcome.text is not text:
        unfolded = folded.unfold(outcome.text)
        if unfolded is None:  # a placeholder moved: an engine bug, so take the plain road
            return rewrite(text, options, fold=False)
        outcome.text = unfolded
    return outcome


def _same_line(line: int) -> int:
    return line


# A comment line between two pieces of one program, in the module they are joined into.
_PIECE = "# xrt2pjrt-piece-{}\n"
_PIECES = re.compile(r"^# xrt2pjrt-piece-(\d+)\n", re.M)


def rewrite_together(
    pieces: list[str],
    options: Options,
    where: Callable[[int, int, int], tuple[int, int | None]] = lambda own, k, line: (line, None),
) -> list[Outcome] | None:
    """Pieces of one program (a notebook's cells, a document's code blocks) rewritten as the
    one module they make, so that a name one piece imports is followed in the others. Each
    outcome holds its piece's text and findings, lines counted from the piece's first; a
    line a finding cites is (line, cell) as ``where(the finding's piece, the line's piece,
    line in it)`` says (report.Cite).
    None when the pieces cannot be told apart again (one holds a line like a boundary, or
    the rewrite moved one) or libcst cannot read them: rewrite each on its own then."""
    unended = [bool(piece) and not piece.endswith("\n") for piece in pieces]
    ended = [piece + "\n" if add else piece for piece, add in zip(pieces, unended)]
    module = "".join(_PIECE.format(k) + piece if k else piece for k, piece in enumerate(ended))
    if _pieces_of(module, len(pieces)) is None:
        return None
    if not trigger_for("python").search(module):
        return [Outcome(piece) for piece in pieces]
    try:
        outcome = rewrite(module, options)
    except SourceError:  # each piece parses, but libcst may read less than ast
        return None
    texts = _pieces_of(outcome.text, len(pieces))
    if texts is None:
        return None
    starts = list(itertools.accumulate((piece.count("\n") + 1 for piece in ended[:-1]), initial=1))

    def place(line: int) -> tuple[int, int]:  # the piece a line of the module is in, and its line there
        k = bisect.bisect_right(starts, line) - 1
        return k, line - starts[k] + 1

    def cited(k: int, cite: Cite) -> Cite:
        line, cell = where(k, *place(cite.line))
        return replace(cite, line=line, cell=cell)

    def own(findings: list[Finding]) -> list[list[Finding]]:  # each piece's findings, in its lines
        out: list[list[Finding]] = [[] for _ in pieces]
        for f in findings:
            k = place(f.line)[0]
            if k < 0:  # (no line: no piece's)
                continue
            out[k].append(
                replace(f, range=f.range.moved(lambda line: place(line)[1]), cites=tuple(cited(k, c) for c in f.cites))
            )
        return out

    changes, manual = own(outcome.changes), own(outcome.manual)
    return [
        Outcome(text.removesuffix("\n") if add else text, changes[k], manual[k])
        for k, (text, add) in enumerate(zip(texts, unended))
    ]


def _pieces_of(module: str, count: int) -> list[str] | None:
    """The ``count`` pieces of a joined module; None unless its boundaries are the ones it
    was made with, each once and in order."""
    parts = _PIECES.split(module)
    if parts[1::2] != [str(k) for k in range(1, count)] or module.count("xrt2pjrt-piece-") != count - 1:
        return None
    return parts[0::2]


@per_file(4)
def tree_of(text: str) -> ast.Module:
    """``text``'s ast (SyntaxError or ValueError as ``ast.parse``), parsed once however many
    steps of one rewrite ask: an exported notebook's magics, the fold, the rules, the check of
    a piece and of the result. Nothing changes an ast it is handed."""
    return ast.parse(text)


def _parse(text: str) -> cst.Module:
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        # Python's own parser names the line and the problem the way users know them.
        try:
            ast.parse(text)
        except SyntaxError as error:
            raise SourceError(error.msg, error.lineno or 1, error.offset or 1) from None
        raise SourceError(exc.message, exc.raw_line, exc.raw_column + 1) from None


def _rewrite(
    text: str,
    module: cst.Module,
    options: Options,
    rules: list[PythonRule],
    lines: _Lines | None,
    tree: ast.Module | None,
) -> Outcome:
    """One pass of ``rules`` over ``module``; ``text`` is the file as read, ``tree`` its ast."""
    if not rules:
        return Outcome(text)
    engine = _Engine(text, module, options, rules, lines, tree)
    new = module.visit(engine)
    if not (engine.changes or engine.manual or engine.additions or engine.droppable):
        # Nothing to report means nothing changed: skip regenerating the code (about a
        # tenth of the rewriter's time), and the file comes back as it came in.
        return Outcome(text)
    if engine.changes or engine.additions or engine.droppable:
        # Imports whose every use went away with a rewrite are stale; planned imports
        # whose use a later rewrite removed again are not needed.
        before, after = engine.uses, imports.NameUses(engine.tables).count(new).counts
        stale = {key for key in before if not after.get(key)}
        comments = imports.Marks()  # the import lines kept to decide get their TODO line now
        for key, (dropped, kept, statement, todo) in engine.droppable.items():
            if after.get(key):
                if any(f.line == kept.line for f in engine.manual) or engine.settled(kept.line):
                    continue  # a rule of its own reported this import (manual-xla-dist ...), or a marker settles it
                engine.manual.append(kept)
                if statement in engine.anchors:
                    line = engine.anchors[statement]
                    comments.add(line, [*comments.get(line, []), todo])
            else:
                stale.add(key)
                engine.changes.append(dropped)
        used = {name for (_, name), count in after.items() if count}
        additions, top = imports.Marks(), []
        for key, planned in engine.additions.items():
            needed = [line for line, name in planned if name is None or name in used]
            if key is None:
                top = needed
            elif needed:
                additions.add(engine.anchors[key], needed)
        if stale or additions or top or comments:
            new = new.visit(
                imports.FinishImports(
                    stale, REWRITTEN_MODULES, SIDE_EFFECT_MODULES, additions, top, comments, engine.module.header
                )
            )
    return Outcome(new.code, engine.changes, engine.manual)


def check(text: str) -> str | None:
    try:
        tree_of(text)
    except SyntaxError as exc:
        return f"line {exc.lineno or 1}: {exc.msg}"
    except ValueError as exc:  # a NUL character, before Python 3.11.4
        return str(exc)
    return None


def _stored(target: cst.CSTNode) -> list[int]:
    """The ids of what an assignment to ``target`` stores: the target, and each name of a
    tuple or list of targets (``xm, xmp = None, None`` stores both names)."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return [id(target), *(stored for element in target.elements for stored in _stored(element.value))]
    return [id(target)]
