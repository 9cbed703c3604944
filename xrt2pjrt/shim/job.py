"""The job this process belongs to, as its environment says, and where the job's store lives.

Read from the environment only: no XLA runtime, no collective, no graph sync (the TPU
topology may ask the GCE metadata server, as torch_xla does). The first of these that
applies describes the job:

1. torchrun: ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``GROUP_RANK``;
2. PJRT's process variables, which torch_xla's spawn (and the shim's) set in each child:
   ``PJRT_LOCAL_PROCESS_RANK`` / ``PJRT_LOCAL_PROCESS_COUNT``, on as many hosts as the TPU
   topology has (``CLOUD_TPU_TASK_ID`` is the process's index when set);
3. a TPU slice of several hosts (``topology.from_env``): one process per host, or the
   parent of ``xmp.spawn`` on each host;
4. otherwise one process, alone.

Where the store is, and which process serves it:

* a spawn parent that serves it tells its children with ``XRT2PJRT_STORE=host:port``;
* else ``XRT2PJRT_RENDEZVOUS_ADDR=host:port`` when set;
* else, on several hosts, worker 0's address (``TPU_WORKER_HOSTNAMES`` or the metadata's
  worker endpoints; torchrun's ``MASTER_ADDR``), on one host 127.0.0.1; the port is
  ``XRT2PJRT_RENDEZVOUS_PORT``, else ``MASTER_PORT + 1`` (12356 by default: ``xla://``
  serves its own store on ``MASTER_PORT``).

The serving process is one that exists on that host whatever the ordinals are (torch_xla
gives ordinals no fixed link to workers): torchrun's rank 0, else local process 0 of
worker 0. A spawn parent on worker 0 serves instead of its children.

The job's secret (see ``store``): ``XRT2PJRT_JOB_SECRET`` or ``XRT2PJRT_JOB_SECRET_FILE``;
set by the shim's ``xmp.spawn`` for its children on one host; fresh for a process alone;
for the processes of one parent on one host (torchrun, torch_xla's spawn) derived from a key only this user can
read and the parent's process id; on several hosts it must be given.
"""

from __future__ import annotations

import dataclasses
import os

from xrt2pjrt.shim import settings
from xrt2pjrt.shim import topology
from xrt2pjrt.shim.store import secret as store_secret

DEFAULT_MASTER_PORT = 12355  # torch_xla's default for xla:// and its master discovery

# Every variable the description reads: the cache is keyed by their values.
_READS = (
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "TORCHELASTIC_RUN_ID",
    "MASTER_ADDR",
    "MASTER_PORT",
    "PJRT_DEVICE",
    "PJRT_LOCAL_PROCESS_RANK",
    "PJRT_LOCAL_PROCESS_COUNT",
    "CLOUD_TPU_TASK_ID",
    "TPU_ACCELERATOR_TYPE",
    "TPU_WORKER_ID",
    "TPU_WORKER_HOSTNAMES",
    "TPU_HOST_BOUNDS",
    "TPU_CHIPS_PER_HOST_BOUNDS",
    "TPU_PROCESS_BOUNDS",
    "TPU_SKIP_MDS_QUERY",
    settings.RENDEZVOUS_ADDR.name,
    settings.RENDEZVOUS_PORT.name,
    settings.SERVED_STORE.name,
)


class JobError(RuntimeError):
    """The environment describes a job the shim cannot join safely."""


@dataclasses.dataclass(frozen=True)
class Job:
    described_by: str  # what says there is a job: 'torchrun', 'PJRT process variables', ...
    processes: int
    process: int
    local_processes: int
    local_process: int
    hosts: int
    host: int
    store_host: str
    store_port: int
    serves: bool  # this process starts the store when it first needs it
    served_by_parent: bool = False

    def describe(self) -> str:
        where = f" on host {self.host} of {self.hosts}" if self.hosts > 1 else ""
        return f"process {self.process} of {self.processes}{where} ({self.described_by})"


def rendezvous_port(env) -> int:
    explicit = from_setting(settings.RENDEZVOUS_PORT, env)
    if explicit is not None:
        return explicit
    master = env.get("MASTER_PORT", "").strip()
    return (_integer(env, "MASTER_PORT") if master else DEFAULT_MASTER_PORT) + 1


def from_setting(setting: settings.Setting, env=None):
    """``setting``'s value (its default when unset); a value it refuses is a :class:`JobError`."""
    try:
        return setting.read(env)
    except settings.SettingError as error:
        raise JobError(str(error)) from None


def _integer(env, name: str, default: int | None = None) -> int:
    raw = env.get(name, "").strip()
    if not raw and default is not None:
        return default
    try:
        return settings.integer(name, raw)
    except settings.SettingError as error:
        raise JobError(str(error)) from None


def tpu_slice(env) -> topology.Topology | None:
    """The TPU slice under ``PJRT_DEVICE=TPU``; None elsewhere."""
    if env.get("PJRT_DEVICE", "").strip().upper() != "TPU":
        return None
    try:
        return topology.from_env(env)
    except topology.TopologyError:
        return None  # a TPU VM always describes itself; anything else is one host


def from_env(env=None) -> Job:
    env = os.environ if env is None else env
    port = rendezvous_port(env)
    if env.get("TORCHELASTIC_RUN_ID") or all(env.get(name) for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK")):
        processes, process = _integer(env, "WORLD_SIZE"), _integer(env, "RANK")
        local_processes = _integer(env, "LOCAL_WORLD_SIZE", processes)
        hosts = max(1, processes // max(1, local_processes))
        host = _integer(env, "GROUP_RANK", process // max(1, local_processes))
        job = Job(
            "torchrun",
            processes,
            process,
            local_processes,
            _integer(env, "LOCAL_RANK"),
            hosts,
            host,
            env.get("MASTER_ADDR", "127.0.0.1") if hosts > 1 else "127.0.0.1",
            port,
            serves=process == 0,
        )
    elif env.get("PJRT_LOCAL_PROCESS_COUNT"):
        local_processes = _integer(env, "PJRT_LOCAL_PROCESS_COUNT")
        local = _integer(env, "PJRT_LOCAL_PROCESS_RANK", 0)
        tpu = tpu_slice(env)
        hosts, host = (tpu.hosts, tpu.worker_id) if tpu else (1, 0)
        process = _integer(env, "CLOUD_TPU_TASK_ID", host * local_processes + local)
        job = Job(
            "PJRT process variables",
            hosts * local_processes,
            process,
            local_processes,
            local,
            hosts,
            host,
            tpu.hostnames[0] if hosts > 1 else "127.0.0.1",
            port,
            serves=host == 0 and local == 0,
        )
    else:
        tpu = tpu_slice(env)
        if tpu and tpu.hosts > 1:
            job = Job(
                f"TPU slice {tpu.accelerator}",
                tpu.hosts,
                tpu.worker_id,
                1,
                0,
                tpu.hosts,
                tpu.worker_id,
                tpu.hostnames[0],
                port,
                serves=tpu.worker_id == 0,
            )
        else:
            job = Job("one process", 1, 0, 1, 0, 1, 0, "127.0.0.1", port, serves=True)
    served = from_setting(settings.SERVED_STORE, env)
    if served is not None:
        return dataclasses.replace(job, store_host=served[0], store_port=served[1], serves=False, served_by_parent=True)
    explicit = from_setting(settings.RENDEZVOUS_ADDR, env)
    if explicit is not None:
        return dataclasses.replace(job, store_host=explicit[0], store_port=explicit[1])
    return job


_cache: dict[tuple, Job] = {}


def current() -> Job:
    """This process's job (cached per process and per value of the variables it reads)."""
    key = (os.getpid(),) + tuple(os.environ.get(name) for name in _READS)
    job = _cache.get(key)
    if job is None:
        job = _cache[key] = from_env()
    return job


# --- the job's secret ---------------------------------------------------------------------
def secret(job: Job, env=None) -> bytes:
    """The job's secret (see the module docstring); an error saying what to set when a job
    on several hosts has none."""
    env = os.environ if env is None else env
    given = store_secret.job_secret(env)
    if given is not None:
        return given
    if job.processes == 1 and not job.served_by_parent:
        return store_secret.new_secret().encode()  # alone: only this process and the store it starts need it
    if job.hosts == 1:
        return store_secret.derived_for_children_of(os.getppid())
    raise JobError(
        f"this is {job.describe()}: its processes meet in a store at {job.store_host}:{job.store_port}, "
        f"which lets in only processes that hold the job's secret, and none is set. Set "
        f"{settings.JOB_SECRET.name} to the same random value on every host of this job, and a new one for "
        f"each run (or {settings.JOB_SECRET_FILE.name} to a file only you can read), e.g. in the command given "
        "to `gcloud compute tpus tpu-vm ssh --worker=all`: "
        f"{settings.JOB_SECRET.name}=$(python3 -c 'import secrets; print(secrets.token_hex(16))') computed once "
        f"on your machine. Or use {settings.RENDEZVOUS_TRANSPORT.name}=xla, which needs no store."
    )
