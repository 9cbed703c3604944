"""Jsonnet configs (``*.jsonnet``, ``*.libsonnet``): reported, never rewritten (text/configs.py)."""

from __future__ import annotations

from xrt2pjrt.registry import Options
from xrt2pjrt.rewriters import Outcome
from xrt2pjrt.text.configs import check, report

__all__ = ["check", "rewrite"]


def rewrite(text: str, options: Options) -> Outcome:
    return report(text, options, "a jsonnet config")
