"""Generate xrt2pjrt/python/settings_surface.txt: the environment variables torch_xla 1.13 … 2.9 reads.

    python tools/settings_surface.py [--repo DIR] [--out PATH]

For each release this reads pytorch/xla's source at the release's last patch tag (a git
clone in DIR, default ``~/.cache/xrt2pjrt-xla-source``, made with ``git clone --bare`` when
absent; nothing of it is committed), without building or importing anything:

- C++ (torch_xla/csrc, and third_party/xla_client up to 2.0, all compiled into ``_XLAC``):
  every ``GetEnv*`` / ``getenv`` call whose first argument is a string literal or a constant
  bound to one (``env::kEnvPjRtDevice``); and every call that leaves out a parameter whose
  default names a variable (``GetEnvOrdinalPath(name, defval, const char* ordinal_env =
  "XRT_SHARD_LOCAL_ORDINAL")`` read it in 1.13, where calls passed two arguments; 2.9's pass
  three, and its library holds no such string). A read in a free function that nothing live
  calls is no read: the compiler leaves it out (tests/python/test_settings_surface.py holds
  the 2.9 entries to the strings of the installed ``_XLAC``);
- Python (the torch_xla package): ``os.environ[K]``, ``os.environ.get/setdefault(K)``,
  ``os.getenv(K)``, ``K in os.environ``, and calls of torch_xla's own functions that pass
  a parameter to one of those (``xu.getenv_as(K, int)``, ``xu.check_env_flag(K)``), with K a
  string, a constant (``xenv.TPU_VISIBLE_CHIPS``) or the variable of a loop over a list of
  strings;
- deprecation warnings: a message (a string literal in C++, a ``warnings.warn`` or logger
  call in Python) that names the variable before the word "deprecat…". A read that only
  decides whether to warn (``if os.environ.get(X): warnings.warn(... deprecated ...)``)
  is no read of the setting: a variable only such reads see has no effect.

Each release gives each variable one status: ``read``; ``deprecated`` (read, and a
deprecation warning names it: it still takes effect); ``warns`` (only a deprecation
warning reads it: setting it does nothing but warn). A release not listed for a variable
reads it nowhere: setting it does nothing, silently. Test code (test/, *_test.cc) is left
out; so are the build (setup.py) and what the libraries torch_xla loads read themselves
(XLA_FLAGS in XLA, TPU_* in libtpu): those are not torch_xla's settings, and a variable
read only there is not listed.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

RELEASES = ("1.13", *(f"2.{minor}" for minor in range(10)))
OUT = Path(__file__).resolve().parent.parent / "xrt2pjrt" / "python" / "settings_surface.txt"
SOURCE = "https://github.com/pytorch/xla.git"

# The word of a deprecation message, and a name shaped like an environment variable.
DEPRECATED = re.compile(r"deprecat", re.IGNORECASE)
VARIABLE = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")
# A variable with a value (PJRT_DEVICE=GPU), as a deprecation message names one value of it.
SETTING = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?:=\w+)?")


@dataclass(frozen=True)
class Site:
    """One read of a variable: where, and whether it only decides a deprecation warning."""

    path: str
    line: int
    warning_only: bool = False


# --- the source of one release ------------------------------------------------------------


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def tag_of(repo: Path, release: str) -> str:
    """The last patch tag of a release (v2.8.1 for 2.8): what ``pip install torch-xla~=2.8.0`` gets."""
    tags = git(repo, "tag", "--list", f"v{release}.*").split()
    patches = [t for t in tags if re.fullmatch(rf"v{re.escape(release)}\.\d+", t)]
    if not patches:
        raise SystemExit(f"{repo}: no tag v{release}.N")
    return max(patches, key=lambda t: int(t.rsplit(".", 1)[1]))


def is_runtime_source(path: str) -> bool:
    """A file of torch_xla's runtime: its Python package and the C++ compiled into _XLAC, not tests."""
    if re.search(r"(^|/)tests?/|_test\.(cc|cpp|h)$|(^|/)test_[^/]*\.py$", path):
        return False
    if path.startswith("torch_xla/"):
        return path.endswith((".py", ".cc", ".cpp", ".h"))
    return path.startswith("third_party/xla_client/") and path.endswith((".cc", ".cpp", ".h"))


def release_files(repo: Path, tag: str) -> dict[str, str]:
    paths = [p for p in git(repo, "ls-tree", "-r", "--name-only", tag).splitlines() if is_runtime_source(p)]
    # One `git cat-file --batch` for all of them: a git process per file would take minutes.
    batch = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "--batch"],
        input="".join(f"{tag}:{p}\n" for p in paths).encode(),
        check=True,
        capture_output=True,
        text=False,
    ).stdout
    files, at = {}, 0
    for path in paths:
        header_end = batch.index(b"\n", at)
        size = int(batch[at:header_end].split()[2])
        files[path] = batch[header_end + 1 : header_end + 1 + size].decode("utf-8", "replace")
        at = header_end + 1 + size + 1
    return files


# --- C++ ------------------------------------------------------------------------------------

CPP_TOKEN = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.DOTALL)
CPP_CONSTANT = re.compile(r'\b(\w+)\s*(?:\[\s*\])?\s*=\s*"([A-Z][A-Z0-9_]*)"\s*;')
# A parameter's default: ``GetEnvOrdinalPath(..., const char* ordinal_env = "XRT_SHARD_LOCAL_ORDINAL")``.
CPP_DEFAULT = re.compile(r'=\s*"([A-Z][A-Z0-9_]*)"\s*[,)]')
CPP_READ = re.compile(r'\b(?:GetEnv\w*|getenv)\s*\(\s*(?:"([A-Z][A-Z0-9_]*)"|((?:\w+::)*\w+))')


def without_comments(text: str) -> str:
    """C++ source with its comments blanked (line breaks kept, so lines still count), strings kept."""

    def blank(m: re.Match) -> str:
        return re.sub(r"[^\n]", " ", m.group()) if m.group().startswith("/") else m.group()

    return CPP_TOKEN.sub(blank, text)


# A function's definition, up to the brace its body opens with.
CPP_DEFINITION = re.compile(
    r"\b(\w+)\s*\((?:[^;{}()]|\([^()]*\))*\)\s*(?:const\s*)?(?:noexcept\s*)?"
    r"(?:->\s*[\w:<>*& ]+)?\{"
)
NOT_FUNCTIONS = {"if", "for", "while", "switch", "catch", "return", "sizeof"}


@dataclass(frozen=True)
class Body:
    name: str
    start: int
    end: int
    free: bool  # not a method defined out of its class (``Class::name``), which a generated file may call


class CppFile:
    def __init__(self, path: str, text: str):
        self.path = path
        self.code = without_comments(text)
        self.bodies = self._bodies()

    def _bodies(self) -> list[Body]:
        bare = re.sub(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', lambda m: " " * len(m.group()), self.code)
        out = []
        for m in CPP_DEFINITION.finditer(bare):
            if m.group(1) in NOT_FUNCTIONS:
                continue
            depth = 0
            for at in range(m.end() - 1, len(bare)):
                depth += {"{": 1, "}": -1}.get(bare[at], 0)
                if depth == 0:
                    out.append(
                        Body(m.group(1), m.start(), at, not re.search(r"::\s*$", bare[m.start() - 40 : m.start()]))
                    )
                    break
        return out

    def function_at(self, at: int) -> str | None:
        """The innermost function whose body holds offset ``at``."""
        inside = [b for b in self.bodies if b.start <= at <= b.end]
        return max(inside, key=lambda b: b.start).name if inside else None

    def line(self, at: int) -> int:
        return self.code.count("\n", 0, at) + 1


def _arguments(code: str, open_at: int) -> list[str]:
    """The top-level arguments of the parenthesis opening at ``open_at``."""
    depth, start, out = 0, open_at + 1, []
    for at in range(open_at, len(code)):
        char = code[at]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                last = code[start:at].strip()
                return out + ([last] if last or out else [])
        elif char == "," and depth == 1:
            out.append(code[start:at].strip())
            start = at + 1
    return out


def cpp_constants(files: list[CppFile]) -> dict[str, str]:
    """``kEnvPjRtDevice`` -> ``PJRT_DEVICE``: every identifier a C++ file binds to a variable's name."""
    return {name: value for f in files for name, value in CPP_CONSTANT.findall(f.code)}


def cpp_defaults(files: list[CppFile]) -> dict[str, tuple[int, str]]:
    """``GetEnvOrdinalPath`` -> (2, ``XRT_SHARD_LOCAL_ORDINAL``): functions with a parameter whose
    default names a variable, with that parameter's position."""
    out = {}
    for f in files:
        for m in CPP_DEFAULT.finditer(f.code):
            depth, at = 0, m.start()
            while at > 0 and depth >= 0:  # back to the parenthesis the parameter list opens with
                at -= 1
                depth += {")": 1, "(": -1}.get(f.code[at], 0)
            function = re.search(r"(\w+)\s*$", f.code[:at])
            parameters = _arguments(f.code, at)
            position = next((i for i, p in enumerate(parameters) if f'"{m.group(1)}"' in p), None)
            if function and position is not None:
                out[function.group(1)] = (position, m.group(1))
    return out


def cpp_dead(files: list[CppFile]) -> set[str]:
    """Free functions nothing live calls: their reads never run, and the compiler leaves their
    strings out of the library (2.9 reads XLA_SAVE_HLO_FILE in MaybeSaveHloGraph, which only
    ReportComputationError calls, which only CheckComputationStatus calls, which nothing
    calls). A use is a name's occurrence in another function's body, or outside every body
    where it is not a declaration (``Type name(``). A macro's body (``PYBIND11_MODULE(_XLAC, m)
    { ... }``) is where the library starts: never dead."""
    free = {b.name for f in files for b in f.bodies if b.free}
    methods = {b.name for f in files for b in f.bodies if not b.free}
    candidates = {name for name in free - methods if name != "main" and not re.fullmatch(r"[A-Z0-9_]+", name)}
    callers: dict[str, set[str | None]] = {name: set() for name in candidates}  # None: used outside any body
    for f in files:
        for m in re.finditer(r"\w+", f.code):
            if m.group() not in callers:
                continue
            caller = f.function_at(m.start())
            if (
                caller is None
                and re.search(r"[\w>*&]\s+$", f.code[max(0, m.start() - 80) : m.start()])
                and re.match(r"\s*\(", f.code[m.end() : m.end() + 80])
            ):
                continue  # a declaration or a definition: `absl::Status Name(`
            callers[m.group()].add(caller)
    dead: set[str] = set()
    while True:
        found = {name for name, by in callers.items() if by <= dead | {name}}
        if found == dead:
            return dead
        dead = found


def cpp_reads(
    f: CppFile, constants: dict[str, str], defaults: dict[str, tuple[int, str]], dead: set[str]
) -> tuple[dict[str, list[Site]], dict[str, Site]]:
    """The variables a C++ file reads, and the ones its deprecation messages name."""
    reads: dict[str, list[Site]] = {}

    def read(name: str, at: int) -> None:
        if f.function_at(at) not in dead:
            reads.setdefault(name, []).append(Site(f.path, f.line(at)))

    for m in CPP_READ.finditer(f.code):
        name = m.group(1) or constants.get(m.group(2).rpartition("::")[2])
        if name:
            read(name, m.start())
    for function, (position, name) in defaults.items():
        for m in re.finditer(rf"\b{function}\s*\(", f.code):
            if len(_arguments(f.code, m.end() - 1)) <= position:
                read(name, m.start())
    deprecated = {}
    for m in re.finditer(r'"(?:\\.|[^"\\\n])*"', f.code):
        for name in named_deprecated(m.group()[1:-1]):
            deprecated.setdefault(name, Site(f.path, f.line(m.start())))
    return reads, deprecated


def named_deprecated(message: str) -> set[str]:
    """The variables a message says are deprecated: those it names before "deprecat…", each
    with the value it names (``PJRT_DEVICE=GPU is being deprecated``: that value only)."""
    found = DEPRECATED.search(message)
    return set(SETTING.findall(message[: found.start()])) if found else set()


# --- Python ---------------------------------------------------------------------------------

ENVIRON_READS = {"get", "setdefault"}
WARNINGS = {"warn", "warning", "warn_once", "print"}


def _dotted(node: ast.expr) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else ""


def _is_environ(node: ast.expr) -> bool:
    return _dotted(node) in ("os.environ", "environ")


def _string_list(node: ast.expr | None) -> list[str] | None:
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return [e.value for e in node.elts]
    return None


class PythonModule:
    """The reads of one module, given the readers (functions of torch_xla that read a parameter)
    and constants (module-level names bound to a string, ``xenv.X``) found in every module."""

    def __init__(self, path: str, tree: ast.Module):
        self.path, self.tree = path, tree
        self.constants = {
            t.id: n.value.value
            for n in tree.body
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
            for t in n.targets
            if isinstance(t, ast.Name)
        }
        self.lists = {
            t.id: _string_list(n.value)
            for n in ast.walk(tree)
            if isinstance(n, ast.Assign)
            for t in n.targets
            if isinstance(t, ast.Name) and _string_list(n.value) is not None
        }
        self.parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}

    def readers(self, known: dict[str, int]) -> dict[str, int]:
        """Functions here that read the environment variable a parameter names: name -> its position."""
        out = {}
        for node in ast.walk(self.tree):
            if isinstance(node, ast.FunctionDef):
                params = [a.arg for a in node.args.args]
                for key, _ in self._keys(node, known):
                    if isinstance(key, ast.Name) and key.id in params:
                        out[node.name] = params.index(key.id)
        return out

    def _keys(self, root: ast.AST, readers: dict[str, int]):
        """(key expression, read node) for every read under ``root``."""
        for node in ast.walk(root):
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and _is_environ(node.value):
                yield node.slice, node
            elif (
                isinstance(node, ast.Compare)
                and isinstance(node.ops[0], (ast.In, ast.NotIn))
                and _is_environ(node.comparators[0])
            ):
                yield node.left, node
            elif isinstance(node, ast.Call) and node.args:
                callee = _dotted(node.func)
                if (
                    callee.rpartition(".")[2] in ENVIRON_READS and _is_environ(getattr(node.func, "value", None))
                ) or callee in ("os.getenv", "getenv"):
                    yield node.args[0], node
                elif callee.rpartition(".")[2] in readers and len(node.args) > readers[callee.rpartition(".")[2]]:
                    yield node.args[readers[callee.rpartition(".")[2]]], node

    def names(self, key: ast.expr, at: ast.AST, xenv: dict[str, str]) -> list[str]:
        """The variables a key expression names."""
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return [key.value]
        if isinstance(key, ast.Attribute):
            return [xenv[key.attr]] if key.attr in xenv else []
        if isinstance(key, ast.Name):
            loop = self._loop_over(key.id, at)
            if loop is not None:
                return loop
            if key.id in self.constants:
                return [self.constants[key.id]]
            return [xenv[key.id]] if key.id in xenv else []
        return []

    def _loop_over(self, name: str, at: ast.AST) -> list[str] | None:
        """The strings ``name`` takes when it is the variable of an enclosing loop over a list of them."""
        node = at
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, ast.For) and isinstance(node.target, ast.Name) and node.target.id == name:
                found = _string_list(node.iter)
                if found is None and isinstance(node.iter, ast.Name):
                    found = self.lists.get(node.iter.id)
                return found
        return None

    def warning_only(self, read: ast.AST) -> bool:
        """Whether the read is the test of an ``if`` whose body only warns that something is deprecated."""
        node = read
        while node in self.parents and not isinstance(self.parents[node], ast.stmt):
            node = self.parents[node]
        parent = self.parents.get(node)
        return (
            isinstance(parent, ast.If)
            and parent.test is node
            and not parent.orelse
            and all(self._deprecation_warning(s) is not None for s in parent.body)
        )

    def _deprecation_warning(self, statement: ast.stmt) -> ast.Call | None:
        call = statement.value if isinstance(statement, ast.Expr) else None
        if (
            isinstance(call, ast.Call)
            and _dotted(call.func).rpartition(".")[2] in WARNINGS
            and any(
                DEPRECATED.search(s.value)
                for s in ast.walk(call)
                if isinstance(s, ast.Constant) and isinstance(s.value, str)
            )
        ):
            return call
        return None

    def deprecated(self, xenv: dict[str, str]) -> dict[str, Site]:
        """The variables this module's deprecation warnings name (a loop variable in an f-string counts)."""
        out = {}
        for statement in ast.walk(self.tree):
            call = self._deprecation_warning(statement) if isinstance(statement, ast.Expr) else None
            if call is None:
                continue
            message = "".join(
                self._text(part, statement, xenv)
                for arg in call.args
                for part in (arg.values if isinstance(arg, ast.JoinedStr) else [arg])
            )
            for name in named_deprecated(message):
                out.setdefault(name, Site(self.path, statement.lineno))
        return out

    def _text(self, part: ast.expr, at: ast.AST, xenv: dict[str, str]) -> str:
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            return part.value
        if isinstance(part, ast.FormattedValue):
            return " ".join(self.names(part.value, at, xenv))
        return " "


def python_reads(modules: list[PythonModule]) -> tuple[dict[str, list[Site]], dict[str, Site]]:
    xenv = next((m.constants for m in modules if m.path.endswith("core/xla_env_vars.py")), {})
    readers: dict[str, int] = {}
    while True:  # a reader may call another (a getenv_as of its own): until no new one turns up
        found = {name: pos for m in modules for name, pos in m.readers(readers).items()}
        if found.keys() <= readers.keys():
            break
        readers |= found
    reads: dict[str, list[Site]] = {}
    deprecated: dict[str, Site] = {}
    for m in modules:
        for key, node in m._keys(m.tree, readers):
            for name in m.names(key, node, xenv):
                if VARIABLE.fullmatch(name):
                    reads.setdefault(name, []).append(Site(m.path, node.lineno, m.warning_only(node)))
        deprecated = m.deprecated(xenv) | deprecated
    return reads, deprecated


# --- one release, all releases ----------------------------------------------------------------


def release_settings(files: dict[str, str]) -> dict[str, tuple[str, Site]]:
    """variable -> (status, the site to cite) for one release's source."""
    cpp = [CppFile(path, text) for path, text in sorted(files.items()) if not path.endswith(".py")]
    modules = []
    for path, text in sorted(files.items()):
        if path.endswith(".py"):
            try:
                modules.append(PythonModule(path, ast.parse(text)))
            except SyntaxError:
                continue
    constants, defaults, dead = cpp_constants(cpp), cpp_defaults(cpp), cpp_dead(cpp)
    reads: dict[str, list[Site]] = {}
    deprecated: dict[str, Site] = {}
    for found, named in [*(cpp_reads(f, constants, defaults, dead) for f in cpp), python_reads(modules)]:
        for name, sites in found.items():
            reads.setdefault(name, []).extend(sites)
        deprecated = named | deprecated
    out = {}
    for name, sites in reads.items():
        effective = [s for s in sites if not s.warning_only]
        if effective:
            out[name] = ("deprecated" if name in deprecated else "read", effective[0])
        else:
            out[name] = ("warns", sites[0])
        # A value of it a message calls deprecated (PJRT_DEVICE=GPU): read, with a warning.
        for value in sorted(d for d in deprecated if d.startswith(f"{name}=")):
            out[value] = ("deprecated", deprecated[value])
    return out


def ranges(releases: list[str]) -> str:
    """``1.13-2.4,2.6``: runs of consecutive releases."""
    runs: list[list[int]] = []
    for i in sorted(RELEASES.index(r) for r in releases):
        if runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return ",".join(RELEASES[r[0]] if len(r) == 1 else f"{RELEASES[r[0]]}-{RELEASES[r[-1]]}" for r in runs)


def merge(settings: dict[str, dict[str, tuple[str, Site]]], tags: dict[str, str]) -> list[str]:
    """One line per variable and status: ``NAME  RELEASES  STATUS  SOURCE``, sorted by name; SOURCE
    is a read in the last release of the line's releases."""
    lines = []
    for name in sorted({n for s in settings.values() for n in s}):
        by_status: dict[str, list[str]] = {}
        for release, found in settings.items():
            if name in found:
                by_status.setdefault(found[name][0], []).append(release)
        for status, releases in sorted(by_status.items(), key=lambda item: RELEASES.index(item[1][0])):
            site = settings[releases[-1]][name][1]
            lines.append(f"{name}  {ranges(releases)}  {status}  {tags[releases[-1]]}:{site.path}:{site.line}")
    return lines


HEADER = """\
# The environment variables torch_xla 1.13 … 2.9 reads, read from its source at each release's
# last patch tag by tools/settings_surface.py (do not edit by hand: run it again). One line
# per variable and status:
#   NAME  RELEASES  STATUS  TAG:PATH:LINE
# RELEASES: the releases it has this status in (1.13-2.4,2.6). STATUS: read | deprecated
# (read, and a deprecation warning names it) | warns (only a deprecation warning reads it:
# it has no effect). A release not listed reads it nowhere: setting it does nothing. The
# source is a read in the last release of RELEASES (github.com/pytorch/xla at TAG).
"""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=Path.home() / ".cache" / "xrt2pjrt-xla-source")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if not (args.repo / "HEAD").exists() and not (args.repo / ".git").exists():
        subprocess.run(["git", "clone", "--bare", SOURCE, str(args.repo)], check=True)
    tags = {release: tag_of(args.repo, release) for release in RELEASES}
    settings = {release: release_settings(release_files(args.repo, tags[release])) for release in RELEASES}
    args.out.write_text(HEADER + "\n".join(merge(settings, tags)) + "\n")
    print(f"{args.out}: {sum(len(s) for s in settings.values())} entries over {len(RELEASES)} releases")


if __name__ == "__main__":
    main()
