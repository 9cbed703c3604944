"""``torch_xla.distributed.parallel_loader`` as XRT-era programs call it.

``import xrt2pjrt.shim.parallel_loader as pl``: every public name of the installed module
passes through; ``ParallelLoader`` also takes its first argument by XRT's keyword,
``loader=`` (torch_xla 2.x renamed it ``cpu_loader=``). ``MpDeviceLoader`` and
``PerDeviceLoader`` are torch_xla's own.
"""

from __future__ import annotations

from torch_xla.distributed import parallel_loader as _pl


class ParallelLoader(_pl.ParallelLoader):
    """torch_xla's ParallelLoader; ``loader=`` (XRT) and ``cpu_loader=`` (2.x) both name the
    wrapped DataLoader."""

    def __init__(self, loader=None, devices=None, *args, cpu_loader=None, **kwargs):
        if (loader is None) == (cpu_loader is None):
            raise TypeError("ParallelLoader() takes the DataLoader once: loader= (XRT) or cpu_loader= (torch_xla 2.x)")
        if devices is None:
            raise TypeError("ParallelLoader() missing the devices")
        super().__init__(loader if cpu_loader is None else cpu_loader, devices, *args, **kwargs)


def __getattr__(name: str):
    return getattr(_pl, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(dir(_pl)))
