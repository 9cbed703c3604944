"""The engine: files in, proposed new texts and findings out; and the one place that writes.

``execute`` plans every file, then (with ``write``) writes, with Ctrl-C and SIGTERM handled
so that the run stops cleanly and can say what it wrote (migration.py runs it). ``plan``
never writes or prints: it reads a file, skips it by its text when nothing
can apply, runs the rewriter of the file's kind once, checks the result, and returns a
``FileResult``. ``apply`` writes a changed file atomically, refusing when the file changed
on disk since it was read (files.write_atomic compares it again just before the rename).

Worker processes. The parent reads every file and tests its trigger (most files of a tree
stop there, in a few milliseconds each); only the files a rewriter must parse are worth a
process pool, and only when there is enough of them to pay for its start-up (forking,
returning results) and cores free to run it: below ``POOL_MIN_WORK`` characters of such
text, for one file, or when the load average leaves no core idle, the parent parses them
itself (an explicit ``--jobs N`` is taken as given). Workers end with the parent however it ends (Linux: the kernel
kills them when it dies, PR_SET_PDEATHSIG; elsewhere they watch their parent id), ignore
Ctrl-C (the parent stops them) and never write.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from xrt2pjrt import file_caches, files, rewriters, settling, suppress
from xrt2pjrt.cache import Cache, Rewrite
from xrt2pjrt.registry import Options
from xrt2pjrt.report import FileResult, Finding, Range, cell_lines, todo_lines

# Characters of text to parse below which a process pool costs more than it saves, and the
# least a worker should get (bench/jobs.py). The parent parses about a million characters a
# second; a pool of two costs about 0.3 s of CPU to start, feed and drain, and pays only
# when a core is free to run it.
POOL_MIN_WORK = 1_000_000
WORK_PER_WORKER = 500_000


@dataclass
class Plan:
    result: FileResult
    new_bytes: bytes | None = None  # what ``apply`` writes, when the file changed
    snapshot: files.Snapshot | None = None  # the file as the plan read it
    write_to: str | None = None  # the file itself (a symbolic link named on the command line, resolved)


@dataclass
class _Job:
    """A file that was read and decoded and that its rewriter must parse."""

    path: Path
    kind: str
    source: files.TextFile
    snapshot: files.Snapshot | None  # None: not on disk (stdin)
    write_to: str | None
    todo_lines: int  # counted when the file was read
    key: str | None = None  # its entry in the results cache (cache.py)


def plan(path: Path, kind: str, options: Options, data: bytes | None = None) -> Plan:
    """``data``: the file's bytes when they are not on disk (stdin; such a plan is not written)."""
    prepared = _prepare(path, kind, options, data)
    return prepared if isinstance(prepared, Plan) else _finish(prepared, _rewrite(prepared, options))


def _prepare(
    path: Path, kind: str, options: Options, data: bytes | None = None, cache: Cache | None = None
) -> Plan | _Job:
    """Read, decode and test the trigger: a finished Plan, or the job of parsing the file
    (with its key in ``cache``)."""
    result = FileResult(path=str(path), kind=kind)
    snapshot = write_to = None
    if data is None:
        try:
            write_to = os.path.realpath(path)
            data, snapshot = files.read(Path(write_to), limit=files.read_limit(options.max_file_bytes))
        except files.NotAFile as exc:
            result.error = str(exc)
            return Plan(result)
        except FileNotFoundError:
            result.error = "deleted while xrt2pjrt ran: not read"
            return Plan(result)
        except OSError as exc:
            result.error = f"cannot read: {exc.strerror or exc}"
            return Plan(result)
    try:
        source = files.decode(data, kind)
    except files.DecodeError as exc:
        result.error, result.error_range = f"line {exc.line}: {exc}", Range.at(exc.line, exc.column)
        return Plan(result, snapshot=snapshot)
    result.todo_lines = todo_lines(kind, source.text)
    if not rewriters.trigger_for(kind).search(source.text):
        return Plan(result, snapshot=snapshot)
    if suppress.skips_file(source.text):
        result.skipped, result.todo_lines = True, 0  # set aside by its owner
        return Plan(result, snapshot=snapshot)
    if len(data) > options.max_file_bytes:
        result.error = _too_large(kind, data, source.text, options.max_file_bytes)
        if result.error:
            return Plan(result, snapshot=snapshot)
    return _Job(
        path,
        kind,
        source,
        snapshot,
        write_to,
        result.todo_lines,
        cache.key(data, kind, options) if cache is not None else None,
    )


def rewrite(kind: str, text: str, options: Options) -> rewriters.Outcome:
    """The rewrite of ``text``, a file of ``kind``, by its rewriter, with the items still open
    in it that no rule reports on its own (settling.py: TODO lines left, markers that settle
    nothing)."""
    module = rewriters.module_for(kind, text)
    outcome = module.rewrite(text, options)
    more = settling.open_spots(kind, text, outcome, options, lambda unmarked: module.rewrite(unmarked, options))
    if more:
        outcome.manual = sorted(outcome.manual + more, key=lambda f: f.line)
    return outcome


def _too_large(kind: str, data: bytes, text: str, limit: int) -> str | None:
    """Why a file is skipped by the size limit, which bounds what its rewriter parses: the
    whole file, or only the code in it (a notebook's outputs and a document's prose are not
    parsed, and a notebook's images do not make it too large to migrate). None: not too large."""
    measure = getattr(rewriters.module_for(kind), "parsed_size", None)
    if measure is None:
        return (
            f"skipped: {len(data):,} bytes, more than the size limit of {limit:,} (--max-file-size); "
            "nothing in it was migrated"
        )
    code = measure(text)
    if code <= limit:
        return None
    return (
        f"skipped: {code:,} characters of code to parse (a notebook's cells, a document's code blocks), "
        f"more than the size limit of {limit:,} (--max-file-size); nothing in it was migrated"
    )


def _rewrite(job: _Job, options: Options) -> Rewrite:
    """What the file's rewriter makes of it: all that the file's text and ``options`` decide
    (the results cache keeps it), nothing about the file on disk."""
    with _no_cyclic_gc():  # (back on once the file's trees are gone: see _no_cyclic_gc)
        try:
            return _rewrite_and_check(job, options)
        finally:
            file_caches.forget()  # the file's trees go now, not when the next file's replace them


def _rewrite_and_check(job: _Job, options: Options) -> Rewrite:
    source, kind = job.source, job.kind
    rewriter = rewriters.module_for(kind, source.text)
    try:
        outcome = rewrite(kind, source.text, options)
    except rewriters.SourceError as exc:
        return Rewrite(error=f"line {exc.range.start_line}: cannot parse: {exc}", error_range=exc.range)
    except rewriters.TooDeep as exc:
        where = f"line {exc.line}" if kind == "python" else f"line {exc.line} of a code cell or block"
        return Rewrite(error=f"{where}: {exc}; the file is left as it is")
    except RecursionError:
        return Rewrite(
            error=(
                "nested too deeply to parse: an expression or block is deeper than libcst, the parser "
                f"used here, can follow (Python's recursion limit, {sys.getrecursionlimit()}), though "
                "Python may run it; the file is left as it is: migrate it by hand"
            )
        )
    except Exception as exc:  # a bug of ours must cost one file, not the whole run
        return Rewrite(
            error=(
                f"internal error of the {kind} rewriter ({type(exc).__name__}: {exc}); "
                "the file is left as it is: please report this with the file"
            ),
            lasting=False,
        )
    done = Rewrite(*(_on_code(found, source.text, kind) for found in (outcome.changes, outcome.manual)))
    if outcome.text == source.text:
        return done
    problem = rewriter.check(outcome.text)
    if problem:
        as_read = rewriter.check(source.text)  # (a placeholder such as `<API_KEY>` in a script)
        done.error = (
            f"not valid {kind} as it stands, so left as it is: {as_read}"
            if as_read
            else f"rewrite discarded, the result would not be valid {kind}: {problem}"
        )
        return done
    done.text = outcome.text
    return done


def _finish(job: _Job, rewritten: Rewrite) -> Plan:
    """The plan of a file its rewriter made ``rewritten`` of."""
    result = FileResult(path=str(job.path), kind=job.kind, todo_lines=job.todo_lines)
    unfinished = Plan(result, snapshot=job.snapshot)
    result.changes, result.manual = list(rewritten.changes), list(rewritten.manual)
    result.error, result.error_range = rewritten.error, rewritten.error_range
    if rewritten.error is not None or rewritten.text is None:
        return unfinished
    source = job.source
    try:
        new_bytes = source.encode(rewritten.text)
    except UnicodeEncodeError as exc:
        result.error = f"rewrite discarded, the new text cannot be encoded as {source.encoding}: {exc.reason}"
        return unfinished
    if job.snapshot is not None and files.read_only(job.snapshot.mode):
        result.error = files.read_only(job.snapshot.mode)
        return unfinished
    if job.snapshot is not None and job.snapshot.nlink > 1:
        result.error = (
            f"has {job.snapshot.nlink} hard links: not rewritten (a new file would leave the other "
            "names with the old text, an in-place write is not atomic); break the link "
            "(cp FILE FILE.new && mv FILE.new FILE) and run again"
        )
        return unfinished
    # Only a changed file carries its texts back to the parent (for the diff): the
    # thousands of files left alone cost no copying between processes.
    result.original, result.updated = source.text, rewritten.text
    return Plan(result, new_bytes=new_bytes, snapshot=job.snapshot, write_to=job.write_to)


def _on_code(findings: list[Finding], text: str, kind: str) -> list[Finding]:
    """``findings`` of ``text``, their ranges given the columns of its code (Finding.on_code):
    the rewriters give lines, as a snippet's (a code block, a cell, a RUN instruction's
    command) are lines of the file too, where its columns are not."""
    if not findings:
        return findings
    lines, cells = text.splitlines(), cell_lines(text) if kind == "notebook" else []
    return [f.on_code(lines, cells) for f in findings]


@contextmanager
def _no_cyclic_gc():
    """libcst builds a node per token and drops whole trees at once: the cyclic collector,
    run every few hundred allocations over a heap that grows with the file, costs a fifth of
    a large file's rewrite and finds nothing. Back on only once the file's trees are dropped:
    the first collection after the rewrite otherwise walked them all (4% of a run over a
    tree of 8 kB files). Dropped means by reference counting, so nothing that refers to a tree
    may be part of a reference cycle: a recursive closure (a function of the module or a loop
    instead), or a back reference (weak: Binding.scope, Context's engine). A cycle kept a 1 MB
    file's 700,000 objects for the next collection to walk (0.3 s); tests/python/test_rewriter.py
    holds it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def plan_all(
    targets: list[tuple[Path, str]],
    options: Options | Callable[[Path], Options],
    jobs: int | None = None,
    progress: Callable[[int], None] | None = None,
    cache: Cache | None = None,
) -> list[Plan]:
    """Plans for every file, in the order given; up to ``jobs`` worker processes (default:
    as many as the cores and the work found call for, see POOL_MIN_WORK). ``options`` may
    depend on the file (per-file-ignores); ``progress(n)`` hears of each file done. A file
    whose rewrite ``cache`` holds is not parsed; the others' rewrites go into it."""
    progress = progress or (lambda done: None)
    settings = [options(path) if callable(options) else options for path, _ in targets]
    plans: list[Plan | _Job] = []
    for (path, kind), opts in zip(targets, settings):
        plans.append(_prepare(path, kind, opts, cache=cache))
        if isinstance(plans[-1], _Job) and cache is not None:
            kept = cache.get(plans[-1].key)
            if kept is not None:
                plans[-1] = _finish(plans[-1], kept)
        if isinstance(plans[-1], Plan):
            progress(len(plans))
    pending = [i for i, p in enumerate(plans) if isinstance(p, _Job)]
    done = len(plans) - len(pending)

    def finish(i: int, rewritten: Rewrite) -> None:
        if cache is not None:
            cache.put(plans[i].key, rewritten)
        plans[i] = _finish(plans[i], rewritten)

    workers = pool_size(jobs, [len(plans[i].source.text) for i in pending])
    if workers <= 1:
        for done, i in enumerate(pending, done + 1):
            finish(i, _rewrite(plans[i], settings[i]))
            progress(done)
        return plans
    # Largest files first, one at a time: the few big files dominate the run and would
    # leave a worker idle if they arrived last or together in one chunk.
    pending.sort(key=lambda i: len(plans[i].source.text), reverse=True)
    for kind in {plans[i].kind for i in pending}:
        rewriters.module_for(kind)  # imported once here, inherited by every forked worker
    lost = []  # files whose worker ended abruptly (a crash in a parser) before their plan came back
    with _pool(workers) as pool:
        futures = {pool.submit(_rewrite, plans[i], settings[i]): i for i in pending}
        for future in as_completed(futures):
            try:
                finish(futures[future], future.result())
            except BrokenProcessPool:
                lost.append(futures[future])
                continue
            done += 1
            progress(done)
    # Each one again in a process of its own: the file that crashed its worker is named, the others are planned.
    for done, i in enumerate(sorted(lost), done + 1):
        finish(i, _rewrite_alone(plans[i], settings[i]))
        progress(done)
    return plans


@contextmanager
def _pool(workers: int):
    """A pool of forked workers, stopped at once when the run is interrupted."""
    with ProcessPoolExecutor(
        max_workers=workers, mp_context=_fork_context(), initializer=_worker_start, initargs=(os.getpid(),)
    ) as pool:
        try:
            yield pool
        except BaseException:
            _end_workers(pool)
            raise


def _rewrite_alone(job: _Job, options: Options) -> Rewrite:
    """``_rewrite`` in a worker of its own: when it ends abruptly, this file is named as not processed."""
    with _pool(1) as pool:
        try:
            return pool.submit(_rewrite, job, options).result()
        except BrokenProcessPool:
            return Rewrite(
                error="not processed: the process that parsed it ended abruptly (a crash of the parser); "
                "the file is left as it is: please report this with the file",
                lasting=False,
            )


def pool_size(jobs: int | None, work: list[int]) -> int:
    """How many worker processes ``work`` (characters of text to parse, per file) is worth."""
    if jobs is not None:
        return max(1, min(jobs, len(work)))
    total = sum(work)
    if len(work) < 2 or total < POOL_MIN_WORK:
        return 1
    cores = os.cpu_count() or 1
    idle = round(cores - os.getloadavg()[0]) if hasattr(os, "getloadavg") else cores  # cores others leave free
    return max(1, min(cores, idle, len(work), total // WORK_PER_WORKER))


def _fork_context():
    """fork where there is one: the workers start with the rewriters the parent imported."""
    if "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


def _worker_start(parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the parent decides
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # (a forked worker inherits the parent's handler)
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    else:
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    if os.getppid() != parent:  # the parent ended before the line above
        os._exit(1)


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        threading.Event().wait(0.5)
    os._exit(1)


def _end_workers(pool: ProcessPoolExecutor) -> None:
    """Stop the workers now (an interrupt): a parse under way is not waited for."""
    for child in multiprocessing.active_children():
        child.kill()
    # The thread that feeds the workers' queue may be blocked writing to a pipe no worker
    # reads any more; at exit multiprocessing joins it, and an interrupted run hung there
    # for good (seen: 'interrupted' never printed, the process alive minutes later).
    queue = getattr(pool, "_call_queue", None)  # (ProcessPoolExecutor's, Python 3.8-3.13)
    if queue is not None:
        queue.cancel_join_thread()
    # Not cancel_futures: the pool's own thread, finding its workers gone, fails every
    # pending future, and one cancelled here meanwhile made it print an InvalidStateError
    # traceback after "interrupted" (seen once in CI; Python 3.11's terminate_broken).
    pool.shutdown(wait=False)


def apply(p: Plan, held: list[tuple[Plan, files.Replaced]] | None = None) -> bool:
    """Write a changed file; True when it was written. On failure the error is recorded on
    the result and the file is left as it is. With ``held``, the file it replaced is kept
    open there, to be looked at again once the other files are written (``settle``)."""
    if p.new_bytes is None:
        return False
    path = Path(p.write_to or p.result.path)
    new = p.snapshot is None  # a file the run creates (the carried shim's), never over one made meanwhile
    try:
        if new:
            path.parent.mkdir(parents=True, exist_ok=True)
        replaced = files.write_atomic(path, p.new_bytes, expect=p.snapshot, new=new, hold=True)
    except files.Changed as exc:
        p.result.error = str(exc) or "changed on disk while xrt2pjrt ran; not written (run again)"
        return False
    except FileExistsError:
        p.result.error = "created by another program while xrt2pjrt ran; not written (run again)"
        return False
    except OSError as exc:
        p.result.error = f"cannot write: {exc.strerror or exc}; the file is unchanged"
        return False
    if replaced is None:  # created: no file was replaced
        return True
    try:
        replaced.settle(put_back=True)
        written = True
    except files.Changed as exc:
        p.result.error = str(exc) or "changed on disk while xrt2pjrt wrote it; put back as edited, not written"
        written = exc.written
    if held is None:
        settle([(p, replaced)])
        return written
    held.append((p, replaced))
    if len(held) > HELD_OPEN:
        settle(held[:-HELD_OPEN])
        del held[:-HELD_OPEN]
    return written


# Replaced files kept open at most (each one a file descriptor).
HELD_OPEN = 256


def settle(held: list[tuple[Plan, files.Replaced]]) -> None:
    """Look once more at files replaced a moment ago: an edit still in flight during the
    rename (an editor that opened the file just before it) is saved beside the new file."""
    for p, replaced in held:
        try:
            replaced.settle()
        except files.Changed as exc:
            p.result.error = str(exc)
        finally:
            replaced.close()


# --- planning and writing, under signals ---------------------------------------------------


@dataclass
class Executed:
    plans: list[Plan] = field(default_factory=list)  # empty when a signal came during planning
    written: list[str] = field(default_factory=list)  # files written, in order
    stopped_by: int | None = None  # the signal that ended the run early


def execute(
    targets: list[tuple[Path, str]],
    options: Options | Callable[[Path], Options],
    jobs: int | None = None,
    write: bool = False,
    progress: Callable[[int], None] | None = None,
    more: Callable[[list[Plan]], list[Plan]] | None = None,
    cache: Cache | None = None,
) -> Executed:
    """Plan every file and, with ``write``, write the changed ones. ``more`` plans the files
    that follow from the files' plans (the carried shim), written with them; ``cache``
    keeps the rewrites (plan_all). SIGINT or
    SIGTERM ends the run: at once while planning (the workers are stopped, nothing was
    written), between two files while writing (a write is never cut short); ``stopped_by``
    says which."""
    out = Executed()
    with _signals() as stop:
        try:
            out.plans = plan_all(targets, options, jobs, progress, cache)
            out.plans += more(out.plans) if more else []
            if cache is not None:
                cache.prune()
        except _Interrupted as exc:
            out.stopped_by = exc.signum
            return out
        stop.defer = True  # from here on a signal ends the run between two files, never within a write
        held: list[tuple[Plan, files.Replaced]] = []
        try:
            for p in out.plans if write else ():
                if stop.signum is not None:
                    break
                if apply(p, held):
                    out.written.append(p.result.path)
        finally:
            settle(held)
        out.stopped_by = stop.signum
    return out


_NAMED = 5  # files a note names before it only counts them


def notes_on(discovery: files.Discovery, write: bool) -> list[str]:
    """What a run says once about what it found besides its files; with ``write``, the stale
    temporary files of an interrupted run are removed (and said)."""
    notes = []
    if discovery.symlinks:
        notes.append(
            f"{discovery.symlinks} symbolic link{'s' * (discovery.symlinks > 1)} inside the folders "
            "not followed (name a link to migrate the file it points to)"
        )
    if discovery.library_copies:
        shown = ", ".join(files.quoted(f"{place}/") for place in sorted(discovery.library_copies)[:_NAMED])
        notes.append(
            f"a copy of torch_xla itself: the files its releases ship are left as they are: {shown} "
            "(install the 2.9 wheel in its place; files of your own in it are migrated)"
        )
    holding = _ignored_places_with_xrt_words(discovery.ignored)
    if holding:
        shown = ", ".join(files.quoted(place) for place in holding[:_NAMED])
        more = f" and {len(holding) - _NAMED} more" if len(holding) > _NAMED else ""
        notes.append(f"XRT-era words in ignored files, not migrated: {shown}{more} (name a file to migrate it)")
    if discovery.stale:
        names = ", ".join(files.quoted(str(p)) for p in discovery.stale)
        if write:
            removed = files.remove_stale(discovery.stale)
            notes.append(f"removed {len(removed)} temporary file(s) an interrupted run left: {names}")
        else:
            notes.append(
                f"{len(discovery.stale)} temporary file(s) an interrupted run left: {names} (--write removes them)"
            )
    return notes


def _ignored_places_with_xrt_words(ignored: list[tuple[Path, Path]]) -> list[str]:
    """The ignored places (a folder, shown with its /, or a file) that hold a file in which
    its rewriter's trigger words occur: a test of the text, no parse."""
    places: dict[Path, list[Path]] = {}
    for path, place in ignored:
        places.setdefault(place, []).append(path)
    return [
        f"{place}/" if paths != [place] else str(place)
        for place, paths in sorted(places.items())
        if any(_holds_xrt_words(path) for path in paths)
    ]


def _holds_xrt_words(path: Path) -> bool:
    kind = files.kind_of(path)
    try:
        text = files.decode(files.read(path, limit=files.read_limit(Options.max_file_bytes))[0], kind).text
    except (OSError, files.NotAFile, files.DecodeError):
        return False  # it is not migrated either way; a word about it is all that is at stake
    return bool(rewriters.trigger_for(kind).search(text))


def check_report_path(report: Path, targets: list[Path]) -> None:
    """ValueError unless ``report`` can be written without touching a file of the run:
    checked before anything is written, so that a bad path fails the run, not its end. A
    link is written through only to a file that is there: a dangling one could point
    anywhere (a checkout's link to a place outside it)."""
    if os.path.islink(report) and not os.path.exists(report):
        raise ValueError(
            f"--report {report}: a symbolic link to {files.quoted(os.readlink(report))}, which does not "
            "exist: a report is not written through it; remove it or name another file"
        )
    if report.is_dir():
        raise ValueError(f"--report {report}: is a folder")
    if not report.parent.is_dir():
        raise ValueError(f"--report {report}: the folder {report.parent} does not exist")
    folder = Path(os.path.realpath(report)).parent
    if not os.access(folder, os.W_OK | os.X_OK):  # (a read-only file system too, even for root)
        raise ValueError(f"--report {report}: cannot write in the folder {files.quoted(str(folder))}")
    if not report.exists():
        return
    for target in targets:
        try:
            if os.path.samefile(report, target):
                raise ValueError(f"--report {report}: is {target}, a file of this run; choose another name")
        except OSError:
            continue


class _Interrupted(BaseException):
    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


class _Stop:
    """What a signal did: ``signum`` once one arrived. Until ``defer`` is set, a signal also
    raises _Interrupted at once (planning may be in a long parse)."""

    def __init__(self):
        self.signum: int | None = None
        self.defer = False

    def __call__(self, signum, frame):
        self.signum = signum
        if not self.defer:
            raise _Interrupted(signum)


@contextmanager
def _signals():
    stop = _Stop()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
