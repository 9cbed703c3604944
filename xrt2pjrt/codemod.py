"""The engine: files in, proposed new texts and findings out; and the one place that writes.

``plan`` runs in worker processes and never writes or prints: it reads a file, skips it
by its text when nothing can apply, runs the rewriter of the file's kind once, checks the
result, and returns a ``FileResult``. ``apply`` runs in the parent and writes a changed
file atomically, refusing when the file changed on disk since it was read.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from xrt2pjrt import files, rewriters, suppress
from xrt2pjrt.registry import Options
from xrt2pjrt.report import FileResult

# Below this many files a process pool costs more than it saves.
_POOL_THRESHOLD = 16


@dataclass
class Plan:
    result: FileResult
    new_bytes: bytes | None = None  # what ``apply`` writes, when the file changed
    digest: str | None = None  # sha256 of the bytes the plan was made from


def plan(path: Path, kind: str, options: Options, data: bytes | None = None) -> Plan:
    """``data``: the file's bytes when they are not on disk (stdin)."""
    result = FileResult(path=str(path), kind=kind)
    try:
        data = path.read_bytes() if data is None else data
    except OSError as exc:
        result.error = f"cannot read: {exc.strerror or exc}"
        return Plan(result)
    digest = hashlib.sha256(data).hexdigest()
    try:
        source = files.decode(data, kind)
    except files.DecodeError as exc:
        result.error = f"line {exc.line}: {exc}"
        return Plan(result, digest=digest)

    if not rewriters.trigger_for(kind).search(source.text):
        return Plan(result, digest=digest)
    if suppress.skips_file(source.text):
        result.skipped = True
        return Plan(result, digest=digest)
    rewriter = rewriters.module_for(kind)
    try:
        outcome = rewriter.rewrite(source.text, options)
    except rewriters.SourceError as exc:
        result.error = f"line {exc.line}: cannot parse: {exc}"
        return Plan(result, digest=digest)
    except Exception as exc:  # a bug of ours must cost one file, not the whole run
        result.error = (f"internal error of the {kind} rewriter ({type(exc).__name__}: {exc}); "
                        "the file is left as it is: please report this with the file")
        return Plan(result, digest=digest)
    result.changes, result.manual = outcome.changes, outcome.manual
    if outcome.text == source.text:
        return Plan(result, digest=digest)

    problem = rewriter.check(outcome.text)
    if problem:
        result.error = f"rewrite discarded, the result would not be valid {kind}: {problem}"
        return Plan(result, digest=digest)
    try:
        new_bytes = source.encode(outcome.text)
    except UnicodeEncodeError as exc:
        result.error = f"rewrite discarded, the new text cannot be encoded as {source.encoding}: {exc.reason}"
        return Plan(result, digest=digest)
    # Only a changed file carries its texts back to the parent (for the diff): the
    # thousands of files left alone cost no copying between processes.
    result.original, result.updated = source.text, outcome.text
    return Plan(result, new_bytes=new_bytes, digest=digest)


def _plan_star(job: tuple[Path, str, Options]) -> Plan:
    return plan(*job)


def plan_all(targets: list[tuple[Path, str]], options: Options | Callable[[Path], Options], jobs: int | None = None,
             progress: Callable[[int], None] | None = None) -> list[Plan]:
    """Plans for every file, in the order given; ``jobs`` worker processes (default: all cores).
    ``options`` may depend on the file (per-file-ignores); ``progress(n)`` hears of each
    file done."""
    work = [(path, kind, options(path) if callable(options) else options) for path, kind in targets]
    progress = progress or (lambda done: None)
    jobs = jobs or os.cpu_count() or 1
    if jobs == 1 or len(work) < _POOL_THRESHOLD:
        plans = []
        for job in work:
            plans.append(_plan_star(job))
            progress(len(plans))
        return plans
    # Largest files first, one at a time: the few big files that are parsed dominate the
    # run and would leave a worker idle if they arrived last or together in one chunk.
    order = sorted(range(len(work)), key=lambda i: _size(work[i][0]), reverse=True)
    plans: list[Plan | None] = [None] * len(work)
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for done, (i, p) in enumerate(zip(order, pool.map(_plan_star, [work[i] for i in order], chunksize=1)), 1):
            plans[i] = p
            progress(done)
    return plans


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def apply(p: Plan) -> None:
    """Write a changed file; on failure, record the error on the result and leave the file."""
    if p.new_bytes is None:
        return
    path = Path(p.result.path)
    try:
        if hashlib.sha256(path.read_bytes()).hexdigest() != p.digest:
            p.result.error = "changed on disk while xrt2pjrt ran; not written (run again)"
            return
        files.write_atomic(path, p.new_bytes)
    except OSError as exc:
        p.result.error = f"cannot write: {exc.strerror or exc}; the file is unchanged"
