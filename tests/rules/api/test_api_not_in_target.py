"""api-not-in-target beyond its examples: parameters the target needs, and the backstop:
nothing the target release lacks is left unflagged in a migrated file."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from python_migrate import migrate
from xrt2pjrt import rewriters
from xrt2pjrt.python import api_surface, rewriter as python
from xrt2pjrt.registry import Options, all_rules
from xrt2pjrt.rewriters import SourceError

OPTIONS = Options(rules=frozenset(rid for rid, rule in all_rules().items() if rule.kind == "python"))


@pytest.mark.parametrize(
    "call, reported",
    [
        ("torch_xla.amp.autocast()", True),
        ("torch_xla.amp.autocast(enabled=True)", True),
        ("torch_xla.amp.autocast(torch_xla.device())", False),
        ("torch_xla.amp.autocast(device=d)", False),
        ("torch_xla.amp.autocast(**options)", False),
    ],
)
def test_a_parameter_the_target_needs_and_the_call_does_not_pass_is_reported(call, reported):
    # torch_xla.amp.autocast was torch.cuda.amp.autocast up to 2.0; 2.9's raises TypeError
    # without a device (checked on CPU)
    out = migrate(f"import torch_xla\nimport torch_xla.amp\n\nwith {call}:\n    pass\n")
    items = [(item.message, item.detail) for item in out.manual if item.rule == "api-not-in-target"]
    assert (
        items
        == [
            (
                "pass the XLA device first",
                "torch_xla.amp.autocast needs device in torch_xla 2.9, which this "
                "call does not pass: a TypeError there; pass the XLA device first: "
                "torch_xla.amp.autocast(torch_xla.device(), ...)",
            )
        ]
        * reported
    )


# --- the property: nothing the target lacks is left unflagged ----------------------------------
# An independent reading of the migrated text (ast, file-wide import aliases): every
# reference to a torch_xla name, every call keyword and positional argument, every import,
# held to the API table of the target release; whatever it lacks must be in a statement
# with a TODO line above it.


def unflagged(source: str, release: tuple[int, int]) -> list[tuple[int, str]]:
    from _programs import marking

    return [(line, name) for line, name in lacking(source, release) if not marking(source, line)]


def lacking(source: str, release: tuple[int, int]) -> list[tuple[int, str]]:
    """(line, name) of every spot of ``source`` that uses what ``release`` lacks."""
    tree = ast.parse(source)
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                aliases[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    found = []

    def dotted(node):
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in aliases:
            return ".".join([aliases[node.id], *reversed(parts)])
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [f"{node.module}.{alias.name}" for alias in node.names if alias.name != "*"]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) == 2
            and isinstance(node.args[1], ast.Constant)
            and dotted(node.args[0])
        ):
            names = [f"{dotted(node.args[0])}.{node.args[1].value}"]  # raises as the attribute does
        elif isinstance(node, (ast.Attribute, ast.Name)) and isinstance(node.ctx, ast.Load):
            head = node
            while isinstance(head, ast.Attribute):
                head = head.value
            name = dotted(node)
            imported = aliases.get(getattr(head, "id", None), "")
            # (a name its own import already lacks fails at that import: the import is the spot)
            names = (
                [name]
                if name
                and not any(
                    imported == n or imported.startswith(n + ".")
                    for n in [api_surface.lacks(name, release) and api_surface.lacks(name, release).name]
                    if n
                )
                else []
            )
        else:
            names = []
        for name in names:
            lack = api_surface.lacks(name, release)
            if lack is not None and lack.name == name:
                found.append((node.lineno, name))
        if isinstance(node, ast.Call) and (name := dotted(node.func)) and api_surface.lacks(name, release) is None:
            positional = 0 if any(isinstance(a, ast.Starred) for a in node.args) else len(node.args)
            keywords = [k.arg for k in node.keywords if k.arg]
            found += [
                (node.lineno, lack.name) for lack in api_surface.keyword_lacks(name, keywords, positional, release)
            ]
    return found


def _sources():
    fixtures = Path(__file__).parents[2] / "fixtures" / "python"
    for path in sorted(fixtures.glob("*.before.py")) + sorted((Path(__file__).parents[2] / "programs").glob("*.py")):
        yield path.name, path.read_text(encoding="utf-8"), Options(OPTIONS.rules)
    for rule_id, rule in all_rules().items():
        if rule.kind == "python":
            for index, example in enumerate(rule.examples):
                yield f"{rule_id}-{index}", example.before, Options(OPTIONS.rules, **example.options)


@pytest.mark.parametrize("name, source, options", list(_sources()), ids=[name for name, _, _ in _sources()])
def test_no_migrated_fixture_uses_what_the_target_lacks_unflagged(name, source, options):
    out = python.rewrite(source, options).text
    if options.target == "shim":
        return  # the shim serves the XRT-era names itself
    assert unflagged(out, options.target_version) == []


@pytest.mark.parametrize("name, source, options", list(_sources()), ids=[name for name, _, _ in _sources()])
def test_every_api_not_in_target_line_marks_what_the_output_still_lacks(name, source, options):
    """The converse: a TODO line saying 'not in torch_xla 2.9' sits above a spot of the
    output that uses what the target lacks, never above one another rule rewrote away."""
    from _programs import marking

    out = python.rewrite(source, options).text
    if options.target == "shim":
        return
    said = {line.strip() for line in out.splitlines() if line.strip().endswith("[api-not-in-target]")}
    assert said <= {marking(out, line) for line, _ in lacking(out, options.target_version)}


def test_no_migrated_notebook_fixture_uses_what_the_target_lacks_unflagged():
    import json

    from xrt2pjrt.mixed import notebook

    for path in sorted((Path(__file__).parents[2] / "fixtures" / "text").rglob("*.ipynb")):
        out = json.loads(notebook.rewrite(path.read_text(encoding="utf-8"), OPTIONS).text)
        cells = ["".join(cell["source"]) for cell in out["cells"] if cell["cell_type"] == "code"]
        assert unflagged("\n".join(_python_lines(cell) for cell in cells), (2, 9)) == [], path.name


def _python_lines(cell: str) -> str:
    """A notebook cell without its shell and magic lines (``!pip ... \\`` and what continues them)."""
    if cell.lstrip().startswith("%%"):
        return ""  # a cell magic: the whole cell is another language
    kept, shell = [], False
    for line in cell.splitlines():
        shell = shell or line.lstrip().startswith(("!", "%"))
        if not shell:
            kept.append(line)
        shell = shell and line.rstrip().endswith("\\")
    return "\n".join(kept)


def test_the_property_sees_what_a_migration_left_unflagged():
    # the checker itself: a removed name, a removed keyword and a gone module, unmarked
    source = (
        "import torch_xla.amp as xa\nimport torch_xla.core.xla_model as xm\nimport torch_xla.utils.gcsfs\n\n"
        "s = xa.GradScaler()\nxm.all_reduce('sum', [t], cctx=None)\n"
    )
    assert sorted(unflagged(source, (2, 9))) == [
        (3, "torch_xla.utils.gcsfs"),
        (5, "torch_xla.amp.GradScaler"),
        (6, "torch_xla.core.xla_model.all_reduce(cctx=)"),
    ]
    assert sorted(unflagged(source, (2, 4))) == [
        (3, "torch_xla.utils.gcsfs"),
        (6, "torch_xla.core.xla_model.all_reduce(cctx=)"),
    ]
    migrated = python.rewrite(source, OPTIONS).text
    assert unflagged(migrated, (2, 9)) == [] and migrated.count("# TODO(xrt2pjrt)") == 1  # (the unused import goes)


@pytest.mark.slow
def test_no_migrated_corpus_file_uses_what_the_target_lacks_unflagged():
    import _corpus

    try:
        roots = _corpus.corpus_paths()
    except _corpus.CorpusUnavailable as exc:
        pytest.skip(f"needs the corpus from the package registry: {exc}")
    checked, left = 0, []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            source = path.read_text(encoding="utf-8", errors="replace")
            if not rewriters.trigger_for("python").search(source):
                continue
            try:
                out = python.rewrite(source, OPTIONS).text
                ast.parse(out)
            except (SourceError, SyntaxError, ValueError):
                continue  # files that do not parse are another test's
            checked += 1
            left += [(str(path.relative_to(root.parent)), line, name) for line, name in unflagged(out, (2, 9))]
    assert checked > 80
    assert left == []


@pytest.mark.parametrize(
    "handler, reported",
    [
        ("except (ImportError, AttributeError):", False),
        ("except Exception:", False),
        ("except ImportError:", True),  # the import works on 2.9: the attribute's error is not caught
    ],
)
def test_a_gone_name_used_where_its_absence_is_caught_is_not_reported(handler, reported):
    source = (
        "import torch\nimport torch_xla\n\ndef scaler():\n    try:\n        import torch_xla.amp\n"
        f"        return torch_xla.amp.GradScaler()\n    {handler}\n        return torch.amp.GradScaler(enabled=False)\n"
    )
    assert [m.rule for m in migrate(source).manual] == ["api-not-in-target"] * reported
