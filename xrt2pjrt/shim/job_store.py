"""This process's part in its job's store: start it where the job says this process serves
it, and say at exit that this process is done (or failed).

The store must outlive every process that may still need it, on every host, and a failure
anywhere must end every wait at once. So each process of a job of several joins it: at
exit (multiprocessing's hooks, which also run in its children) it tells the store it is
done, or posts its uncaught error as the job's abort. The process the job names serves the
store from a helper process (``store.helper``), which ends once the job's last process is
done with it.
"""

from __future__ import annotations

import multiprocessing.util
import os
import sys
import threading

from xrt2pjrt.shim import job as job_module
from xrt2pjrt.shim import settings
from xrt2pjrt.shim.store.client import StoreClient
from xrt2pjrt.shim.store.helper import Helper, start_helper
from xrt2pjrt.shim.store.protocol import StoreError


class JobStore:
    """The job's store as this process takes part in it (one per process: :data:`JOB_STORE`)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self.pid = os.getpid()
        self.job: job_module.Job | None = None
        self.secret = b""
        self.helper: Helper | None = None
        self.address: tuple[str, int] | None = None
        self.joined = False

    def join(self, job: job_module.Job) -> None:
        """Take part in ``job``: from now on this process says done at exit."""
        with self._lock:
            self._join(job)

    def connect(self, job: job_module.Job, seconds: float) -> StoreClient:
        with self._lock:
            self._join(job)
            self._know_secret()
            if self.address is None:
                self._serve_if_ours(seconds)
            host, port = self.address or (job.store_host, job.store_port)
        return StoreClient(host, port, self.secret, timeout=seconds)

    def _know_secret(self) -> None:
        if not self.secret:
            self.secret = job_module.secret(self.job)

    def _join(self, job: job_module.Job) -> None:
        if self.pid != os.getpid():  # forked: the parent's helper and exit duty are not ours
            self._reset()
        if self.job is not None and self.job != job:
            raise job_module.JobError(
                f"this process joined {self.job.describe()} and now its environment "
                f"describes {job.describe()}: one process, one job"
            )
        self.job = job
        if not self.joined and (job.processes > 1 or job.served_by_parent):
            self.joined = True
            # multiprocessing's exit hooks also run in its children, where atexit does not.
            multiprocessing.util.Finalize(None, self._at_exit, exitpriority=10)

    def _serve_if_ours(self, seconds: float) -> None:
        job = self.job
        if job.serves:
            # One process alone: nobody else needs to find the port, so the OS picks it.
            explicit = settings.RENDEZVOUS_ADDR.text() or settings.RENDEZVOUS_PORT.text()
            port = job.store_port if job.processes > 1 or explicit else 0
            self.helper = start_helper(
                job.store_host, port, self.secret, expected=max(1, job.processes), linger=seconds
            )
            self.address = (job.store_host, self.helper.port)

    def _at_exit(self) -> None:
        if self.pid != os.getpid() or self.job is None:
            return
        failure = getattr(sys, "last_value", None)  # set when an uncaught exception ends Python
        job = self.job
        try:
            self._know_secret()
        except (job_module.JobError, StoreError):
            return  # it never could have met anyone
        if self.helper is None and self.address is None and job.serves:
            try:  # the server never needed the store itself; peers still may
                self._serve_if_ours(settings.RENDEZVOUS_TIMEOUT.read())
            except StoreError as error:
                print(f"xrt2pjrt: could not serve the job's store: {error}", file=sys.stderr)
                return
        host, port = self.address or (job.store_host, job.store_port)
        client = StoreClient(host, port, self.secret, timeout=EXIT_SECONDS)
        try:
            if failure is not None:
                client.abort(f"{job.describe()} failed: {type(failure).__name__}: {failure}")
            else:
                client.say_done()
        except StoreError:
            pass  # the store is gone: nobody is left to tell
        finally:
            client.close()
        if self.helper is not None:
            self.helper.finish()

    def abort(self, message: str) -> None:
        """Tell the job's store this process failed: every wait in the job ends with ``message``."""
        with self._lock:
            job = self.job
            if job is None:
                return
            address = self.address or (job.store_host, job.store_port)
            try:
                self._know_secret()
            except (job_module.JobError, StoreError):
                return
        client = StoreClient(*address, self.secret, timeout=EXIT_SECONDS)
        try:
            client.abort(message)
        except StoreError:
            pass
        finally:
            client.close()


EXIT_SECONDS = 3.0  # how long an exiting process tries to tell the store it is done or failed
JOB_STORE = JobStore()
