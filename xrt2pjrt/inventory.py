"""The inventory of a run (``migrate --inventory``): every torch_xla name, every XLA_*, XRT_*,
PJRT_*, TPU_* setting, every launcher and install line the files hold, each with its status.

A migration is trusted when nothing in the project passed without a word. The rules speak
of what they know; the inventory lists what is *there*, read from each file's text with
patterns that do not depend on the rules, and asks of each entry what became of it:

- ``rewritten``: a change of the run covers its line;
- ``reported``: an item to decide (or an unsafe fix pending) covers it;
- ``unchanged``: nothing covers it, and the target has it as it is: a torch_xla name the
  API surface has on the target (python/api_surface.txt), a variable the target reads
  (python/settings_surface.txt), a launcher or install line of today's kind;
- ``unknown``: none of these; its ``why`` says what is not known (a variable no torch_xla
  release reads, a name under a module whose names are not all listed, a launcher the
  tool does not know). An unknown is itself an item: nothing passes silently.

Entries are grouped by (kind, name, status, why), with the places they were seen.
"""

from __future__ import annotations

import ast
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from xrt2pjrt import files
from xrt2pjrt.python import api_surface, settings_surface
from xrt2pjrt.report import FileResult, Finding, Run
from xrt2pjrt.text import installs
from xrt2pjrt.xrt_variables import UNPREFIXED

STATUSES = ("rewritten", "reported", "unchanged", "unknown")
KINDS = ("name", "setting", "launcher", "install")

# --- what is there --------------------------------------------------------------------------

_DOTTED = re.compile(r"\btorch_xla(?:\.[A-Za-z_]\w*)+")
_IMPORT_AS = re.compile(r"^[ \t]*import[ \t]+(torch_xla(?:\.\w+)*)[ \t]+as[ \t]+(\w+)", re.M)
_FROM_IMPORT = re.compile(r"^[ \t]*from[ \t]+(torch_xla(?:\.\w+)*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]+)", re.M)
_SETTING = re.compile(
    r"(?<!device:)\b(?:(?:XLA|XRT|PJRT|TPU|PT_XLA|TORCH_XLA)_[A-Z0-9_]*[A-Z0-9]|"  # (not XLA_CPU:0)
    + "|".join(sorted(set(UNPREFIXED) | {"GPU_NUM_DEVICES", "TPUVM_MODE"}, key=len, reverse=True))
    + r")\b"
)
# (what it is, its pattern, whether today's tooling launches that way)
_LAUNCHERS = (
    ("xla_dist", re.compile(r"\btorch_xla\.distributed\.xla_dist\b|\bxla_dist\.py\b"), False),
    ("xla_spawn.py", re.compile(r"\bxla_spawn\.py\b"), False),
    ("ctpu", re.compile(r"\bctpu[ \t]+(?:up|delete|status|pause|restart)\b"), False),
    (
        "gcloud compute tpus create",
        re.compile(
            r"\bgcloud[ \t]+(?:alpha[ \t]+|beta[ \t]+)?compute[ \t]+tpus[ \t]+"
            r"(?:tpu-vm[ \t]+|queued-resources[ \t]+)?create\b"
        ),
        True,
    ),
    (
        "gcloud compute tpus tpu-vm ssh",
        re.compile(
            r"\bgcloud[ \t]+(?:alpha[ \t]+|beta[ \t]+)?compute[ \t]+tpus[ \t]+"
            r"tpu-vm[ \t]+(?:ssh|scp)\b"
        ),
        True,
    ),
    ("gcloud compute tpus execution-groups", re.compile(r"\bcompute[ \t]+tpus[ \t]+execution-groups\b"), False),
    ("configure_tpu_version", re.compile(r"\bconfigure_tpu_version\b"), False),
    ("conda activate torch-xla", re.compile(r"\bconda[ \t]+activate[ \t]+torch-xla-\S+"), False),
    ("torchrun", re.compile(r"\btorchrun\b|\btorch\.distributed\.(?:run|launch)\b"), True),
    ("xrt2pjrt launch", re.compile(r"\bxrt2pjrt[ \t]+launch\b"), True),
)
# A line that installs torch_xla or what goes with it.
_INSTALL_LINE = re.compile(
    r"(?i)\b(?:pip3?|python3?[ \t]+-m[ \t]+pip|conda|uv[ \t]+pip)[ \t]+install\b|(?-i:^[ \t]*FROM[ \t])|"
    r"\bimage:|tpu-pytorch|--version[= ]|--runtime-version|tf-version"
)
_PACKAGE = re.compile(
    r"(?i)(?:^|[\s'\"=:/])((?:torch[_-]xla|torch|torchvision|libtpu[\w-]*|cloud[_-]tpu[_-]client|"
    r"gcr\.io/tpu-pytorch/\S+|\S*/xla:\S+|tpu-vm-\S+|pytorch-[\d.]+\S*)"
    r"(?:\[[^\]]*\])?(?:\s*(?:===?|~=|<=?|>=?)\s*v?[\w.*+-]+)?)"
)
# torch and torchvision releases that go with a torch_xla release (each 2.x wants its own torch 2.x)
_TORCH_PIN = re.compile(r"(?i)^torch(?:vision)?\s*(?:===?|~=)\s*v?(\d+)\.(\d+)")


@dataclass(frozen=True)
class Seen:
    kind: str  # name, setting, launcher, install
    name: str
    path: str
    line: int
    prose: bool = False  # in a comment, a docstring, a document's text: what the rules do not migrate
    via: int | None = None  # the line of the import that bound the alias a name was reached through


def prose_lines(kind: str, text: str) -> set[int]:
    """The lines of ``text`` that are prose: comment lines (and a Python file's docstrings),
    a Markdown document's text outside its code blocks."""
    lines = text.splitlines()
    if kind == "markdown":
        out, fence = set(), None
        for number, line in enumerate(lines, start=1):
            mark = re.match(r"[ \t]*(```|~~~)", line)
            if mark and (fence is None or mark.group(1) == fence):
                fence = None if fence else mark.group(1)
                continue
            if fence is None:
                out.add(number)
        return out
    out = {n for n, line in enumerate(lines, start=1) if line.lstrip().startswith("#")}
    if kind == "python":
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return out
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if (
                isinstance(body, list)
                and body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                out.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    return out


def seen_in(path: str, text: str, kind: str = "") -> list[Seen]:
    """Every entry of the four kinds in one file's text, with its line."""
    out: list[Seen] = []
    starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line_of(offset: int) -> int:
        low, high = 0, len(starts) - 1
        while low < high:
            mid = (low + high + 1) // 2
            if starts[mid] <= offset:
                low = mid
            else:
                high = mid - 1
        return low + 1

    aliases = {m.group(2): (m.group(1), line_of(m.start())) for m in _IMPORT_AS.finditer(text)}
    for m in _FROM_IMPORT.finditer(text):
        for part in m.group(2).strip("() \t\n").split(","):
            words = part.split()
            if words and words[0] != "*":
                out.append(Seen("name", f"{m.group(1)}.{words[0]}", path, line_of(m.start())))
                aliases[words[-1]] = (f"{m.group(1)}.{words[0]}", line_of(m.start()))
    for m in _DOTTED.finditer(text):
        out.append(Seen("name", m.group(), path, line_of(m.start())))
    if aliases:
        uses = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, aliases)) + r")\.([A-Za-z_]\w*)")
        for m in uses.finditer(text):
            module, imported_at = aliases[m.group(1)]
            out.append(Seen("name", f"{module}.{m.group(2)}", path, line_of(m.start()), via=imported_at))
    for m in _SETTING.finditer(text):
        out.append(Seen("setting", m.group(), path, line_of(m.start())))
    for number, line in enumerate(text.splitlines(), start=1):
        for what, pattern, _ in _LAUNCHERS:
            if pattern.search(line):
                out.append(Seen("launcher", what, path, number))
        if _INSTALL_LINE.search(line) or path.endswith(".txt") or path.endswith(".in"):
            for m in _PACKAGE.finditer(line):
                out.append(Seen("install", re.sub(r"\s+", "", m.group(1)), path, number))
    prose = prose_lines(kind, text)
    return list(dict.fromkeys(replace(s, prose=s.line in prose) for s in out))


# --- what became of it ------------------------------------------------------------------------


@dataclass
class Entry:
    kind: str
    name: str
    status: str
    why: str
    places: list[str] = field(default_factory=list)  # path:line

    def record(self) -> dict:
        return asdict(self)


def _covering(findings: list[Finding], seen: Seen) -> list[Finding]:
    """The findings on the entry's line, those that name it first; a setting's only where they
    name it (a line may set several, and one carried into a launcher's command is not spoken of)."""
    covering = [f for f in findings if f.range.start_line <= seen.line <= f.range.end_line]
    naming = [f for f in covering if _names(f, seen)]
    return naming if naming or seen.kind in ("setting", "name") else covering


def _names(finding: Finding, seen: Seen) -> bool:
    """Whether ``finding`` speaks of ``seen``: of a torch_xla name by its last part (xm.get_ordinal)."""
    return (seen.name.rsplit(".", 1)[-1] if seen.kind == "name" else seen.name) in f"{finding.message} {finding.detail}"


def status_of(seen: Seen, result: FileResult, target: tuple[int, int]) -> tuple[str, str]:
    """(status, why) of one entry seen in ``result``'s file."""
    status, why = {"name": _name, "setting": _setting, "launcher": _launcher, "install": _install}[seen.kind](
        seen.name, target
    )
    if seen.kind == "install" and status == "unchanged":
        return status, why  # (an item on its line is about another word of it: torch==1.12 beside torch_xla 2.9)
    decided = _covering(result.manual + result.pending, seen)
    made = _covering(result.made, seen)
    if decided and (not made or any(_names(f, seen) for f in decided)):
        return "reported", f"[{decided[0].rule}] {decided[0].message}"
    if made:
        return "rewritten", f"[{made[0].rule}] {made[0].message}"
    if status == "unknown" and seen.via is not None:  # reached through an alias whose import a rule rewrote
        moved = _covering(result.made, Seen("name", seen.name.rsplit(".", 1)[0], seen.path, seen.via))
        if moved:
            return "rewritten", f"its import was rewritten: [{moved[0].rule}] {moved[0].message}"
    if status == "unknown" and seen.kind == "install":  # a torch pin the file's torch_xla install speaks for
        package = re.split(r"[\[=~<>!]", seen.name, maxsplit=1)[0]
        said = [
            f for f in result.manual if f.rule.startswith("install") and f"{package}~=" in f"{f.message} {f.detail}"
        ]
        if said:
            return "reported", f"with the file's torch_xla install: [{said[0].rule}] {said[0].message}"
    if status == "unknown" and seen.prose:
        return status, f"in prose (a comment, a docstring, a document's text), which the rules leave as it is: {why}"
    return status, why


def _spelled(target: tuple[int, int]) -> str:
    return f"{target[0]}.{target[1]}"


def _name(name: str, target: tuple[int, int]) -> tuple[str, str]:
    lack = api_surface.lacks(name, target)
    if lack is not None:
        return "unknown", f"torch_xla {_spelled(target)} lacks {lack.name} ({lack.history}), and no rule spoke of it"
    if api_surface.entry(name, target) is not None:
        return "unchanged", f"torch_xla {_spelled(target)} has it"
    parts = name.split(".")
    known = next(
        ".".join(parts[:end])
        for end in range(len(parts), 0, -1)
        if api_surface.entry(".".join(parts[:end]), target) is not None
    )
    found = api_surface.entry(known, target)
    what = "an open module, whose names are not all listed" if found.kind == "module" else f"a {found.kind}"
    return "unknown", f"{known} is {what}: {name[len(known) + 1 :]} cannot be checked against the API surface"


def _setting(name: str, target: tuple[int, int]) -> tuple[str, str]:
    status = settings_surface.status(name, target)
    if status == "read":
        return "unchanged", f"torch_xla {_spelled(target)} reads it"
    if status == "deprecated":
        return "unchanged", f"torch_xla {_spelled(target)} reads it, with a deprecation notice"
    if status is not None:
        return "unknown", f"torch_xla {_spelled(target)} only warns of it, and no rule spoke of it here"
    if settings_surface.read_by(name):
        gone = settings_surface.gone(name, target)
        return "unknown", f"{gone.history if gone else 'read by nothing on the target'}, and no rule spoke of it here"
    return "unknown", (
        "no torch_xla release 1.13-2.9 reads it: the TPU runtime's (libtpu), another library's or the project's own"
    )


def _launcher(name: str, target: tuple[int, int]) -> tuple[str, str]:
    today = next(current for what, _, current in _LAUNCHERS if what == name)
    if today:
        return "unchanged", "today's way to launch on a TPU VM"
    return "unknown", f"an XRT-era launcher ({name}) no rule spoke of here"


def _install(word: str, target: tuple[int, int]) -> tuple[str, str]:
    advice = installs.finding(word, target) or installs.torch_pin_finding(word, target)
    if advice is not None:
        return "unknown", f"{advice.more or advice.do}; no rule spoke of it here"
    pin = _TORCH_PIN.match(word)
    if pin and word.lower().startswith("torchvision"):
        return "unknown", f"{word}: which torchvision goes with torch {_spelled(target)} is not checked"
    if pin and (int(pin.group(1)), int(pin.group(2))) != target:
        return "unknown", f"{word}: torch_xla {_spelled(target)} goes with torch {_spelled(target)}"
    return "unchanged", f"nothing in it names an XRT-era release, or one older than torch_xla {_spelled(target)}"


# --- the run's inventory ----------------------------------------------------------------------


def take(run: Run, target: tuple[int, int]) -> list[Entry]:
    """The inventory of every file of ``run`` that was read (its text read again, as it was)."""
    groups: dict[tuple[str, str, str, str], Entry] = {}
    for result in run.results:
        if result.error or not result.kind:
            continue
        text = result.original
        if text is None:
            try:
                data, _ = files.read(Path(result.path))
                text = files.decode(data, result.kind).text
            except (OSError, files.NotAFile, files.DecodeError):
                continue
        for seen in seen_in(result.path, text, result.kind):
            status, why = status_of(seen, result, target)
            entry = groups.setdefault((seen.kind, seen.name, status, why), Entry(seen.kind, seen.name, status, why))
            entry.places.append(f"{files.quoted(seen.path)}:{seen.line}")
    return sorted(groups.values(), key=lambda e: (STATUSES.index(e.status), KINDS.index(e.kind), e.name))


def counts(entries: list[Entry]) -> dict[str, int]:
    return {status: sum(1 for e in entries if e.status == status) for status in STATUSES}


def lines(entries: list[Entry]) -> list[str]:
    """The inventory as text: a line an entry, its places after it; the counts first."""
    out = ["inventory: " + ", ".join(f"{n} {status}" for status, n in counts(entries).items())]
    for e in entries:
        places = ", ".join(e.places[:3]) + (f" and {len(e.places) - 3} more" if len(e.places) > 3 else "")
        out.append(f"{e.status:9}  {e.kind:8}  {e.name}: {e.why} ({places})")
    return out
