"""What kind of value an expression holds at one line, as far as a local reading of its file
proves it: a tensor, a number, a text, None, a dict or a sequence.

The rules that judge a value handed to torch_xla (what ``mesh_reduce`` pickles, what
``send_cpu_data_to_device`` wraps) report on evidence that a value is of a kind that breaks
on the target, and keep quiet where the text shows none. The reading is local and says only
what it proves: a name counts by every value bound to it before the line in its scope (and
after it in a loop around the line, the next round's value); a parameter by its annotation,
or by being used only as a tensor in its function; anything it cannot follow is not known
(None). :meth:`Reading.shown_as` asks whether some branch is shown to be of a kind.

Kinds, as ``torch.load(weights_only=True)`` and torch_xla's transfers tell them apart: a
container (dict, sequence) counts only when what it holds is known too (``x.state_dict()``
holds tensors and numbers; a list display, its elements).

:meth:`Reading.refused` asks the other way round, for the rules that report only on evidence:
what in the text shows that a value may be of a kind that ``torch.load(weights_only=True)``
refuses (numpy's values, an object of a class), on some branch; None when the text shows none.
"""

from __future__ import annotations

import ast
import re
import dataclasses
import functools
import sys

import libcst as cst

from xrt2pjrt.file_caches import per_file
from xrt2pjrt.python import spawn_site

TENSOR, NUMBER, TEXT, NONE, DICT, SEQUENCE = "tensor", "number", "text", "none", "dict", "sequence"
Kinds = frozenset[str]

# Methods whose result has one kind whatever they are called on (a tensor, or a numpy
# array for item and tolist, which give Python values there too).
_METHOD_KINDS = {
    "item": NUMBER,
    "tolist": SEQUENCE,
    "detach": TENSOR,
    "clone": TENSOR,
    "cpu": TENSOR,
    "to": TENSOR,
    "numel": NUMBER,
    "dim": NUMBER,
    "state_dict": DICT,
}
# Attributes and methods only a tensor has (numpy's arrays have none of them): a parameter
# read through one of them, and otherwise only through what tensors share with arrays, is one.
_TENSOR_ONLY = frozenset(
    {
        "clone",
        "detach",
        "cpu",
        "cuda",
        "numel",
        "dim",
        "requires_grad",
        "grad",
        "is_cuda",
        "element_size",
        "contiguous",
        "unsqueeze",
        "permute",
        "masked_fill",
        "device",
    }
)
_ARRAY_LIKE = frozenset(
    {
        "ndim",
        "shape",
        "dtype",
        "size",
        "item",
        "tolist",
        "mean",
        "sum",
        "float",
        "long",
        "to",
        "view",
        "reshape",
        "max",
        "min",
        "argmax",
        "squeeze",
        "flatten",
        "T",
    }
)
# What a tensor has and a list, a tuple or a dict has not: a value read so is expected to be one.
TENSOR_ATTRIBUTES = _TENSOR_ONLY | _ARRAY_LIKE
# What an annotation's outermost name says a parameter is.
_ANNOTATED = {
    "Tensor": frozenset({TENSOR}),
    **dict.fromkeys(("dict", "Dict", "Mapping", "OrderedDict"), frozenset({DICT})),
    **dict.fromkeys(("list", "List", "tuple", "Tuple", "Sequence"), frozenset({SEQUENCE})),
}
_BUILTIN_KINDS = {"float": NUMBER, "int": NUMBER, "bool": NUMBER, "len": NUMBER, "round": NUMBER, "str": TEXT}
_GENERATORS = ("torch.Generator", "torch.default_generator", "torch.cuda.default_generators")

# Libraries whose values are numpy's, which torch.load(weights_only=True) refuses; and the
# methods that give a numpy array of anything.
_NUMPY_LIBRARIES = ("numpy", "sklearn", "scipy", "pandas")
# sklearn's scalar metrics but those: Python floats from sklearn 1.7 (1.3.2: numpy's float64; 1.6.1:
# accuracy_score a float, roc_auc_score numpy's), the release an environment of torch 2.9 installs.
_FLOAT_METRICS = re.compile(r"sklearn\.metrics\.(?:\w+_(?:score|error|loss)|matthews_corrcoef)")
_NUMPY_METHODS = frozenset({"numpy", "to_numpy"})
# What gives back what torch.load(weights_only=True) loads, whatever it is called on: Python
# values (float(np.mean(x)) is a float), a module's or an optimizer's tensors and numbers.
_LOADED_METHODS = frozenset({"item", "tolist", "state_dict"})
_PYTHON_VALUE_BUILTINS = frozenset({"float", "int", "bool", "len", "round", "str", "repr"})
# Names code gives a value that may be any Python object, as torch.distributed's
# broadcast_object_list and all_gather_object name theirs.
_OBJECT_NAMES = frozenset({"obj", "objs", "object", "objects", "object_list"})
_OBJECT_SUFFIXES = ("_obj", "_objs", "_object", "_objects")


def shown_as_argument(tree: ast.Module | None, line: int, value: cst.BaseExpression, kind: str) -> bool:
    """:meth:`Reading.shown_as` of ``value``, an argument (as libcst reads it) of a call on
    ``line`` of the file ``tree`` is the ast of; False when ast cannot read the file."""
    return tree is not None and Reading(tree, line).shown_as(_as_ast(value), kind)


def refused_argument(tree: ast.Module | None, line: int, value: cst.BaseExpression) -> str | None:
    """:meth:`Reading.refused` of ``value``, an argument of a call on ``line``; None when ast
    cannot read the file."""
    return None if tree is None else Reading(tree, line).refused(_as_ast(value))


def _as_ast(value: cst.BaseExpression) -> ast.expr:
    # in parentheses, as in the call: a line break or a walrus is valid there
    return ast.parse(f"({cst.Module([]).code_for_node(value)})", mode="eval").body


# The loops whose targets _iterated_by reads
_LOOPS = (ast.For, ast.AsyncFor, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


@dataclasses.dataclass(frozen=True)
class Reading:
    """The file's ``tree`` read at ``line``: what binds a name there, what a call resolves to."""

    tree: ast.Module
    line: int

    def kinds(self, value: ast.expr, seen: frozenset[str] = frozenset()) -> Kinds | None:
        """The kinds ``value`` may have on every branch; None when some of them is not known."""
        if isinstance(value, ast.Constant):
            return frozenset(
                {NONE if value.value is None else TEXT if isinstance(value.value, (str, bytes)) else NUMBER}
            )
        if isinstance(value, ast.JoinedStr):
            return frozenset({TEXT})
        if isinstance(value, ast.Compare):
            return frozenset({NUMBER})
        if isinstance(value, (ast.UnaryOp, ast.NamedExpr)):
            return self.kinds(value.operand if isinstance(value, ast.UnaryOp) else value.value, seen)
        if isinstance(value, (ast.IfExp, ast.BoolOp)):
            return self._all(value.values if isinstance(value, ast.BoolOp) else [value.body, value.orelse], seen)
        if isinstance(value, ast.BinOp):
            return self._arithmetic(value, seen)
        if isinstance(value, (ast.List, ast.Tuple, ast.Set)):
            return frozenset({SEQUENCE}) if self._all(value.elts, seen) is not None else None
        if isinstance(value, ast.Dict):
            known = self._all([*value.values, *(k for k in value.keys if k is not None)], seen)
            return frozenset({DICT}) if known is not None and None not in value.keys else None
        if isinstance(value, ast.Subscript):  # x.clone()[None], t[0]: a tensor's parts are tensors
            return frozenset({TENSOR}) if self.kinds(value.value, seen) == {TENSOR} else None
        if isinstance(value, ast.Name):
            return self._name(value.id, seen)
        if isinstance(value, ast.Call):
            return self._call(value, seen)
        return None

    def shown_as(self, value: ast.expr, kind: str, seen: frozenset[str] = frozenset()) -> bool:
        """Whether ``value`` is shown to be of ``kind`` on some branch: a branch of a
        conditional, a value bound to a name, whose kinds are known and hold ``kind``."""
        if isinstance(value, ast.IfExp):
            return self.shown_as(value.body, kind, seen) or self.shown_as(value.orelse, kind, seen)
        if isinstance(value, (ast.BoolOp, ast.NamedExpr)):
            return any(
                self.shown_as(v, kind, seen) for v in (value.values if isinstance(value, ast.BoolOp) else [value.value])
            )
        if isinstance(value, ast.Name) and value.id not in seen:
            return any(
                kind in (self._parameter(bound) or ())
                if isinstance(bound, ast.arg)
                else isinstance(bound, ast.expr) and self.shown_as(bound, kind, seen | {value.id})
                for bound in self.values(value.id)
            )
        kinds = self.kinds(value, seen)
        return kinds is not None and kind in kinds

    def refused(self, value: ast.expr, seen: frozenset[str] = frozenset()) -> str | None:
        """What shows that ``value`` may be, on some branch, of a kind torch.load(weights_only=True)
        refuses: a call into numpy, sklearn, scipy or pandas (their values are numpy's, but
        sklearn's scalar metrics), ``.numpy()``, an object of a class of the project's (defined
        in this file, or imported from a module that is not torch's nor the standard library's), a
        name that says it holds any object (``obj``, ``object_list``), what a function of this file
        returns on every path; said in a few words. None when the text shows none of it."""
        if isinstance(value, (ast.UnaryOp, ast.Starred)):
            return self.refused(value.operand if isinstance(value, ast.UnaryOp) else value.value, seen)
        if isinstance(value, ast.NamedExpr):
            return self.refused(value.value, seen)
        if isinstance(value, ast.BinOp):
            if isinstance(value.op, ast.Mod) and isinstance(value.left, (ast.Constant, ast.JoinedStr)):
                return None  # '%d' % n is a text
            return self._first_refused([value.left, value.right], seen)
        if isinstance(value, ast.IfExp):
            if _handed_on_unless_a_tensor(value):
                return f"`{ast.unparse(value.orelse)}` is handed on as it came when it is no tensor"
            on_xla = _tests_for_xla(value.test)  # x if use_tpu else x.numpy(): the XLA path takes x
            return self._first_refused(
                [value.body, value.orelse] if on_xla is None else [value.body if on_xla else value.orelse], seen
            )
        if isinstance(value, ast.BoolOp):
            return self._first_refused(value.values, seen)
        if isinstance(value, (ast.List, ast.Tuple, ast.Set)):
            return self._first_refused(value.elts, seen)
        if isinstance(value, ast.Dict):
            return self._first_refused(value.values, seen)
        if isinstance(value, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            return self.refused(value.value if isinstance(value, ast.DictComp) else value.elt, seen)
        if isinstance(value, ast.Subscript):  # a numpy array's element is numpy's
            return self._numpy(value.value, seen)
        if isinstance(value, ast.Name):
            return self._refused_name(value.id, seen)
        if isinstance(value, ast.Call):
            return self._refused_call(value, seen)
        if isinstance(value, _Unpacked):
            return self._refused_element(value, seen)
        return None

    def _refused_element(self, unpacked: _Unpacked, seen: frozenset[str]) -> str | None:
        """What shows that the element ``a, b = value`` binds is refused: that element of a
        display, or of what a function of this file returns on every path (``loss, preds =
        evaluate()`` returning ``total / n, np.vstack(preds)``: ``preds`` only)."""
        value, index = unpacked.value, unpacked.index
        if isinstance(value, (ast.Tuple, ast.List)):
            return self.refused(value.elts[index], seen) if len(value.elts) == unpacked.width else None
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)) or value.func.id in seen:
            return None
        bound = [v for v in spawn_site.bindings_seen_at(self.tree, self.line, value.func.id) if v is not None]
        if len(bound) != 1 or not isinstance(bound[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        return self._returned(bound[0], seen | {value.func.id}, unpacked)

    def _first_refused(self, values: list[ast.expr], seen: frozenset[str]) -> str | None:
        return next(filter(None, (self.refused(value, seen) for value in values)), None)

    def _numpy(self, value: ast.expr, seen: frozenset[str]) -> str | None:
        """The evidence that ``value``, whose part or method is taken, is numpy's on every
        branch (not an object's: ``meter.avg`` is a number)."""
        said = self._on_every_branch(value, seen)
        return said if said is not None and "numpy" in said else None

    def _refused_name(self, name: str, seen: frozenset[str]) -> str | None:
        if name in _OBJECT_NAMES or name.endswith(_OBJECT_SUFFIXES):
            return f"`{name}` is named as any object"
        if name in seen:
            return None
        for value in self._on_xla_path(name):
            if isinstance(value, ast.arg):
                said = self._refused_annotation(value.annotation)
            elif isinstance(value, ast.expr):
                said = self.refused(value, seen | {name})
            else:
                said = None
            if said is not None:
                return said
        return next(
            filter(None, (self._refused_contents(container, seen | {name}) for container in self._iterated_by(name))),
            None,
        )

    def _iterated_by(self, name: str) -> list[ast.expr]:
        """The containers whose values a loop or a comprehension around ``line`` binds to
        ``name``: ``X`` of ``for name in X``, of ``for k, name in X.items()``, ``X.values()``."""
        containers = []
        for node in spawn_site.of_type(self.tree, _LOOPS):
            if isinstance(node, (ast.For, ast.AsyncFor)):
                loops = [(node.target, node.iter)] if node.lineno <= self.line <= node.end_lineno else []
            else:
                loops = (
                    [(g.target, g.iter) for g in node.generators] if node.lineno <= self.line <= node.end_lineno else []
                )
            for target, iterated in loops:
                method = (
                    iterated.func.attr
                    if isinstance(iterated, ast.Call) and isinstance(iterated.func, ast.Attribute) and not iterated.args
                    else None
                )
                if method in ("items", "values"):
                    value = target.elts[-1] if method == "items" and isinstance(target, ast.Tuple) else target
                    if isinstance(value, ast.Name) and value.id == name:
                        containers.append(iterated.func.value)
                elif isinstance(target, ast.Name) and target.id == name:
                    containers.append(iterated)
        return containers

    def _refused_contents(self, container: ast.expr, seen: frozenset[str]) -> str | None:
        """What shows that the values ``container`` holds may be refused: those of the
        displays, comprehensions and ``defaultdict(factory)`` it is bound to (a name's
        bindings; an attribute's assignments anywhere in the file, ``self.stats = ...``)."""
        if isinstance(container, ast.Name):
            bound = [value for value in self.values(container.id) if isinstance(value, ast.expr)]
        elif isinstance(container, ast.Attribute):
            bound = [
                node.value
                for node in spawn_site.of_type(self.tree, (ast.Assign,))
                if any(isinstance(target, ast.Attribute) and target.attr == container.attr for target in node.targets)
                and node.lineno != self.line  # self.tally = {k: reduce(v) for k, v in self.tally.items()}
            ]
        else:
            bound = [container]
        for value in bound:
            if isinstance(
                value,
                (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp),
            ):
                said = self.refused(value, seen)
            elif isinstance(value, ast.Call) and (self.called(value) or "").endswith("defaultdict") and value.args:
                said = self._made_by(value.args[0], seen)
            else:
                said = None
            if said is not None:
                return said
        return None

    def _made_by(self, factory: ast.expr, seen: frozenset[str]) -> str | None:
        """What shows that ``factory`` (a lambda, a function or method of this file, by name)
        makes refused values on every path."""
        if isinstance(factory, ast.Lambda):
            return self.refused(factory.body, seen)
        name = (
            factory.attr
            if isinstance(factory, ast.Attribute)
            else factory.id
            if isinstance(factory, ast.Name)
            else None
        )
        if name is None or name in seen:
            return None
        said = [self._returned(f, seen | {name}) for f in spawn_site.defs_named(self.tree, name)]
        return said[0] if said and all(said) else None  # (methods of one name in several classes: all of them)

    def _refused_annotation(self, annotation: ast.expr | None) -> str | None:
        if annotation is None:
            return None
        text = ast.unparse(annotation)
        if self._numpy_library(annotation):
            return f"annotated `{text}`, numpy's"
        return None

    def _refused_call(self, call: ast.Call, seen: frozenset[str]) -> str | None:
        func = call.func
        if isinstance(func, ast.Attribute):
            if func.attr in _LOADED_METHODS:
                return None
            if func.attr in _NUMPY_METHODS:
                return f"`.{func.attr}()` gives a numpy array"
        called = self.called(call)
        if called == "torch_xla.core.xla_model.mesh_reduce":
            return self._reduced(call)
        if called is not None:
            root = called.lstrip(".").split(".")[0]
            if root in _NUMPY_LIBRARIES and not _FLOAT_METRICS.fullmatch(called):
                return f"`{ast.unparse(func)}(...)` gives numpy's values"
            if root != "torch" and not called.startswith(".") and root in sys.stdlib_module_names:
                return None
            owner, _, last = called.rpartition(".")
            # a class, or a class's other constructor (``AutoModel.from_pretrained(...)``)
            made = last[:1].isupper() or (last.startswith("from_") and owner.rpartition(".")[2][:1].isupper())
            if root != "torch" and made:
                return f"`{ast.unparse(func)}(...)` makes an object of a class of yours"
            return None
        if isinstance(func, ast.Attribute):  # rs.get_state() of a np.random.RandomState
            return self._numpy(func.value, seen)
        if not isinstance(func, ast.Name) or func.id in seen:
            return None
        # a def or class of the file, wherever it stands: the call runs after the module's code
        bound = [value for value in spawn_site.bindings_seen_at(self.tree, self.line, func.id) if value is not None]
        if not bound:
            return None
        if all(isinstance(value, ast.ClassDef) for value in bound):
            return f"`{func.id}(...)` makes an object of a class of yours"
        if len(bound) == 1 and isinstance(bound[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
            return self._returned(bound[0], seen | {func.id})
        return None

    def _reduced(self, call: ast.Call) -> str | None:
        """What shows that ``xm.mesh_reduce(tag, data, reduce_fn)`` gives numpy's value: its
        reduce_fn is numpy's (``np.mean`` gives a numpy.float64 of Python floats too)."""
        reducer = spawn_site.argument_of(call, "reduce_fn", 2)
        if reducer is not None and self._numpy_library(reducer):
            return f"`{ast.unparse(call.func)}(..., {ast.unparse(reducer)})` gives numpy's value"
        return None

    def _numpy_library(self, name: ast.expr) -> bool:
        """Whether ``name`` (``np.mean``, ``np.float32``) names a thing of a library of numpy values."""
        resolved = spawn_site.resolved(name, self._imports) if isinstance(name, (ast.Name, ast.Attribute)) else None
        return (resolved or "").split(".")[0] in _NUMPY_LIBRARIES

    def _returned(
        self, function: ast.FunctionDef | ast.AsyncFunctionDef, seen: frozenset[str], unpacked: _Unpacked | None = None
    ) -> str | None:
        """What shows that ``function`` (of this file) returns a refused value on every path:
        a helper that may return a tensor on one path (a TPU branch) and numpy's on another
        shows nothing. With ``unpacked``: that element of what it returns, each return a
        display of its width."""
        returns = [node.value for node in spawn_site.own_nodes(function) if isinstance(node, ast.Return)]
        if unpacked is not None:
            returns = [
                value.elts[unpacked.index]
                if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == unpacked.width
                else None
                for value in returns
            ]
        if not returns or any(value is None for value in returns):
            return None
        inside = Reading(self.tree, function.end_lineno)  # its names as bound at its end
        said = [inside._on_every_branch(value, seen) for value in returns]
        return said[0] if all(said) else None

    def _on_every_branch(self, value: ast.expr, seen: frozenset[str]) -> str | None:
        """:meth:`refused`, of a name only when every value bound to it shows it."""
        if not isinstance(value, ast.Name):
            return self.refused(value, seen)
        if value.id in seen:
            return None
        said = [
            self._refused_annotation(bound.annotation)
            if isinstance(bound, ast.arg)
            else self.refused(bound, seen | {value.id})
            if isinstance(bound, ast.expr)
            else None
            for bound in self._on_xla_path(value.id)
        ]
        return said[0] if said and all(said) else None

    def _all(self, values: list[ast.expr], seen: frozenset[str]) -> Kinds | None:
        out: set[str] = set()
        for value in values:
            kinds = self.kinds(value, seen)
            if kinds is None:
                return None
            out |= kinds
        return frozenset(out)

    def _arithmetic(self, value: ast.BinOp, seen: frozenset[str]) -> Kinds | None:
        """A tensor when a side is one, else a number; a side read from a name or an
        attribute it cannot follow counts as a number (``total.item() / flags.batches``), but
        not both sides, nor a call's result (``np.mean(a) / n`` is numpy's)."""
        if isinstance(value.op, ast.Mod) and isinstance(value.left, (ast.Constant, ast.JoinedStr)):
            return frozenset({TEXT})  # '%d' % n
        sides = [self.kinds(side, seen) for side in (value.left, value.right)]
        if all(kinds is None for kinds in sides) or any(
            kinds is None and not isinstance(side, (ast.Name, ast.Attribute))
            for kinds, side in zip(sides, (value.left, value.right))
        ):
            return None
        known = frozenset().union(*(kinds for kinds in sides if kinds is not None))
        if not known <= {TENSOR, NUMBER}:
            return None  # a text or a container in arithmetic: not followed
        return frozenset({TENSOR}) if TENSOR in known else frozenset({NUMBER})

    def _call(self, call: ast.Call, seen: frozenset[str]) -> Kinds | None:
        func = call.func
        if isinstance(func, ast.Attribute):
            if func.attr in _METHOD_KINDS:
                return frozenset({_METHOD_KINDS[func.attr]})
            if func.attr == "size":  # a tensor's: x.size(0) a number, x.size() a torch.Size (numpy's is no method)
                return frozenset({NUMBER if call.args else SEQUENCE})
            if func.attr == "get_state" and self._is_generator(func.value, seen):
                return frozenset({TENSOR})
        called = self.called(call)
        if called is None:
            kind = _BUILTIN_KINDS.get(func.id) if isinstance(func, ast.Name) else None
            return None if kind is None or self._name_bound(func.id) else frozenset({kind})
        return frozenset({TENSOR}) if called.startswith("torch.") else None

    def _is_generator(self, value: ast.expr, seen: frozenset[str]) -> bool:
        """``torch.Generator()`` or a name bound only to one (numpy's ``get_state`` gives a tuple)."""
        if isinstance(value, ast.Call):
            value = value.func
        elif isinstance(value, ast.Subscript):
            value = value.value
        resolved = spawn_site.resolved(value, self._imports) if isinstance(value, (ast.Name, ast.Attribute)) else None
        if resolved is not None:
            return resolved.startswith(_GENERATORS)
        if isinstance(value, ast.Name) and value.id not in seen:
            bound = self.values(value.id)
            return bool(bound) and all(
                isinstance(v, ast.expr) and self._is_generator(v, seen | {value.id}) for v in bound
            )
        return False

    def _name(self, name: str, seen: frozenset[str]) -> Kinds | None:
        if name in seen:
            return None
        bound = self.values(name)
        if not bound:
            return None
        out: set[str] = set()
        for value in bound:
            kinds = (
                self._parameter(value)
                if isinstance(value, ast.arg)
                else (None if value is None else self.kinds(value, seen | {name}))
            )
            if kinds is None:
                return None
            out |= kinds
        return frozenset(out)

    def _parameter(self, arg: ast.arg) -> Kinds | None:
        """A tensor when annotated as one (a dict or a sequence when annotated as one of
        those: ``Dict[str, torch.Tensor]``), or when its function reads it only as a tensor
        (``x.ndim``, ``x.clone()``: at least once by what only a tensor has)."""
        if arg.annotation is not None:
            annotation = arg.annotation.value if isinstance(arg.annotation, ast.Subscript) else arg.annotation
            return _ANNOTATED.get(ast.unparse(annotation).split(".")[-1])
        function = next(
            (f for f in spawn_site.functions(self.tree) if arg in f.args.args + f.args.kwonlyargs + f.args.posonlyargs),
            None,
        )
        if function is None:
            return None
        # the name itself handed to the call judged tells nothing; what that call reads of it does
        uses = [use for use in _uses(function, arg.arg) if isinstance(use, ast.Attribute) or use.lineno != self.line]
        as_tensor = [use.attr for use in uses if isinstance(use, ast.Attribute)]
        if (
            len(as_tensor) == len(uses)
            and set(as_tensor) <= _TENSOR_ONLY | _ARRAY_LIKE
            and set(as_tensor) & _TENSOR_ONLY
        ):
            return frozenset({TENSOR})
        return None

    def values(self, name: str) -> list[ast.AST | None]:
        """What binds ``name`` before ``line`` (``acc = xm.mesh_reduce('acc', acc, ...)`` is
        after), or after it in a loop around it; a parameter as its ``ast.arg``; None for a
        binding not followed (an import, a loop target, a starred unpacking)."""
        return [value for value, _ in self._reaching(name)]

    def _reaching(self, name: str) -> list[tuple[ast.AST | None, int | None]]:
        """:meth:`values`, each with the line it is bound on (None: a parameter)."""
        scope = self._scope(name)
        if scope is None:
            return []
        bound = _bindings(scope).get(name, [])
        return [
            (value, line)
            for value, line in bound
            if line is None
            or line < self.line
            # x = reduce(x) in a loop: its own value comes round only where nothing binds x anew
            or (line > self.line and any(loop.lineno <= line <= loop.end_lineno for loop in self._loops))
        ]

    def _on_xla_path(self, name: str) -> list[ast.AST | None]:
        """:meth:`values` but those bound in a branch the XLA path does not take (the ``else:``
        of ``if use_tpu:``): torch_xla's calls at ``line`` run on the XLA path."""
        return [
            value
            for value, line in self._reaching(name)
            if line is None
            or not any(start <= line <= end and not start <= self.line <= end for start, end in self._off_xla_blocks)
        ]

    @functools.cached_property
    def _off_xla_blocks(self) -> list[tuple[int, int]]:
        """The lines of the blocks the XLA path does not take: the ``else:`` of ``if use_tpu:``
        (or ``if is_xla():``, ``if device.type == 'xla':``), the body of ``if not use_tpu:``."""
        blocks = []
        for node in spawn_site.of_type(self.tree, (ast.If,)):
            if (on_xla := _tests_for_xla(node.test)) is not None:
                block = node.orelse if on_xla else node.body
                if block:
                    blocks.append((block[0].lineno, block[-1].end_lineno))
        return blocks

    def _name_bound(self, name: str) -> bool:
        return self._scope(name) is not None

    def _scope(self, name: str) -> ast.AST | None:
        """The innermost scope around ``line`` that binds ``name``."""
        scopes = [self.tree, *spawn_site.around(self.tree, self.line)]
        return next(
            (scope for scope in sorted(scopes, key=lambda s: -getattr(s, "lineno", 0)) if name in _bindings(scope)),
            None,
        )

    @functools.cached_property
    def _loops(self) -> list[ast.stmt]:
        """The loops around ``line`` (walked once, whatever the names the expression holds)."""
        return [
            node
            for node in spawn_site.walk(self.tree)
            if isinstance(node, (ast.For, ast.AsyncFor, ast.While)) and node.lineno <= self.line <= node.end_lineno
        ]

    @functools.cached_property
    def _imports(self) -> dict[str, str]:
        return spawn_site.imported(self.tree)

    def called(self, call: ast.Call) -> str | None:
        """The dotted name ``call`` calls, through the file's imports (``np.mean`` -> ``numpy.mean``)."""
        return spawn_site.resolved(call.func, self._imports)


def _handed_on_unless_a_tensor(value: ast.IfExp) -> bool:
    """``v.item() if isinstance(v, torch.Tensor) else v``: a value that is no tensor goes on as
    it came, whatever it is (a metric library's numpy values went so, catalyst 22.04's)."""
    test = value.test
    return (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and test.func.id == "isinstance"
        and len(test.args) == 2
        and "Tensor" in ast.unparse(test.args[1])
        and ast.unparse(value.orelse) == ast.unparse(test.args[0])
    )


# Words in a test that make it a test for the XLA device: ``use_tpu``, ``is_xla()``, ``'xla'``.
_XLA_WORDS = ("tpu", "xla")


def _tests_for_xla(test: ast.expr) -> bool | None:
    """True when ``test`` holds on the XLA path (``use_tpu``, ``is_xla()``, ``device.type ==
    'xla'``), False when it fails there (``not use_tpu``), None when it is no such test."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        on_xla = _tests_for_xla(test.operand)
        return None if on_xla is None else not on_xla
    if isinstance(test, ast.Compare) and not all(isinstance(op, (ast.Eq, ast.Is)) for op in test.ops):
        return None
    words = [
        node.id
        if isinstance(node, ast.Name)
        else node.attr
        if isinstance(node, ast.Attribute)
        else node.value
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        else ""
        for node in ast.walk(test)
    ]
    return True if any(word in str(w).lower() for w in words for word in _XLA_WORDS) else None


def _uses(function: ast.AST, name: str) -> list[ast.AST]:
    """The reads of ``name`` in ``function``'s own code, each as the node that reads it: the
    attribute read through it (``x.ndim``), else the name itself."""
    parents = {id(child): node for node in spawn_site.own_nodes(function) for child in spawn_site.children(node)}
    return [
        parents.get(id(read)) if isinstance(parents.get(id(read)), ast.Attribute) else read
        for read in spawn_site.reads(spawn_site.own_nodes(function), name)
    ]


class _Unpacked(ast.expr):
    """What ``a, b = value`` binds to the name at ``index`` of ``width`` (made here, in no file)."""

    _fields = ("value",)

    def __init__(self, value: ast.expr, index: int, width: int):
        super().__init__(value=value)
        self.index, self.width = index, width


@per_file(64)
def _bindings(scope: ast.AST) -> dict[str, list[tuple[ast.AST | None, int | None]]]:
    """Name -> (what binds it, the line it is bound on) in ``scope``'s own code: a parameter
    as its ``ast.arg`` (line None: bound before the body), ``x = v`` and ``x: T = v`` as
    ``v``, ``x += v`` as the arithmetic ``x + v``, ``a, b = v`` as each one's ``_Unpacked``, a
    def or class as itself, None for a binding not followed (an import, a loop target, a starred
    unpacking, ``global``)."""
    out: dict[str, list[tuple[ast.AST | None, int | None]]] = {}
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        arguments = scope.args
        for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
            out.setdefault(arg.arg, []).append((arg, None))
        for arg in (arguments.vararg, arguments.kwarg):  # a tuple, a dict of what callers pass
            if arg is not None:
                out.setdefault(arg.arg, []).append((None, None))
    followed: set[int] = set()  # the Name targets bound to a value above

    def bind(target: ast.Name, value: ast.AST | None, line: int | None) -> None:
        out.setdefault(target.id, []).append((value, line))
        followed.add(id(target))

    nodes = list(spawn_site.own_nodes(scope))
    for node in nodes:
        if isinstance(node, spawn_site.DEFINITIONS):
            out.setdefault(node.name, []).append((node, node.lineno))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            bind(node.targets[0], node.value, node.lineno)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            bind(node.target, node.value, node.lineno)
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], (ast.Tuple, ast.List))
            and all(isinstance(target, ast.Name) for target in node.targets[0].elts)
        ):
            width = len(node.targets[0].elts)
            for index, target in enumerate(node.targets[0].elts):
                bind(target, _Unpacked(node.value, index, width), node.lineno)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            bind(node.target, ast.BinOp(ast.Name(node.target.id, ast.Load()), node.op, node.value), node.lineno)
        elif isinstance(node, ast.alias):
            out.setdefault(node.asname or node.name.split(".")[0], []).append((None, node.lineno))
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                out.setdefault(name, []).append((None, None))
    for node in nodes:  # after the walk: a target is known as followed only once its statement is seen
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and id(node) not in followed:
            out.setdefault(node.id, []).append((None, node.lineno))
    return out
