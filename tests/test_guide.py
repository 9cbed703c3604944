"""The guide cannot drift from the tool: docs/RULES.md and the families table are generated
from the rules, every example there round-trips through the CLI, the ids and links the
guide names exist, and its quick start runs as written."""

import json
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from xrt2pjrt import guide
from xrt2pjrt.registry import CHECKLIST, all_rules
from cli_runner import invoke

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
GUIDE, CATALOGUE = DOCS / guide.GUIDE, DOCS / guide.CATALOGUE


def test_generated_pages_are_up_to_date():
    for path, text in guide.rendered(DOCS).items():
        assert path.read_text(encoding="utf-8") == text, f"{path.name}: run python -m xrt2pjrt.guide docs"


def test_the_guide_is_short_and_opens_with_contents_and_the_checklist():
    document = GUIDE.read_text(encoding="utf-8")
    assert len(document.splitlines()) < 1000
    headings = re.findall(r"^## (.+)$", document, re.M)
    assert headings[:2] == ["Contents", "The checklist"]


def test_every_rule_id_has_a_heading_in_the_catalogue():
    document = CATALOGUE.read_text(encoding="utf-8")
    missing = [rid for rid in all_rules() if f"### `{rid}`" not in document]
    assert not missing


# Words in backticks shaped like a rule id of a family (`spawn-nprocs-literal`, `env`).
_ID_LIKE = re.compile(rf"`((?:{'|'.join(CHECKLIST)})-[a-z0-9.*-]+)`")


@pytest.mark.parametrize(
    "page", [GUIDE, ROOT / "README.md", ROOT / "examples" / "legacy_mnist" / "README.md"], ids=lambda p: p.name
)
def test_rule_ids_named_in_prose_exist(page):
    rules = all_rules()
    named = set(_ID_LIKE.findall(page.read_text(encoding="utf-8")))
    # A prefix with a star (`env-shell-xrt-*`) must name some rule; anything else, exactly one.
    unknown = {w for w in named if not (w in rules or (w.endswith("*") and any(r.startswith(w[:-1]) for r in rules)))}
    # Ids of earlier releases are named on purpose, as such.
    assert not {w for w in unknown if not w.startswith("shell-env")}, unknown


def _anchor(heading: str) -> str:
    # GitHub's rule: lower case, punctuation dropped but for '-' and '_', spaces to '-'.
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {_anchor(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}


@pytest.mark.parametrize("page", [GUIDE, CATALOGUE, ROOT / "README.md"], ids=lambda p: p.name)
def test_links_between_the_pages_resolve(page):
    text = page.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if target.startswith(("http://", "https://")):
            continue
        file, _, anchor = target.partition("#")
        linked = (page.parent / file).resolve() if file else page
        assert linked.exists(), target
        if anchor:
            assert anchor in _anchors(linked), target


def _code_block_after(document: str, heading: str, language: str) -> str:
    section = document.split(f"\n{heading}\n", 1)[1]
    return re.search(rf"```{language}\n(.*?)```", section, re.S).group(1)


_FROM_THE_INDEX = re.compile(r"pip install\s+(?:-U\s+|--upgrade\s+)?['\"]?xrt2pjrt\b")


def test_no_message_or_page_tells_a_user_to_install_xrt2pjrt_from_the_index():
    """xrt2pjrt is not on PyPI: `run` told users to pip install 'xrt2pjrt[xla]'. Only the
    PyPI page itself (docs/PYPI.md, shown where the package is published) may say it."""
    sources = [*(ROOT / "xrt2pjrt").rglob("*.py"), ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    said = [
        f"{path.relative_to(ROOT)}: {m.group()}"
        for path in sources
        if path.name != "PYPI.md"
        for m in _FROM_THE_INDEX.finditer(path.read_text(encoding="utf-8"))
    ]
    assert not said


def test_quick_start_installs_from_a_checkout_and_its_commands_run(tmp_path):
    block = _code_block_after(GUIDE.read_text(encoding="utf-8"), "## Install", "bash")
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.split("#")[0].strip()]
    assert not any(re.search(r"pip install [^-.]*\bxrt2pjrt\b", c) for c in commands), "not on PyPI yet"
    for command in commands:
        if "pip install" in command:
            words = shlex.split(command)
            spec = words[words.index("-e") + 1]
            assert spec == "." or (spec.startswith(".[") and set(spec[2:-1].split(",")) <= extras), spec
        elif command.startswith("xrt2pjrt "):
            ran = subprocess.run(
                [sys.executable, "-m", "xrt2pjrt", *shlex.split(command)[1:]],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert ran.returncode == 0, (command, ran.stderr)


def test_pre_commit_snippet_is_the_shipped_hook_and_pins_no_missing_tag():
    snippet = yaml.safe_load(_code_block_after(GUIDE.read_text(encoding="utf-8"), "### CI and pre-commit", "yaml"))
    shipped = {hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    for repo in snippet["repos"]:
        assert repo["repo"] == "local" and "rev" not in repo
        for hook in repo["hooks"]:
            assert hook["entry"] == shipped[hook["id"]]["entry"]
            assert hook["types_or"] == shipped[hook["id"]]["types_or"]


# The file each kind's example is written to, so the CLI discovers it as that kind.
FILE_FOR_KIND = {
    "python": "example.py",
    "shell": "run.sh",
    "dockerfile": "Dockerfile",
    "yaml": "job.yaml",
    "markdown": "README.md",
    "notebook": "example.ipynb",
}

_SECTION = re.compile(r"^### `(?P<id>[^`]+)`\n(?P<body>.*?)(?=^##|\Z)", re.S | re.M)
_EXAMPLE = re.compile(
    r"(?:With `(?P<flags>[^`]+)`:\n\n)?"
    r"(?:Before:\n\n```\w*\n(?P<before>.*?)\n```\n\nAfter:\n\n```\w*\n(?P<after>.*?)\n```"
    r"|Left as is:\n\n```\w*\n(?P<same>.*?)\n```)",
    re.S,
)


def _catalogue_examples():
    for section in _SECTION.finditer(CATALOGUE.read_text(encoding="utf-8")):
        for n, m in enumerate(_EXAMPLE.finditer(section["body"])):
            before = m["before"] if m["same"] is None else m["same"]
            after = m["after"] if m["same"] is None else m["same"]
            flags = m["flags"].split() if m["flags"] else []
            yield pytest.param(section["id"], flags, before + "\n", after + "\n", id=f"{section['id']}-{n}")


@pytest.mark.parametrize("rule_id, flags, before, after", list(_catalogue_examples()))
def test_catalogue_example_round_trips_through_the_cli(tmp_path, rule_id, flags, before, after):
    target = tmp_path / FILE_FOR_KIND[all_rules()[rule_id].kind]
    target.write_text(before, encoding="utf-8")
    # (unsafe fixes made: the catalogue shows each rule's fix, as its examples do)
    result = invoke(["migrate", str(target), "--write", "--unsafe-fixes", "--select", rule_id, *flags])
    assert result.exit_code == 0, result.output
    assert target.read_text(encoding="utf-8") == after


def test_catalogue_shows_an_example_for_every_rule():
    shown = {param.values[0] for param in _catalogue_examples()}
    assert shown == set(all_rules())


def test_the_example_readme_lists_what_the_tool_leaves_to_a_person(tmp_path):
    example = ROOT / "examples" / "legacy_mnist"
    listed = re.findall(
        r"^- `([^`]+)`: .*?\(`([a-z0-9.-]+)`\)", (example / "README.md").read_text(encoding="utf-8"), re.M | re.S
    )
    report = tmp_path / "report.json"
    ran = subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", "migrate", ".", "--report", str(report)],
        cwd=example,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr
    items = [(Path(f["path"]).name, m["rule"]) for f in json.loads(report.read_text())["files"] for m in f["manual"]]
    assert sorted(listed) == sorted(items)
