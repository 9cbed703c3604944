"""`xrt2pjrt migrate --write` over real released code from the XRT era (tests/_corpus.py).

One run over a copy of the whole corpus, then every promise the tool makes to a user is
checked against the files on disk: nothing crashes, every rewritten file still compiles and
binds every name it uses, a second pass finds nothing left, files it did not change are
neither changed nor rewritten, and the report accounts for every change and every item left
to a person. The first run downloads the corpus (about 20 MB) into a cache outside the repo.
"""

from __future__ import annotations

import builtins
import functools
import importlib.util
import json
import os
import re
import shutil
import subprocess
import symtable
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

import _corpus
from xrt2pjrt import files, rewriters
from xrt2pjrt.registry import Options, all_rules
from xrt2pjrt.rewriters import SourceError
from xrt2pjrt.python import rewriter as python

pytestmark = pytest.mark.slow

# A file matching none of these words has nothing to do with XLA, XRT or TPUs.
XLA_WORDS = re.compile(rb"(?i)xla|xrt|(?<![a-z])tpu")


def run_cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "xrt2pjrt", *map(str, args)], capture_output=True, text=True)


def snapshot(root: Path) -> dict[str, tuple[bytes, int, int]]:
    """relative path -> (bytes, inode, mtime_ns) of every file under root."""
    seen = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            st = path.stat()
            seen[path.relative_to(root).as_posix()] = (path.read_bytes(), st.st_ino, st.st_mtime_ns)
    return seen


@dataclass
class Migration:
    root: Path
    before: dict
    after: dict
    run: subprocess.CompletedProcess
    report: dict

    @functools.cached_property
    def changed(self) -> set[str]:
        return {rel for rel, (data, _, _) in self.before.items() if self.after[rel][0] != data}

    def entries(self) -> dict[str, dict]:
        """report entries by path relative to the corpus root"""
        return {Path(e["path"]).relative_to(self.root).as_posix(): e for e in self.report["files"]}


@pytest.fixture(scope="module")
def corpus() -> list[Path]:
    try:
        return _corpus.corpus_paths()
    except _corpus.CorpusUnavailable as exc:
        pytest.skip(f"needs the network: the real-code corpus is fetched from PyPI with pip on first use ({exc})")


@pytest.fixture(scope="module")
def migrated(corpus, tmp_path_factory) -> Migration:
    root = tmp_path_factory.mktemp("corpus")
    for folder in corpus:
        shutil.copytree(folder, root / folder.name, symlinks=True)
    before = snapshot(root)
    report_file = root.parent / "report.json"
    run = run_cli("migrate", "--write", "--unsafe-fixes", "--report", report_file, root)
    return Migration(root, before, snapshot(root), run, json.loads(report_file.read_text()))


def test_the_corpus_is_the_size_the_table_promises(migrated):
    assert len(migrated.before) > 2000
    mentioning = [rel for rel, (data, _, _) in migrated.before.items() if b"torch_xla" in data]
    assert len(mentioning) >= 60, "the XRT-era code in the corpus shrank: check the pins in tests/_corpus.py"


def test_the_run_ends_cleanly(migrated):
    run = migrated.run
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    summary = migrated.report["summary"]
    # exit 2 exactly when some file could not be processed, 0 otherwise (--write never exits 1)
    assert run.returncode == (2 if summary["files_failed"] else 0), run.stderr[-3000:]
    assert summary["files_changed"] > 20, "the rules changed next to nothing in XRT-era code"


def test_files_that_failed_are_untouched_and_truly_broken(migrated):
    for rel, entry in migrated.entries().items():
        if entry["error"] is None:
            continue
        assert migrated.after[rel] == migrated.before[rel], f"{rel} failed ({entry['error']}) yet was written"
        if entry["kind"] == "python" and "cannot parse" in entry["error"]:
            with pytest.raises(SyntaxError):
                compile(migrated.before[rel][0], rel, "exec", dont_inherit=True)


def test_every_rewritten_file_still_parses(migrated):
    assert migrated.changed
    for rel in sorted(migrated.changed):
        path = migrated.root / rel
        problem = parse_problem(path, files.kind_of(path))
        assert problem is None, f"{rel} no longer parses after the rewrite: {problem}"


def parse_problem(path: Path, kind: str) -> str | None:
    data = path.read_bytes()
    try:
        if kind == "python":
            compile(data, str(path), "exec", dont_inherit=True)
        elif kind == "shell":
            done = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
            return done.stderr or None
        elif kind == "yaml":
            list(yaml.safe_load_all(files.decode(data, kind).text))
        elif kind == "notebook":
            notebook = json.loads(files.decode(data, kind).text)
            assert isinstance(notebook.get("cells"), list), "no cell list"
        else:
            files.decode(data, kind)
    except (SyntaxError, ValueError, yaml.YAMLError, AssertionError, files.DecodeError) as exc:
        return str(exc)
    return None


def test_rewrites_leave_no_name_unbound(migrated):
    """A rewrite that writes ``xr.world_size()`` must also import ``xr`` where it is used."""
    for rel in sorted(migrated.changed):
        if files.kind_of(migrated.root / rel) != "python":
            continue
        introduced = unbound_names(migrated.after[rel][0]) - unbound_names(migrated.before[rel][0])
        assert not introduced, f"{rel}: the rewrite uses {sorted(introduced)} without binding them"


def unbound_names(source: bytes) -> set[str]:
    """Names some scope of a module reads as globals that nothing in the module binds."""
    top = symtable.symtable(importlib.util.decode_source(source), "<module>", "exec")
    bound = set(dir(builtins)) | {"__file__", "__name__", "__doc__", "__spec__", "__path__", "__builtins__"}
    read: set[str] = set()
    tables = [top]
    while tables:
        table = tables.pop()
        tables.extend(table.get_children())
        for symbol in table.get_symbols():
            name = symbol.get_name()
            binds_global = table is top or symbol.is_declared_global()
            if binds_global and (symbol.is_assigned() or symbol.is_imported()):
                bound.add(name)
            if symbol.is_referenced() and (table is top or symbol.is_global()):
                read.add(name)
    return read - bound


def test_unchanged_files_are_not_rewritten(migrated):
    for rel, (data, inode, mtime) in migrated.before.items():
        if rel not in migrated.changed:
            assert migrated.after[rel][1:] == (inode, mtime), f"{rel} was rewritten with the same bytes"


def test_files_without_xla_content_stay_byte_identical(migrated):
    unrelated = [rel for rel, (data, _, _) in migrated.before.items() if not XLA_WORDS.search(data)]
    assert len(unrelated) > 1500
    assert not migrated.changed.intersection(unrelated)


def test_the_report_lists_every_change(migrated):
    entries = migrated.entries()
    summary = migrated.report["summary"]
    # A file is changed by its change records and by the TODO comments its manual items leave.
    recorded = {rel for rel, e in entries.items() if (e["changes"] or e["manual"]) and e["error"] is None}
    assert migrated.changed <= recorded, "a file changed on disk without a record in the report"
    # Change records on a file left as it was: only with an error saying the rewrite was discarded.
    assert {rel for rel, e in entries.items() if e["changes"] and e["error"] is None} <= migrated.changed
    assert summary["files_changed"] == len(migrated.changed)
    assert summary["files_seen"] <= len(migrated.before)
    assert summary["changes"] == sum(len(e["changes"]) for e in entries.values())
    for rel, entry in entries.items():
        longest = max(migrated.before[rel][0].count(b"\n"), migrated.after[rel][0].count(b"\n")) + 1
        for finding in entry["changes"] + entry["manual"]:
            at = finding["range"]
            assert 1 <= at["start"]["line"] <= at["end"]["line"] <= longest, f"{rel}: {finding} points outside the file"


def test_every_item_left_to_a_person_is_printed_and_reported(migrated):
    entries = migrated.entries()
    summary = migrated.report["summary"]
    assert summary["manual"] == sum(len(e["manual"]) for e in entries.values())
    printed = [line for line in migrated.run.stderr.splitlines() if ": decide [" in line]
    assert len(printed) == summary["manual"]
    known = set(all_rules())
    for entry in entries.values():
        for finding in entry["changes"] + entry["manual"]:
            assert finding["rule"] in known, f"{entry['path']}: unknown rule id {finding['rule']!r}"


def test_a_second_pass_changes_nothing(migrated, tmp_path):
    report_file = tmp_path / "second.json"
    run = run_cli("migrate", "--check", "--unsafe-fixes", "--report", report_file, migrated.root)
    second = json.loads(report_file.read_text())["summary"]
    assert second["files_changed"] == 0 and second["changes"] == 0, run.stderr[-3000:]
    assert run.returncode == (2 if second["files_failed"] else 1 if second["manual"] else 0)  # (open spots: red)


# A line a message cites, with the text it quotes: the file's as read in a preview, as
# written after --write (report.Finding.cites), so only their place may differ.
_CITED_LINE = re.compile(r"\bline \d+(?:, \d+)*(?: of cell \d+)?(?:: `[^`\n]*`)?")


def _unplaced(findings: list[dict]) -> list[dict]:
    """Findings without their place: a preview places them in the file as read, --write in
    the file as written (below the TODO lines it added). Both list them in line order."""
    return [
        {k: _CITED_LINE.sub("line ...", v) if k in ("message", "detail") else v for k, v in f.items() if k != "range"}
        for f in findings
    ]


def test_preview_with_one_worker_proposes_what_write_did(corpus, migrated, tmp_path):
    """Preview of the pristine files the write run reported, one process: the same
    changes and items, file for file, in the same order."""
    cache_root = corpus[0].parent
    report_file = tmp_path / "preview.json"
    run = run_cli(
        "migrate",
        "--check",
        "--unsafe-fixes",
        "--jobs",
        "1",
        "--report",
        report_file,
        *(cache_root / rel for rel in migrated.entries()),
    )
    assert run.returncode in (1, 2), run.stderr[-3000:]
    preview = {
        Path(e["path"]).relative_to(cache_root).as_posix(): (
            _unplaced(e["changes"]),
            _unplaced(e["manual"]),
            e["error"],
        )
        for e in json.loads(report_file.read_text())["files"]
    }
    written = {
        rel: (_unplaced(e["changes"]), _unplaced(e["manual"]), e["error"]) for rel, e in migrated.entries().items()
    }
    assert preview == written
    assert not any(os.path.exists(folder / "report.json") for folder in corpus)


def test_folding_quiet_statements_changes_no_outcome(corpus):
    """The rewriter folds the statements no rule can act on before parsing
    (python/quiet.py); on every relevant file of the corpus that must give exactly what
    parsing the whole file gives: the same text, the same findings on the same lines."""
    options = Options(rules=frozenset(rid for rid, rule in all_rules().items() if rule.kind == "python"))
    relevant = 0
    for path, kind in files.discover(corpus).targets:
        text = files.decode(path.read_bytes(), kind).text if kind == "python" else ""
        if not rewriters.trigger_for("python").search(text):
            continue
        relevant += 1
        try:
            folded = python.rewrite(text, options)
        except SourceError as exc:
            with pytest.raises(SourceError, match=re.escape(str(exc))):
                python.rewrite(text, options, fold=False)
            continue
        plain = python.rewrite(text, options, fold=False)
        assert (folded.text, folded.changes, folded.manual) == (plain.text, plain.changes, plain.manual), path
    assert relevant > 50


def test_an_unreachable_registry_is_reported_as_such(tmp_path, monkeypatch):
    """What makes the tests above skip (and nothing else): pip cannot reach the index."""
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")  # nothing listens on port 9
    release = _corpus.Release("xrt2pjrt-corpus-probe", "0.0.0", "wheel", "a name no index holds")
    with pytest.raises(_corpus.CorpusUnavailable, match="unreachable"):
        _corpus.corpus_paths([release], cache=tmp_path)
    assert not (tmp_path / "unpacked" / release.folder).exists()
