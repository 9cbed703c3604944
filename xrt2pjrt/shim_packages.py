"""The shim's two package names: ``xrt2pjrt.shim``, installed with this tool, and
``xrt2pjrt_shim``, the copy ``migrate --write`` carries into a project (carry.py), which
migrated code imports so that the job's machines need nothing installed but torch and
torch_xla. The same modules, under either name."""

from __future__ import annotations

INSTALLED = "xrt2pjrt.shim"
CARRIED = "xrt2pjrt_shim"


def carried_name(name: str) -> str | None:
    """The name in the carried copy of ``name``, a module of the installed shim; None for
    any other name."""
    if name == INSTALLED or name.startswith(f"{INSTALLED}."):
        return CARRIED + name[len(INSTALLED) :]
    return None


def installed_name(name: str) -> str:
    """``name`` with the carried copy's name spelled as the installed package's."""
    if name == CARRIED or name.startswith(f"{CARRIED}."):
        return INSTALLED + name[len(CARRIED) :]
    return name
