"""What a Python rule sees and may do while the engine (python/rewriter.py) visits one node.

Below both the rules (python/rule.py and every rule module) and the engine: the rules are
written against this class, the engine makes one per pass and keeps the state it reads.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Iterator, Sequence

import libcst as cst

from xrt2pjrt.registry import Options
from xrt2pjrt.report import Cite, Finding, Fix, Range
from xrt2pjrt.python import imports, pjrt_branches


class Context:
    """What a rule sees and may do while the engine visits one node."""

    def __init__(self, engine, options: Options):
        # ``engine``: the pass (python/rewriter.py's _Engine), whose state the methods read.
        # (weak: the engine holds this context, see codemod._no_cyclic_gc)
        self._engine = weakref.proxy(engine)
        self.options = options
        self.rule_id = ""
        self.anchor: imports.Binding | None = None
        self.original: cst.CSTNode | None = None  # the node being visited, as parsed

    @property
    def line(self) -> int:
        """The 1-based line of the node being visited, in the file as it was read."""
        return self._engine.lines_of(self.original)[0]

    def line_of(self, original: cst.CSTNode) -> int:
        """The 1-based line of another original node of the statement being visited (a handler's
        line of the ``try`` being left), in the file as it was read."""
        return self._engine.lines_of(original)[0]

    @property
    def range(self) -> Range:
        """The lines of the node being visited, in the file as it was read (report.Range)."""
        return Range.of_lines(*self._engine.lines_of(self.original))

    @property
    def source(self) -> str:
        """The file's text as it was read."""
        return self._engine.text

    @property
    def tree(self) -> ast.Module | None:
        """The ast of ``source`` (parsed once, by the engine); None when ast cannot read it."""
        return self._engine.tree

    @property
    def target_version(self) -> tuple[int, int]:
        return self.options.target_version

    def string(self, text: str, like: cst.BaseExpression | None = None) -> cst.SimpleString:
        """A new string literal of ``text`` (plain characters): in the quotes of ``like``
        when that is a plain string, else in the quotes most of the file's strings use."""
        if isinstance(like, cst.SimpleString) and like.prefix == "":
            quote = like.quote
        else:
            quote = self._engine.quote()
        return cst.SimpleString(f"{quote}{text}{quote}")

    def resolve(self, node: cst.BaseExpression) -> str | None:
        return self._engine.scope.resolve(node)[0]

    def resolve_written(self, node: cst.BaseExpression) -> str | None:
        """``resolve`` for an expression a rule wrote: the names of the imports the rules
        are adding resolve too."""
        path = imports.dotted(node)
        if path is None:
            return None
        head, _, rest = path.partition(".")
        binding = self._engine.scope.lookup(head)
        target = binding.target if binding is not None else self._engine.new_names().get(head)
        return None if target is None else f"{target}.{rest}" if rest else target

    def change(self, message: str, caveat: str = "") -> None:
        """Report a change made here; ``caveat``: what it does not keep (report.Finding)."""
        self._engine.changes.append(
            Finding(self.rule_id, self.range, message, Fix.of(self.rule_id, applied=True), caveat=caveat)
        )
        if self._engine.statements:
            self._engine.statements[-1].changed = True

    def decide(
        self,
        message: str,
        comment: bool | str = True,
        cites: Sequence[int] = (),
        quoted: int = 0,
        cited_as: str = "",
        of_fix: bool = False,
        detail: str = "",
        use: str = "",
    ) -> None:
        """Report a spot a person must decide, ``message`` saying what to do and ``detail``
        why (the report's long text, report.Finding); also mark it in the code with ``message``,
        or with ``comment`` when that is a text (one that must not change when the file's
        lines move, so that a second pass finds it in place). ``cites``: lines of the file
        the message names (report.Finding), the first ``quoted`` of them with their text.
        ``of_fix``: the item is about the fix the rule makes here, and goes with it when the
        fix-safety gate withholds it. ``use``: the line to put in (report.Finding)."""
        if pjrt_branches.dead_under_pjrt(self):
            return  # (api-using-pjrt removes the branch)
        texts = self._engine.text_lines() if quoted else []
        finding = Finding(
            self.rule_id,
            self.range,
            message,
            Fix.of(self.rule_id, applied=False),
            tuple(Cite(line, text=texts[line - 1] if k < quoted else None) for k, line in enumerate(cites)),
            cited_as,
            detail,
            use=use,
        )
        if finding in self._engine.manual:
            return  # one item per spot, however many arguments led to it
        self._engine.manual.append(finding)
        if of_fix:
            self._engine.fix_notes.append(finding)
        if comment and self._engine.statements:
            text = comment if isinstance(comment, str) else message
            self._engine.statements[-1].comments.append(self._engine.todo(text, self.rule_id))

    @property
    def piece(self) -> int:
        """The piece the node being visited is in, when the file is pieces of one program
        (a notebook's cells, rewriter.rewrite_together); 0 in a file of one piece."""
        return self._engine.piece_of(self.line)

    def in_another_piece(self, binding: imports.Binding | None) -> bool:
        """Whether ``binding``'s imports were all made in other pieces than the node being
        visited (a notebook cell using a name another cell imports)."""
        lines = [self._engine.import_line(s) for s in binding.statements] if binding is not None else []
        return bool(lines) and None not in lines and all(self._engine.piece_of(line) != self.piece for line in lines)

    def parent(self, level: int = 1) -> cst.CSTNode | None:
        """The original node ``level`` steps above the one being visited (1: its parent)."""
        ancestors = self._engine.ancestors
        return ancestors[-level] if level <= len(ancestors) else None

    def ancestors(self) -> Iterator[cst.CSTNode]:
        """The original nodes above the one being visited, its parent first (``parent(1)``, ``parent(2)``, ...)."""
        return reversed(self._engine.ancestors)

    def caught(self, *exceptions: str) -> list[cst.ExceptHandler]:
        """The handlers of the ``try`` statements whose body holds the node being visited that
        catch one of ``exceptions`` (by that name, a tuple holding it, Exception or a bare
        except): where the code has said what it does when the spot raises it."""
        child, found = self.original, []
        for parent in self.ancestors():
            if isinstance(parent, cst.Try) and child is parent.body:
                found += [h for h in parent.handlers if any(_catches(h.type, e) for e in exceptions)]
            child = parent
        return found

    @property
    def reported_here(self) -> bool:
        """True when a rule has reported a manual item on the node being visited, or a
        suppression marker says the user decided it (suppress.py)."""
        return len(self._engine.manual) > self._engine.dispatch_start or self._engine.settled(self.line)

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

    def in_block(self) -> bool:
        """True when the statement being visited sits in a block of statements, where
        others may take its place (an ``elif`` does not: it is its ``if``'s else)."""
        frames = self._engine.statements
        return not (
            len(frames) > 1 and isinstance(frames[-2].node, cst.If) and frames[-2].node.orelse is frames[-1].node
        )

    @property
    def runs_on_import(self) -> bool:
        """True when the node being visited runs as the module is imported: outside every
        function's body (a class body, a function's default values and decorators run then)."""
        ancestors = self._engine.ancestors
        return not any(
            isinstance(node, (cst.FunctionDef, cst.Lambda)) and inner is node.body
            for node, inner in zip(ancestors, [*ancestors[1:], self.original])
        )

    def is_store(self, original: cst.CSTNode | None = None) -> bool:
        """True when ``original`` (default: the node being visited) is assigned to or deleted."""
        return id(original if original is not None else self.original) in self._engine.stores

    def remove_statement(self) -> None:
        self._engine.statements[-1].remove = True

    def drop_import_if_unused(self, name: str, dropped: str, kept: str, kept_detail: str = "") -> None:
        """Once the pass is over, remove the import of ``name`` made here if nothing uses
        it by then, reporting ``dropped`` as a change; else report ``kept`` to decide (and
        ``kept_detail``, why)."""
        key = (self._engine.scope.path, name)
        statement = id(self._engine.statements[-1].node)  # its TODO line goes above it, if kept
        here = self.range
        self._engine.droppable[key] = (
            Finding(self.rule_id, here, dropped, Fix.of(self.rule_id, applied=True)),
            Finding(self.rule_id, here, kept, Fix.of(self.rule_id, applied=False), detail=kept_detail),
            statement,
            self._engine.todo(kept, self.rule_id),
        )

    @property
    def statement(self) -> cst.CSTNode | None:
        """The statement (its original node) the node being visited is in."""
        return self._engine.statements[-1].node if self._engine.statements else None

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
        """Make sure ``import module`` runs (for its side effects): beside an import of
        torch_xla the file has here, which a ``try: ... except ImportError:`` may guard (a file
        that runs without torch_xla too), else after the import of the name at hand."""
        if not self._engine.imports_module(module):
            self._engine.name_for(module, None, self._torch_xla_import() or self.anchor, exact=True)

    def _torch_xla_import(self) -> imports.Binding | None:
        """The binding of a name an import of torch_xla binds, visible here."""
        scope = self._engine.scope
        while scope is not None:
            for binding in scope.names.values():
                if binding.statements and (binding.target or "").startswith("torch_xla"):
                    return binding
            scope = scope.parent
        return None


def _catches(caught: cst.BaseExpression | None, exception: str) -> bool:
    if caught is None:
        return True
    if isinstance(caught, cst.Tuple):
        return any(_catches(element.value, exception) for element in caught.elements)
    name = caught.attr.value if isinstance(caught, cst.Attribute) else getattr(caught, "value", None)
    return name in (exception, "Exception", "BaseException")
