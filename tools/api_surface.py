"""Generate xrt2pjrt/python/api_surface.txt: the API surface of torch_xla 2.1 … 2.9.

    python tools/api_surface.py [--wheels DIR] [--out PATH]

For each release this downloads the cp311 manylinux wheel (``pip download --no-deps``,
into DIR, default ``~/.cache/xrt2pjrt-wheels``; nothing of it is committed) and reads it
without importing torch:

- every module of the ``torch_xla`` package from its Python source (``ast``): the names
  it binds at module level (functions with their parameter names, classes with their
  constructor's parameters and their members, other values, names imported or re-exported
  from other torch_xla modules, which take that entry);
- the ``_XLAC`` bindings from the string table of the compiled extension: pybind11 keeps
  each binding's name as a C string. Every string shaped like a private binding
  (``_[a-z][a-z0-9_]*``) is taken: that holds every binding and some other strings, so a
  name found here may be noise, but a binding is never missed (tests/python/test_api_surface.py
  holds the 2.9 entries to ``dir(torch_xla._XLAC)`` of the installed torch_xla). Other
  ``_XLAC`` names (classes, submodules) are not listed: ``_XLAC`` is an open module.

One line per name and distinct entry, with the releases it has that entry in, so that a
release's changes read as a diff of this file (see python/api_surface.py for the format).
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
import zipfile
from pathlib import Path

RELEASES = tuple(f"2.{minor}" for minor in range(1, 10))
OUT = Path(__file__).resolve().parent.parent / "xrt2pjrt" / "python" / "api_surface.txt"
XLAC = "torch_xla._XLAC"
BINDING = re.compile(rb"(?<=\x00)_[a-z][a-z0-9_]*(?=\x00)")

# Bindings a release's Python code calls that its extension does not have (torch_xla 2.5's
# torch_xla.py calls a name the C++ side spelled _dynamic_shape_detector_set_max_allowed_traces).
CALLED_BUT_ABSENT = {"_dynamic_shape_detector_set_max_num_different_graphs_allowed"}

# Decorators that keep the signature of what they wrap (functools.wraps and the like), by
# the last part of their name (``runtime.requires_pjrt``, ``contextlib.contextmanager``).
KEEP_SIGNATURE = {
    "contextmanager",
    "lru_cache",
    "cache",
    "wraps",
    "requires_pjrt",
    "requires_jax",
    "overload",
    "trace_me",
    "assume_constant_result",
    "no_grad",
    "staticmethod",
    "classmethod",
    "property",
}


def wheel(release: str, folder: Path) -> Path:
    found = sorted(folder.glob(f"torch_xla-{release}.0-cp311-*.whl"))
    if not found:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--only-binary",
                ":all:",
                "--python-version",
                "3.11",
                "--platform",
                "manylinux_2_28_x86_64",
                f"torch-xla=={release}.0",
                "-d",
                str(folder),
            ],
            check=True,
        )
        found = sorted(folder.glob(f"torch_xla-{release}.0-cp311-*.whl"))
    return found[0]


# --- one release -----------------------------------------------------------------------


def signature(args: ast.arguments, drop_first: bool = False) -> str:
    """``(a, b=, *, c=, **kwargs)``: parameter names, ``=`` where there is a default."""
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    words = []
    for index, (arg, default) in enumerate(zip(positional, defaults)):
        if drop_first and index == 0:
            continue
        words.append(arg.arg + ("=" if default is not None else ""))
        if args.posonlyargs and arg is args.posonlyargs[-1]:
            words.append("/")
    if args.vararg:
        words.append(f"*{args.vararg.arg}")
    elif args.kwonlyargs:
        words.append("*")
    words += [a.arg + ("=" if d is not None else "") for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    if args.kwarg:
        words.append(f"**{args.kwarg.arg}")
    return f"({', '.join(words)})"


def _decorator(node: ast.expr) -> str:
    call = node.func if isinstance(node, ast.Call) else node
    name = ast.unparse(call).rpartition(".")[2]
    # typing_extensions.deprecated("message") / warnings.deprecated: a warning, same signature
    if (
        name.endswith("deprecated")
        and isinstance(node, ast.Call)
        and node.args
        and isinstance(node.args[0], ast.Constant)
    ):
        return "contextmanager"
    return name


def _keeps_signature(node: ast.FunctionDef | ast.ClassDef) -> bool:
    return all(_decorator(d) in KEEP_SIGNATURE for d in node.decorator_list)


class Module:
    """What one module binds at module level, before names imported from others are followed."""

    def __init__(self, name: str, tree: ast.Module, is_package: bool):
        self.name = name
        self.package = name if is_package else name.rpartition(".")[0]
        self.entries: dict[str, str] = {}  # name -> entry
        self.aliases: dict[str, str] = {}  # name -> dotted name in torch_xla it is bound to
        self.stars: list[str] = []  # modules re-exported with ``from m import *``
        self.classes: dict[str, tuple[ast.ClassDef, list[str]]] = {}  # name -> (node, dotted bases)
        self.open = False
        self.all: list[str] | None = None
        self.statements(tree.body)

    def absolute(self, module: str | None, level: int) -> str:
        if not level:
            return module or ""
        base = self.package.split(".")
        base = base[: len(base) - level + 1]
        return ".".join([*base, *([module] if module else [])])

    def bind(self, name: str, entry: str | None = None, alias: str | None = None) -> None:
        self.entries.pop(name, None)
        self.aliases.pop(name, None)
        self.classes.pop(name, None)
        if alias is not None:
            self.aliases[name] = alias
        else:
            self.entries[name] = entry or "value"

    def statements(self, body: list[ast.stmt]) -> None:
        for node in body:
            self.statement(node)

    def statement(self, node: ast.stmt) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name == "__getattr__":
                self.open = True
            self.bind(node.name, "def " + signature(node.args) if _keeps_signature(node) else "def")
        elif isinstance(node, ast.ClassDef):
            self.bind(node.name, "class")
            self.classes[node.name] = (node, [ast.unparse(b) for b in node.bases])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.import_as(alias.asname, alias.name)
                else:
                    top = alias.name.split(".")[0]
                    self.import_as(top, top)
        elif isinstance(node, ast.ImportFrom):
            module = self.absolute(node.module, node.level)
            for alias in node.names:
                if alias.name == "*":
                    if module.startswith("torch_xla"):
                        self.stars.append(module)
                    else:
                        self.open = True
                else:
                    self.import_as(alias.asname or alias.name, f"{module}.{alias.name}")
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            for target in targets:
                for name in _names(target):
                    if name == "__all__" and isinstance(value, (ast.List, ast.Tuple)):
                        self.all = [e.value for e in value.elts if isinstance(e, ast.Constant)]
                    dotted = _dotted(value) if isinstance(target, ast.Name) else None
                    if dotted and dotted.split(".")[0] in self.aliases:
                        head, _, rest = dotted.partition(".")
                        self.bind(name, alias=self.aliases[head] + (f".{rest}" if rest else ""))
                    elif dotted and dotted in self.entries | self.classes:
                        self.bind(name, alias=f"{self.name}.{dotted}")
                    else:
                        self.bind(name)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                for name in _names(target):
                    self.entries.pop(name, None)
                    self.aliases.pop(name, None)
        elif isinstance(node, ast.Expr) and self.sets_names(node.value):
            self.open = True
        else:
            # Conditional definitions (if / try / with at module level) count: either branch may run.
            for field in ("body", "orelse", "finalbody"):
                self.statements(getattr(node, field, []))
            for handler in getattr(node, "handlers", []):
                self.statements(handler.body)

    def sets_names(self, expression: ast.expr) -> bool:
        """A statement that may bind names no one can read off the source: ``globals()``,
        ``setattr``, or a call handed the module itself (experimental/pjrt.py's
        ``register_deprecated(this_module, alias)`` for each alias in a list)."""
        for node in ast.walk(expression):
            if isinstance(node, ast.Name) and (
                node.id in ("globals", "setattr") or self.aliases.get(node.id) == self.name
            ):
                return True
        return False

    def import_as(self, local: str, dotted: str) -> None:
        if dotted == "_XLAC":
            dotted = XLAC
        if dotted.split(".")[0] == "torch_xla":
            self.bind(local, alias=dotted)
        else:
            self.bind(local, "module" if "." not in dotted and local == dotted else "value")

    def public(self) -> list[str]:
        names = [*self.entries, *self.aliases]
        return self.all if self.all is not None else [n for n in names if not n.startswith("_")]


def _names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _names(e)]
    if isinstance(target, ast.Starred):
        return _names(target.value)
    return []


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def release_surface(path: Path) -> dict[str, str]:
    """dotted name -> entry, for one wheel."""
    modules: dict[str, Module] = {}
    bindings: set[str] = set()
    with zipfile.ZipFile(path) as z:
        for name in z.namelist():
            if name.startswith("torch_xla/") and name.endswith(".py"):
                parts = name[:-3].split("/")
                package = parts[-1] == "__init__"
                dotted = ".".join(parts[:-1] if package else parts)
                try:
                    tree = ast.parse(z.read(name))
                except SyntaxError:
                    continue
                modules[dotted] = Module(dotted, tree, package)
            elif name.startswith("_XLAC.") and name.endswith(".so"):  # (not _XLAC_cuda_functions)
                bindings = {m.decode() for m in BINDING.findall(z.read(name))}
        # A check of the method on every release: each binding its Python code calls is found.
        called = {
            m.group(1)
            for name in z.namelist()
            if name.startswith("torch_xla/") and name.endswith(".py")
            for m in re.finditer(r"_XLAC\.(_[a-z][a-z0-9_]*)", z.read(name).decode("utf-8", "replace"))
        }
    if not called - CALLED_BUT_ABSENT <= bindings:
        raise SystemExit(f"{path.name}: bindings its Python code calls were not found: {sorted(called - bindings)}")
    return Resolver(modules, bindings).surface()


class Resolver:
    """Follows names imported from other torch_xla modules to their entries."""

    def __init__(self, modules: dict[str, Module], bindings: set[str]):
        self.modules = modules
        self.bindings = bindings
        for module in modules.values():
            self._stars(module, set())

    def _stars(self, module: Module, seen: set[str]) -> None:
        for star in module.stars:
            source = self.modules.get(star)
            if source is None or star in seen:
                module.open = True
                continue
            self._stars(source, seen | {module.name})
            for name in source.public():
                if name not in module.entries and name not in module.aliases:
                    module.aliases[name] = f"{star}.{name}"
            module.open |= source.open
        module.stars = []

    def entry(self, dotted: str, seen: frozenset[str] = frozenset()) -> str | None:
        """The entry of a dotted name: a module, a name in one, or a member of a class."""
        if dotted in self.modules or dotted == XLAC:
            return "module open" if dotted == XLAC or self.modules[dotted].open else "module"
        parent, _, name = dotted.rpartition(".")
        if parent == XLAC:
            return "value" if name in self.bindings else None
        if dotted in seen:
            return None
        module = self.modules.get(parent)
        if module is not None:
            if name in module.aliases:
                return self.entry(module.aliases[name], seen | {dotted})
            if name in module.classes:
                return self.class_entry(module, name)
            return module.entries.get(name)
        return None

    def class_entry(self, module: Module, name: str, seen: frozenset[str] = frozenset()) -> str:
        node, bases = module.classes[name]
        init = self.init_signature(module, node, seen)
        return f"class {init}" if init else "class"

    def init_signature(self, module: Module, node: ast.ClassDef, seen: frozenset[str]) -> str | None:
        if node.decorator_list:
            return None  # a dataclass (its fields) or a decorator's own class
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name in ("__init__", "__new__"):
                return signature(item.args, drop_first=True) if _keeps_signature(item) else None
        bases = [b for b in node.bases if not (isinstance(b, ast.Name) and b.id == "object")]
        if not bases:
            return "()"
        if len(bases) == 1 and not node.keywords:
            base = self.class_of(module, bases[0], seen)
            if base is not None:
                return self.init_signature(*base, seen | {f"{module.name}.{node.name}"})
        return None

    def members(self, module: Module, node: ast.ClassDef, seen: frozenset[str] = frozenset()) -> tuple[set[str], bool]:
        """The class's own and inherited members (public, and dunders), and whether more may exist."""
        names: set[str] = set()
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(item.name)
            elif isinstance(item, (ast.Assign, ast.AnnAssign)):
                for target in item.targets if isinstance(item, ast.Assign) else [item.target]:
                    names.update(_names(target))
        is_open = bool(node.decorator_list) or bool(node.keywords)
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id == "object":
                continue
            found = self.class_of(module, base, seen)
            if found is None or f"{found[0].name}.{found[1].name}" in seen:
                is_open = True
                continue
            inherited, more = self.members(*found, seen | {f"{module.name}.{node.name}"})
            names |= inherited
            is_open |= more
        return {n for n in names if not n.startswith("_") or n.startswith("__")}, is_open

    def class_of(self, module: Module, base: ast.expr, seen: frozenset[str]):
        """The (module, ClassDef) a base class expression names, when it is a torch_xla class."""
        dotted = _dotted(base)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        if head in module.classes and not rest:
            return module, module.classes[head][0]
        target = module.aliases.get(head)
        if target is None:
            return None
        target = f"{target}.{rest}" if rest else target
        for _ in range(8):  # follow re-exports
            parent, _, name = target.rpartition(".")
            owner = self.modules.get(parent)
            if owner is None:
                return None
            if name in owner.classes:
                return owner, owner.classes[name][0]
            if name not in owner.aliases:
                return None
            target = owner.aliases[name]
        return None

    def surface(self) -> dict[str, str]:
        out: dict[str, str] = {XLAC: "module open"}
        out.update({f"{XLAC}.{name}": "value" for name in self.bindings})
        for name, module in self.modules.items():
            out[name] = "module open" if module.open else "module"
            for local in [*module.entries, *module.aliases, *module.classes]:
                dotted = f"{name}.{local}"
                entry = self.entry(dotted)
                if entry is None:
                    entry = "value"  # an import of a torch_xla name the release does not have
                if dotted == XLAC or local == "_XLAC":
                    entry = "module open"
                out[dotted] = entry
                if local in module.classes:
                    members, is_open = self.members(module, module.classes[local][0])
                    if is_open:
                        out[dotted] = entry.replace("class", "class open", 1)
                    for member in members:
                        out[f"{dotted}.{member}"] = "member"
        return out


# --- all releases ----------------------------------------------------------------------


def merge(surfaces: dict[str, dict[str, str]]) -> list[str]:
    """One line per dotted name and entry: ``dotted  releases  entry``, sorted by name."""
    lines = []
    for dotted in sorted({d for s in surfaces.values() for d in s}):
        by_entry: dict[str, list[str]] = {}
        for release, surface in surfaces.items():
            if dotted in surface:
                by_entry.setdefault(surface[dotted], []).append(release)
        for entry, releases in sorted(by_entry.items(), key=lambda item: RELEASES.index(item[1][0])):
            lines.append(f"{dotted}  {ranges(releases)}  {entry}")
    return lines


def ranges(releases: list[str]) -> str:
    """``2.1-2.4,2.6``: runs of consecutive releases."""
    indexes = [RELEASES.index(r) for r in releases]
    runs: list[list[int]] = []
    for i in indexes:
        if runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return ",".join(RELEASES[r[0]] if len(r) == 1 else f"{RELEASES[r[0]]}-{RELEASES[r[-1]]}" for r in runs)


HEADER = """\
# The API surface of torch_xla 2.1 … 2.9, read from the released wheels by
# tools/api_surface.py (do not edit by hand: run it again). One line per name and entry:
#   DOTTED-NAME  RELEASES  ENTRY
# RELEASES: the releases it has this entry in (2.1-2.4,2.6). ENTRY: module | module open
# (may hold names not listed) | def [(PARAMS)] | class [open] [(PARAMS of the constructor)]
# | member (of a class) | value. PARAMS: names; '=' has a default; / * *args **kwargs as in
# Python. No PARAMS: the signature is not known (a decorator's, a dataclass's).
"""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheels", type=Path, default=Path.home() / ".cache" / "xrt2pjrt-wheels")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    args.wheels.mkdir(parents=True, exist_ok=True)
    surfaces = {release: release_surface(wheel(release, args.wheels)) for release in RELEASES}
    args.out.write_text(HEADER + "\n".join(merge(surfaces)) + "\n")
    print(f"{args.out}: {sum(len(s) for s in surfaces.values())} entries over {len(RELEASES)} releases")


if __name__ == "__main__":
    main()
