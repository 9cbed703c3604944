"""The settings env-gone-setting and env-shell-gone-setting remove, and what they say."""

from __future__ import annotations

from xrt2pjrt.python.settings_surface import gone, reading, silently_gone, spelled
from xrt2pjrt.report import Advice
from xrt2pjrt.xrt_variables import is_xrt_era

# The XRT-era ones have rules of their own, which say what replaces them.
NAMES = tuple(sorted(name for name in silently_gone() if not is_xrt_era(name)))


def gone_on(name: str, target: tuple[int, int]) -> bool:
    found = gone(name, target)
    return found is not None and not found.warns


def why(name: str, target: tuple[int, int]) -> str:
    """``XLA_TRIM_GRAPH_SIZE``: "torch_xla 2.9 reads it nowhere (last read by 2.4, ...)"."""
    last = gone(name, target).last
    return (
        f"torch_xla {spelled(target)} reads it nowhere (last read by {spelled(last)}, at "
        f"pytorch/xla {reading(name, last).source})"
    )


def read_advice(name: str, target: tuple[int, int]) -> Advice:
    return Advice(
        f"drop it: torch_xla {spelled(target)} ignores it",
        f"{name}: {why(name, target)}: nothing sets it for the program, and setting it changes nothing",
    )
