"""``xrt2pjrt doctor``: read the environment a PJRT program is about to run in, say what to fix.

It reports the installed torch / torch_xla / libtpu (from package metadata: nothing is
imported, so it works where torch_xla is absent or broken), ``PJRT_DEVICE`` and the device
torch_xla 2.9 will pick when it is unset, XRT-era variables still set (torch_xla 2.1+
ignores them without a word), and the TPU slice as torch_xla will lay it out
(``xrt2pjrt.shim.topology``: from the environment, else the GCE metadata server, which is
asked only on a GCE machine, with a short timeout, and never under ``TPU_SKIP_MDS_QUERY``).

Every finding is a :class:`Problem`; ``must_fix`` ones make the command exit 1.
"""

from __future__ import annotations

import glob
import importlib.metadata
import importlib.util
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from xrt2pjrt import xrt_variables
from xrt2pjrt.meanings.settings import WARNED
from xrt2pjrt.python import settings_surface
from xrt2pjrt.shim import topology as topology_module

EXIT_HEALTHY, EXIT_MUST_FIX = 0, 1

# torch_xla 2.9's ``_internal/tpu.py``: how it counts TPU chips on the PCI bus before it
# picks a default device (tests/runtime/test_doctor.py checks these against the installed torch_xla).
GOOGLE_PCI_VENDOR_ID = "0x1ae0"
TPU_PCI_DEVICE_IDS = ("0x0027", "0x005e", "0x0063", "0x006f", "0x0056", "0x0062", "0x0076")
PCI_DEVICES = "/sys/bus/pci/devices"
DMI_PRODUCT_NAME = "/sys/class/dmi/id/product_name"


# torch_xla's ``configure_topology`` gives each process its own value of these with
# ``os.environ.setdefault``: a value inherited from the launching shell wins in every process.
PER_PROCESS_VARIABLES = ("CLOUD_TPU_TASK_ID", "TPU_VISIBLE_CHIPS", "TPU_PROCESS_PORT", "PJRT_LOCAL_PROCESS_RANK")


@dataclass(frozen=True)
class Problem:
    message: str
    fix: str
    must_fix: bool = True


@dataclass(frozen=True)
class XrtLeftover:
    name: str
    value: str
    replacement: str


@dataclass(frozen=True)
class DeviceChoice:
    """The PJRT device torch_xla will run on, and why."""

    device: str | None  # 'TPU', 'CPU', 'NEURON', ... ; None: torch_xla will not pick one
    explicit: bool  # PJRT_DEVICE is set
    reason: str


@dataclass
class Diagnosis:
    versions: dict[str, str | None]
    pjrt_device: str | None
    device: DeviceChoice
    xrt_env_leftovers: list[XrtLeftover]
    topology: topology_module.Topology | None
    topology_source: str | None
    problems: list[Problem] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return EXIT_MUST_FIX if any(p.must_fix for p in self.problems) else EXIT_HEALTHY


# --- the facts --------------------------------------------------------------------------
def _version(*distributions: str) -> str | None:
    for name in distributions:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def installed_versions() -> dict[str, str | None]:
    """Versions of the packages a PJRT program runs on; None where absent."""
    return {
        "torch": _version("torch"),
        "torch_xla": _version("torch_xla", "torch-xla"),
        "libtpu": _version("libtpu", "libtpu-nightly"),
    }


def _libtpu_found(env: Mapping[str, str], versions: Mapping[str, str | None]) -> bool:
    """torch_xla's ``_setup_tpu_vm_library_path``: TPU_LIBRARY_PATH, a bundled libtpu.so, or
    the libtpu package."""
    if env.get("TPU_LIBRARY_PATH") or versions.get("libtpu"):
        return True
    spec = importlib.util.find_spec("torch_xla") if versions.get("torch_xla") else None
    locations = spec.submodule_search_locations if spec else None
    return any((Path(location) / "lib" / "libtpu.so").is_file() for location in locations or ())


# The release an install hint names when no PJRT-era torch or torch_xla is installed: the target.
TARGET_RELEASE = (2, 9)


def install_command(versions: Mapping[str, str | None], tpu: bool) -> str:
    """The pip command that installs torch and torch_xla of one release (torch_xla does not
    pull torch in): the newer of the two installed, from 2.1 (PJRT) up to TARGET_RELEASE,
    else TARGET_RELEASE; with torch_xla's [tpu] extra (libtpu) on a TPU VM."""
    releases = [_major_minor(v) for v in (versions.get("torch"), versions.get("torch_xla")) if v]
    major, minor = max((r for r in releases if (2, 1) <= r <= TARGET_RELEASE), default=TARGET_RELEASE)
    version = f"{major}.{minor}.0"
    return f"pip install torch=={version} " + (f"'torch_xla[tpu]=={version}'" if tpu else f"torch_xla=={version}")


def tpu_chips_on_pci_bus(pci_devices: str = PCI_DEVICES) -> int:
    count = 0
    for vendor in glob.glob(os.path.join(pci_devices, "*", "vendor")):
        try:
            if Path(vendor).read_text().strip() != GOOGLE_PCI_VENDOR_ID:
                continue
            device_id = (Path(vendor).parent / "device").read_text().strip()
        except OSError:
            continue
        count += device_id in TPU_PCI_DEVICE_IDS
    return count


def runtime_device(
    env: Mapping[str, str], versions: Mapping[str, str | None], pci_devices: str = PCI_DEVICES
) -> DeviceChoice:
    """What ``torch_xla.runtime._maybe_select_default_device`` (2.9) will do."""
    requested = env.get("PJRT_DEVICE", "").strip()
    if requested:
        return DeviceChoice(requested.split("_")[0], True, f"PJRT_DEVICE={requested}")
    if env.get("PJRT_SELECT_DEFAULT_DEVICE", "1") == "0":
        return DeviceChoice(None, False, "PJRT_DEVICE is unset and PJRT_SELECT_DEFAULT_DEVICE=0")
    chips = tpu_chips_on_pci_bus(pci_devices)
    if _libtpu_found(env, versions) and chips:
        return DeviceChoice("TPU", False, f"PJRT_DEVICE is unset; libtpu and {chips} TPU chips found")
    if not chips:
        why = "no TPU chips on the PCI bus"
    else:
        why = f"{chips} TPU chips on the PCI bus but no libtpu ({install_command(versions, tpu=True)})"
    return DeviceChoice("CPU", False, f"PJRT_DEVICE is unset and {why}: torch_xla defaults to CPU")


def xrt_env_leftovers(env: Mapping[str, str]) -> list[XrtLeftover]:
    return [
        XrtLeftover(name, env[name], str(xrt_variables.replacement(name, env[name])))
        for name in sorted(env)
        if xrt_variables.is_xrt_era(name)
    ]


def on_gce(product_name: str = DMI_PRODUCT_NAME) -> bool:
    """A GCE VM says so in its DMI product name; elsewhere the metadata server is not asked."""
    try:
        return "Google" in Path(product_name).read_text()
    except OSError:
        return False


def metadata_server() -> Callable[[str], str | None] | None:
    """The GCE metadata server on a GCE machine; None elsewhere, where asking could only wait."""
    return topology_module.gce_metadata if on_gce() else None


def read_topology(
    env: Mapping[str, str], metadata: Callable[[str], str | None] | None
) -> tuple[topology_module.Topology | None, str | None, str | None]:
    """(topology, where its facts came from, why there is none)."""
    if env.get("TPU_SKIP_MDS_QUERY"):
        metadata = None
    try:
        found = topology_module.from_env(env, metadata=metadata)
    except topology_module.TopologyError as error:
        return None, None, str(error)
    source = "environment" if env.get("TPU_ACCELERATOR_TYPE") else "GCE metadata"
    return found, source, None


# --- the judgement ----------------------------------------------------------------------
def _major_minor(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version)[:2])


def _version_problems(versions: Mapping[str, str | None], tpu: bool) -> list[Problem]:
    torch, torch_xla = versions["torch"], versions["torch_xla"]
    install = install_command(versions, tpu)
    problems = []
    if torch_xla is None:
        problems.append(Problem("torch_xla is not installed", install))
    elif torch is None:
        problems.append(Problem("torch is not installed, but torch_xla is", install))
    elif _major_minor(torch) != _major_minor(torch_xla):
        problems.append(
            Problem(
                f"torch {torch} and torch_xla {torch_xla} are different releases: torch_xla only "
                "works with the torch release it was built against",
                install,
            )
        )
    if torch_xla and _major_minor(torch_xla) < (2, 1):
        problems.append(
            Problem(f"torch_xla {torch_xla} still has the XRT runtime: XRT variables select it there", install)
        )
    return problems


def _device_problems(
    choice: DeviceChoice, leftovers: list[XrtLeftover], env: Mapping[str, str], versions: Mapping[str, str | None]
) -> list[Problem]:
    names = {leftover.name for leftover in leftovers}
    problems = []
    if choice.device is None:
        problems.append(
            Problem(choice.reason + ": torch_xla has no device to run on", "set PJRT_DEVICE=TPU or PJRT_DEVICE=CPU")
        )
    elif not choice.explicit:
        wanted_tpu = "XRT_TPU_CONFIG" in names and choice.device != "TPU"
        problems.append(
            Problem(
                choice.reason + (" although XRT_TPU_CONFIG asks for a TPU" if wanted_tpu else ""),
                "set PJRT_DEVICE=TPU"
                if wanted_tpu or choice.device == "TPU"
                else f"set PJRT_DEVICE={choice.device} (or TPU on a TPU VM) so the choice is yours",
                must_fix=wanted_tpu,
            )
        )
    if choice.device in ("GPU", "CUDA"):
        problems.append(
            Problem(
                f"PJRT_DEVICE={env.get('PJRT_DEVICE')}: torch_xla 2.9 removed CUDA support",
                "use torch_xla 2.8 for CUDA, or PJRT_DEVICE=TPU/CPU",
            )
        )
    if choice.device == "TPU" and not _libtpu_found(env, versions):
        problems.append(Problem("PJRT_DEVICE is TPU but libtpu is not installed", install_command(versions, tpu=True)))
    if choice.device == "CPU" and int(env.get("CPU_NUM_DEVICES", "1") or 1) > 1:
        problems.append(
            Problem(
                f"CPU_NUM_DEVICES={env['CPU_NUM_DEVICES']}: torch_xla 2.9 aborts in any collective "
                "with two or more CPU devices in one process",
                "unset CPU_NUM_DEVICES; for several CPU replicas use the shim's CPU replica mode "
                "(xmp.spawn(fn, nprocs=N) from xrt2pjrt.shim, or xrt2pjrt verify --nprocs N)",
                must_fix=False,
            )
        )
    return problems


def _setting_problems(env: Mapping[str, str], versions: Mapping[str, str | None]) -> list[Problem]:
    """Settings the installed torch_xla warns about, or reads nowhere though an earlier release
    read them (python/settings_surface.txt); the XRT-era ones are the leftovers'."""
    release = _major_minor(versions["torch_xla"] or "")
    problems = []
    for name in sorted(env):
        if xrt_variables.is_xrt_era(name) or len(release) != 2:
            continue
        state, spelled = settings_surface.status(name, release), f"{release[0]}.{release[1]}"
        gone = settings_surface.gone(name, release)
        if state == "warns" and name in WARNED:
            problems.append(
                Problem(
                    f"{name} is set: torch_xla {spelled} only warns about it, and it has no effect",
                    f"unset {name}: {WARNED[name].more}",
                )
            )
        elif state == "deprecated" and name in WARNED:
            problems.append(
                Problem(
                    f"{name} is set: torch_xla {spelled} warns that it is deprecated", WARNED[name].more, must_fix=False
                )
            )
        elif name in settings_surface.silently_gone() and gone is not None:
            problems.append(
                Problem(f"{name} is set: {gone.history}, so it does nothing", f"unset {name}", must_fix=False)
            )
    return problems


def _topology_problems(topology, error: str | None, choice: DeviceChoice, env: Mapping[str, str]) -> list[Problem]:
    if topology is None:
        if choice.device == "TPU" or env.get("TPU_ACCELERATOR_TYPE"):
            return [
                Problem(
                    f"cannot lay out the TPU slice: {error}",
                    "on a TPU VM check the metadata server; elsewhere describe the slice "
                    "with TPU_SKIP_MDS_QUERY=1 TPU_ACCELERATOR_TYPE, TPU_WORKER_ID, "
                    "TPU_WORKER_HOSTNAMES (and TPU_HOST_BOUNDS, TPU_CHIPS_PER_HOST_BOUNDS)",
                )
            ]
        return []
    problems = []
    if topology.processes_per_host > 1:
        inherited = [name for name in PER_PROCESS_VARIABLES if name in env]
        if inherited:
            problems.append(
                Problem(
                    f"{', '.join(inherited)} set in the launching environment: torch_xla sets "
                    f"{'them' if len(inherited) > 1 else 'it'} per process with setdefault, so all "
                    f"{topology.processes_per_host} processes of this host would share one value",
                    f"unset {' '.join(inherited)}",
                )
            )
    if topology.hosts > 1 and len(topology.hostnames) < topology.hosts:
        problems.append(
            Problem(
                f"a {topology.hosts}-host slice without worker hostnames: the processes cannot find each other",
                "set TPU_WORKER_HOSTNAMES (on a TPU VM the metadata server has them)",
            )
        )
    return problems


def diagnose(
    env: Mapping[str, str] | None = None,
    metadata: Callable[[str], str | None] | None = None,
    pci_devices: str = PCI_DEVICES,
) -> Diagnosis:
    """The whole reading. ``metadata`` defaults to the GCE metadata server on GCE only."""
    env = dict(os.environ if env is None else env)
    metadata = metadata or metadata_server()
    versions = installed_versions()
    choice = runtime_device(env, versions, pci_devices)
    leftovers = xrt_env_leftovers(env)
    found, source, error = read_topology(env, metadata)
    on_tpu = choice.device == "TPU" or tpu_chips_on_pci_bus(pci_devices) > 0
    problems = _version_problems(versions, on_tpu)
    problems += [
        Problem(
            f"{leftover.name} is set: torch_xla 2.1+ ignores it without a word",
            f"unset {leftover.name}; {leftover.replacement}",
        )
        for leftover in leftovers
    ]
    problems += _device_problems(choice, leftovers, env, versions)
    problems += _setting_problems(env, versions)
    problems += _topology_problems(found, error, choice, env)
    return Diagnosis(versions, env.get("PJRT_DEVICE"), choice, leftovers, found, source, problems)


# --- rendering --------------------------------------------------------------------------
def topology_record(found: topology_module.Topology) -> dict:
    return {
        "accelerator": found.accelerator,
        "generation": found.generation,
        "hosts": found.hosts,
        "hostnames": list(found.hostnames),
        "worker_id": found.worker_id,
        "chips_per_host": found.chips_per_host,
        "processes_per_host": found.processes_per_host,
        "devices_per_process": found.devices_per_process,
        "world_size": found.world_size,
        "local_process_task_ids": found.local_process_task_ids,
    }


def to_record(diagnosis: Diagnosis) -> dict:
    return {
        "versions": diagnosis.versions,
        "pjrt_device": diagnosis.pjrt_device,
        "runtime_device": asdict(diagnosis.device),
        "xrt_env_leftovers": [asdict(leftover) for leftover in diagnosis.xrt_env_leftovers],
        "topology": topology_record(diagnosis.topology) if diagnosis.topology else None,
        "topology_source": diagnosis.topology_source,
        "problems": [asdict(problem) for problem in diagnosis.problems],
        "healthy": diagnosis.exit_code == EXIT_HEALTHY,
    }


def _span(ids: list[int]) -> str:
    return f"{ids[0]}–{ids[-1]}" if len(ids) > 1 else str(ids[0])


def _per_chip(found: topology_module.Topology) -> str:
    if found.processes_per_host == found.chips_per_host:
        return "one per chip"
    return f"{found.chips_per_host} chips; TPU_PROCESS_BOUNDS limits the processes"


def render(diagnosis: Diagnosis) -> str:
    lines = ["Packages"]
    for name, version in diagnosis.versions.items():
        lines.append(f"  {name:<12}{version or 'absent'}")
    choice = diagnosis.device
    lines += [
        "",
        "Runtime",
        f"  PJRT_DEVICE {diagnosis.pjrt_device or 'unset'}",
        f"  device      {choice.device or 'none'} ({choice.reason})",
    ]
    lines += ["", "XRT variables still set (ignored since torch_xla 2.1)"]
    lines += [f"  {leftover.name}={leftover.value}" for leftover in diagnosis.xrt_env_leftovers] or ["  none"]
    found = diagnosis.topology
    lines += ["", "TPU topology"]
    if found:
        hosts = ", ".join(found.hostnames) if found.hosts > 1 else "this machine"
        lines += [
            f"  read from            {diagnosis.topology_source}",
            f"  accelerator          {found.accelerator} ({found.generation})",
            f"  hosts                {found.hosts} ({hosts})",
            f"  this worker          {found.worker_id}",
            f"  processes per host   {found.processes_per_host} ({_per_chip(found)})",
            f"  devices per process  {found.devices_per_process}"
            + (" (TensorCores of a chip: one thread each)" if found.devices_per_process > 1 else ""),
            f"  world size           {found.world_size} = {found.hosts} × {found.processes_per_host}"
            f" × {found.devices_per_process}",
            f"  task ids here        {_span(found.local_process_task_ids)} (CLOUD_TPU_TASK_ID)",
        ]
    else:
        lines.append("  no TPU described by the environment or the metadata server")
    must = [p for p in diagnosis.problems if p.must_fix]
    advice = [p for p in diagnosis.problems if not p.must_fix]
    for title, problems in (("To fix", must), ("Worth a look", advice)):
        if problems:
            lines += ["", title]
            for number, problem in enumerate(problems, 1):
                lines += [f"  {number}. {problem.message}", f"     → {problem.fix}"]
    lines += ["", "Healthy." if not must else f"{len(must)} thing(s) to fix."]
    return "\n".join(lines)
