"""One entry of the same-name table: see the package docstring."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Meaning:
    name: str  # as code writes it: GPU_NUM_DEVICES, xm.xla_device(n), --conda-env
    under_xrt: str  # what it did under XRT (torch_xla 1.x)
    on_target: tuple[tuple[str, str], ...]  # (releases, what it does there): ("2.1-2.9", "...")
    action: str  # the rule id that rewrites or reports it
    checked: str  # "run: tests/...::test_x" or "source: torch_xla@v2.9.0 path:line"
