"""xrt2pjrt.shim.settings: every XRT2PJRT_* variable is spelled and parsed there, and only there."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from xrt2pjrt.shim import settings

ROOT = Path(__file__).resolve().parents[2]


def _code_strings(path: Path):
    """(line, text) of every string in the code of ``path`` that is not a docstring."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.lineno, node.value


def test_no_code_outside_settings_spells_an_xrt2pjrt_variable():
    """Docs and tests aside: they name the variables as a user does."""
    sources = [
        *ROOT.joinpath("xrt2pjrt").rglob("*.py"),
        *ROOT.joinpath("bench").rglob("*.py"),
        *ROOT.joinpath("tools").rglob("*.py"),
        ROOT / "setup.py",
    ]
    home = ROOT / "xrt2pjrt" / "shim" / "settings.py"
    spelled = [
        f"{path.relative_to(ROOT)}:{line}: {text!r}"
        for path in sources
        if path != home
        for line, text in _code_strings(path)
        if "XRT2PJRT_" in text
    ]
    assert spelled == []


def test_every_setting_has_a_name_of_its_own_and_a_one_line_meaning():
    names = [setting.name for setting in settings.ALL]
    assert len(names) == len(set(names)) and all(name.startswith("XRT2PJRT_") for name in names)
    assert all(setting.meaning and "\n" not in setting.meaning for setting in settings.ALL)
    defined = {name for name, value in vars(settings).items() if isinstance(value, settings.Setting)}
    assert len(defined) == len(settings.ALL)


def test_unset_or_blank_is_the_default_and_a_refused_value_names_the_variable():
    timeout = settings.RENDEZVOUS_TIMEOUT
    assert timeout.read({}) == timeout.read({timeout.name: "  "}) == 300.0
    assert settings.CPU_REPLICAS.read({}) is None
    assert settings.RENDEZVOUS_ADDR.read({settings.RENDEZVOUS_ADDR.name: " [fd00::5]:4000 "}) == ("fd00::5", 4000)
    refused = {
        settings.STORE_MAX_BYTES: "0",
        settings.CPU_REPLICAS: "many",
        settings.RENDEZVOUS_PORT: "x",
        settings.RENDEZVOUS_ADDR: "nowhere",
        settings.RENDEZVOUS_TRANSPORT: "grpc",
        timeout: "-1",
    }
    for setting, value in refused.items():
        with pytest.raises(settings.SettingError) as refusal:
            setting.read({setting.name: value})
        assert setting.name in str(refusal.value) and repr(value) in str(refusal.value)


def test_timeout_setting_is_checked(monkeypatch):
    monkeypatch.setenv(settings.RENDEZVOUS_TIMEOUT.name, "soon")
    with pytest.raises(ValueError, match="XRT2PJRT_RENDEZVOUS_TIMEOUT"):
        settings.RENDEZVOUS_TIMEOUT.read()
    monkeypatch.setenv(settings.RENDEZVOUS_TIMEOUT.name, "12.5")
    assert settings.RENDEZVOUS_TIMEOUT.read() == 12.5
