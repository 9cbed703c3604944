"""The API surface table (python/api_surface.txt, generated from the released wheels by
tools/api_surface.py) against the installed torch_xla 2.9: its modules, the names in
them, the parameter names of its functions and constructors, and the ``_XLAC`` bindings.
The rules trust this table to say what a release lacks; a wrong entry is either a false
alarm in users' code or a miss."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import pkgutil
import re
import warnings
from pathlib import Path

import pytest

from xrt2pjrt.python import api_surface
from xrt2pjrt.python.api_surface import Lack, entry, keyword_lacks, lacks

LATEST = (2, 9)


def _latest(kind: str | None = None) -> dict[str, api_surface.Entry]:
    out = {}
    for dotted in api_surface.table():
        found = entry(dotted, LATEST)
        if found is not None and (kind is None or found.kind == kind):
            out[dotted] = found
    return out


def test_lookups_name_the_first_missing_part_and_when_it_went():
    gone = lacks("torch_xla.experimental.pjrt.world_size", (2, 9))
    assert (gone.name, gone.history) == ("torch_xla.experimental.pjrt", "removed in 2.5")
    assert lacks("torch_xla.core.xla_model.xrt_world_size", (2, 9)).history == "removed in 2.7"
    assert lacks("torch_xla.core.xla_model.xrt_world_size", (2, 6)) is None
    assert lacks("torch_xla.backends.set_mat_mul_precision", (2, 7)).history == "added in 2.8"
    assert lacks("torch_xla.core.xla_model.CollectiveContext", (2, 1)).history == "in no torch_xla 2.x release"
    assert lacks("torch_xla._XLAC._xla_set_use_full_mat_mul_precision", (2, 9)).history == "removed in 2.5"
    # what the table cannot know is never said to be missing
    assert lacks("torch_xla._XLAC.XlaBuilder", (2, 9)) is None  # a class of the extension: not listed
    assert lacks("torch_xla.experimental.pjrt.world_size", (2, 4)) is None  # 2.1-2.4 register names at run time
    assert lacks("torch_xla.core.xla_model.all_reduce.__name__", (2, 9)) is None
    assert lacks("torchvision.models", (2, 9)) is None


def test_call_arguments_are_held_to_the_signature_of_the_release():
    (cctx,) = keyword_lacks("torch_xla.core.xla_model.all_reduce", ["groups", "cctx"], 2, (2, 9))
    assert cctx == Lack("torch_xla.core.xla_model.all_reduce(cctx=)", (2, 9), frozenset())
    loader, cpu_loader, devices = keyword_lacks(
        "torch_xla.distributed.parallel_loader.ParallelLoader", ["loader"], 0, (2, 9)
    )
    assert loader.name.endswith("(loader=)") and loader.history == "removed in 2.5"
    assert cpu_loader.name.endswith("(cpu_loader)") and max(cpu_loader.had) == (2, 4)  # needed, not passed, from 2.5
    assert devices.name.endswith("(devices)")
    assert [
        lack.name
        for lack in keyword_lacks("torch_xla.distributed.parallel_loader.ParallelLoader", ["loader"], 0, (2, 4))
    ] == ["torch_xla.distributed.parallel_loader.ParallelLoader(devices)"]
    # a parameter it needs: torch_xla.amp.autocast was torch.cuda.amp.autocast up to 2.0, with no device
    (device,) = keyword_lacks("torch_xla.amp.autocast", ["enabled"], 0, (2, 9))
    assert device.name == "torch_xla.amp.autocast(device)"
    assert (
        keyword_lacks("torch_xla.amp.autocast", [], 1, (2, 9))
        == keyword_lacks("torch_xla.amp.autocast", [], None, (2, 9))
        == []
    )
    (extra,) = keyword_lacks("torch_xla.device", [], 2, (2, 9))
    assert extra.name == "torch_xla.device(argument 2)"
    # **kwargs, *args and unknown signatures take anything
    assert keyword_lacks("torch_xla._internal.pjrt.run_multiprocess", ["anything"], 9, (2, 9)) == []


# --- against the installed torch_xla -----------------------------------------------------

xla = pytest.mark.xla


@pytest.fixture(scope="module")
def torch_xla():
    import torch_xla

    return torch_xla


@pytest.mark.slow
@xla
def test_the_installed_torch_xla_is_the_tables_latest(torch_xla):
    assert tuple(int(p) for p in torch_xla.__version__.split(".")[:2]) == LATEST


@xla
def test_modules_are_the_installed_packages_modules(torch_xla):
    installed = {"torch_xla"} | {m.name for m in pkgutil.walk_packages(torch_xla.__path__, "torch_xla.")}
    listed = {d for d, e in _latest("module").items() if d.startswith("torch_xla") and _is_module_of_its_own(d)}
    assert listed == installed


def _is_module_of_its_own(dotted: str) -> bool:
    """A module the table lists under its own name, not one a module imports (``xm.os``)."""
    spec = importlib.util.find_spec("torch_xla")
    root = Path(spec.origin).parent
    relative = Path(*dotted.split(".")[1:])
    return (
        dotted == "torch_xla"
        or (root / relative).with_suffix(".py").is_file()
        or (root / relative / "__init__.py").is_file()
    )


def _imported_modules() -> dict[str, object]:
    """The installed modules that import here (some need jax, tensorflow, a GPU ...)."""
    out = {}
    for dotted in sorted(_latest("module")):
        if not dotted.startswith("torch_xla") or dotted == api_surface.XLAC or not _is_module_of_its_own(dotted):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out[dotted] = importlib.import_module(dotted)
        except Exception:  # noqa: BLE001  optional dependencies
            continue
    return out


@pytest.fixture(scope="module")
def modules(torch_xla):
    found = _imported_modules()
    assert len(found) > 60, "most of torch_xla's modules import on a CPU host"
    return found


@pytest.mark.slow
@xla
def test_every_name_listed_in_a_module_is_there(modules):
    missing = []
    for dotted, module in modules.items():
        maybe = _bound_conditionally(module)
        for name in _listed_names(dotted):
            if not hasattr(module, name) and name not in maybe and not _is_module_of_its_own(f"{dotted}.{name}"):
                missing.append(f"{dotted}.{name}")
    assert missing == []


def _bound_conditionally(module) -> set[str]:
    """Names a module binds under an ``if`` or in a ``try`` (an optional dependency, a
    setting): the table lists them, as a program may find them there."""
    tree = ast.parse(Path(module.__file__).read_text())
    out = set()
    for statement in tree.body:
        if isinstance(statement, (ast.If, ast.Try)):
            for node in ast.walk(statement):
                if isinstance(node, ast.alias):
                    out.add((node.asname or node.name).split(".")[0])
                elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                    out.add(node.name)
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    out.add(node.id)
    return out


@pytest.mark.slow
@xla
def test_every_name_a_closed_module_has_is_listed(modules):
    # An unlisted name would be reported as missing in users' code: a false alarm.
    unlisted = []
    for dotted, module in modules.items():
        if entry(dotted, LATEST).open:
            continue
        listed = set(_listed_names(dotted))
        for name in vars(module):
            if name.startswith(("__", "@")) or name in listed:  # (@py_builtins: pytest's assertion rewriting)
                continue
            if inspect.ismodule(getattr(module, name)) and getattr(module, name).__name__ == f"{dotted}.{name}":
                continue  # a submodule, set as an attribute when it was imported: listed as a module
            unlisted.append(f"{dotted}.{name}")
    assert unlisted == []


def _listed_names(module: str) -> list[str]:
    prefix = module + "."
    return [
        d[len(prefix) :]
        for d in _latest()
        if d.startswith(prefix) and "." not in d[len(prefix) :] and _latest()[d].kind != "member"
    ]


@xla
def test_parameter_names_are_the_installed_signatures(modules):
    wrong, compared = [], 0
    for dotted, found in _latest().items():
        if found.kind not in ("def", "class") or found.params is None:
            continue
        parent, _, name = dotted.rpartition(".")
        if parent not in modules:
            continue
        obj = getattr(modules[parent], name, None)
        if obj is None:
            continue  # bound conditionally, see above
        try:
            signature = inspect.signature(obj)
        except (TypeError, ValueError):
            continue
        compared += 1
        if _spelled(signature) != list(found.params):
            wrong.append((dotted, _spelled(signature), found.params))
    assert wrong == []
    assert compared > 400, compared


def _spelled(signature: inspect.Signature) -> list[str]:
    """A signature as the table spells it: ``a, b=, /, *args, c=, **kwargs``."""
    words, star = [], False
    for p in signature.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            words.append(f"*{p.name}")
            star = True
            continue
        if p.kind is p.KEYWORD_ONLY and not star:
            words.append("*")
            star = True
        if p.kind is p.VAR_KEYWORD:
            words.append(f"**{p.name}")
            continue
        words.append(p.name + ("=" if p.default is not p.empty else ""))
        if p.kind is p.POSITIONAL_ONLY and not any(
            q.kind is q.POSITIONAL_ONLY for q in list(signature.parameters.values())[len(words) :]
        ):
            words.append("/")
    return words


@xla
def test_the_xlac_bindings_listed_are_every_binding_and_few_else(torch_xla):
    shaped = {name for name in dir(torch_xla._XLAC) if re.fullmatch(api_surface.BINDING, name)}
    listed = {d.rpartition(".")[2] for d in _latest() if d.startswith(api_surface.XLAC + ".")}
    assert shaped <= listed
    # the strings of the extension that look like bindings and are not (aten op names ...)
    assert len(listed - shaped) < 2 * len(shaped)
