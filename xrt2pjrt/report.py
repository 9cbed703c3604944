"""What a migration run found: records, and their JSON and Markdown renderings.

Every rewriter (Python or text) returns the same records, so one report serves all
file kinds. Workers build these records; only the parent process renders them.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class Finding:
    """One change made, or one spot a person must decide (``line`` is 1-based)."""

    rule: str
    line: int
    message: str


@dataclass
class FileResult:
    path: str
    kind: str
    original: str | None = None
    updated: str | None = None
    changes: list[Finding] = field(default_factory=list)
    manual: list[Finding] = field(default_factory=list)
    error: str | None = None

    @property
    def changed(self) -> bool:
        return self.error is None and self.updated is not None and self.updated != self.original


@dataclass
class Summary:
    files_seen: int = 0
    files_changed: int = 0
    files_with_manual_items: int = 0
    files_failed: int = 0
    changes: int = 0
    manual: int = 0

    @classmethod
    def of(cls, results: list[FileResult]) -> "Summary":
        return cls(
            files_seen=len(results),
            files_changed=sum(r.changed for r in results),
            files_with_manual_items=sum(bool(r.manual) for r in results),
            files_failed=sum(r.error is not None for r in results),
            changes=sum(len(r.changes) for r in results),
            manual=sum(len(r.manual) for r in results),
        )


def _interesting(results: list[FileResult]) -> list[FileResult]:
    # Files that were only looked at stay out of the listing; the summary counts them.
    return [r for r in results if r.changes or r.manual or r.error]


def to_json(results: list[FileResult]) -> str:
    files = [
        {
            "path": r.path,
            "kind": r.kind,
            "changes": [asdict(f) for f in r.changes],
            "manual": [asdict(f) for f in r.manual],
            "error": r.error,
        }
        for r in _interesting(results)
    ]
    return json.dumps({"files": files, "summary": asdict(Summary.of(results))}, indent=2) + "\n"


def to_markdown(results: list[FileResult]) -> str:
    summary = Summary.of(results)
    lines = [
        "# xrt2pjrt migration report",
        "",
        f"{summary.files_seen} files seen, {summary.files_changed} changed, "
        f"{summary.changes} changes, {summary.manual} items for a person to decide, "
        f"{summary.files_failed} files could not be processed.",
        "",
    ]
    for r in _interesting(results):
        lines += [f"## `{r.path}`", ""]
        if r.error:
            lines += [f"**Not processed:** {r.error}", ""]
        for title, findings in (("Changes", r.changes), ("Decide by hand", r.manual)):
            if findings:
                lines += [f"### {title}", ""]
                lines += [f"- line {f.line} `{f.rule}`: {f.message}" for f in findings]
                lines.append("")
    return "\n".join(lines)
