"""Property tests: generated XRT-era programs (import forms × placements × calls) through
every Python rule. Whatever the combination, the output parses, binds every name it uses,
keeps no removed API, and a second pass changes nothing."""

import builtins
import symtable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xrt2pjrt.registry import Options, all_rules
from xrt2pjrt.python import rewriter as python

OPTIONS = Options(rules=frozenset(rid for rid, rule in all_rules().items() if rule.kind == "python"))

IMPORTS = [
    ("import torch_xla.core.xla_model as xm", "xm"),
    ("from torch_xla.core import xla_model as xm", "xm"),
    ("import torch_xla.core.xla_model as tpu_xm", "tpu_xm"),
    ("from torch_xla.core import xla_model", "xla_model"),
    ("import torch_xla.core.xla_model", "torch_xla.core.xla_model"),
]
CALLS = [
    "{m}.xrt_world_size()",
    "{m}.get_ordinal()",
    "{m}.get_local_ordinal(defval=0)",
    "{m}.xla_device()",
    "{m}.mark_step()",
    "{m}.master_print('x')",
    "{m}.save(state, path)",
    "{m}.get_xla_supported_devices('TPU')",
    "{m}.rendezvous('tag', 'payload')",
    "{m}.optimizer_step(opt)",
]
REMOVED = ("xrt_world_size", "get_ordinal(", "get_local_ordinal", "mark_step", "XRT_", "nprocs=8")
EXTRAS = [
    "os.environ['XRT_TPU_CONFIG'] = 'localservice;0;localhost:51011'",
    "os.environ.setdefault('XRT_WORKERS', 'localservice:0;grpc://localhost:40934')",
    "xmp.spawn(run, args=(), nprocs=8, start_method='fork')",
]


def unbound(code: str) -> set[str]:
    """Names read somewhere that nothing binds (module level, or the enclosing function)."""
    top = symtable.symtable(code, "<generated>", "exec")
    module_names = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}
    missing = set()

    def walk(table):
        for symbol in table.get_symbols():
            if not symbol.is_referenced():
                continue
            name = symbol.get_name()
            local = symbol.is_assigned() or symbol.is_imported() or symbol.is_parameter()
            if table.get_type() == "module" or symbol.is_global():
                if name not in module_names and not hasattr(builtins, name):
                    missing.add(name)
            elif not local and not symbol.is_free() and name not in module_names and not hasattr(builtins, name):
                missing.add(name)
        for child in table.get_children():
            walk(child)

    walk(top)
    return missing


@st.composite
def programs(draw):
    import_line, module = draw(st.sampled_from(IMPORTS))
    local = draw(st.booleans())
    calls = draw(st.lists(st.sampled_from(CALLS), min_size=1, max_size=5))
    extras = draw(st.lists(st.sampled_from(EXTRAS), unique=True, max_size=3))
    lines = ["import os", "import torch_xla.distributed.xla_multiprocessing as xmp"]
    if not local:
        lines.append(import_line)
    lines += ["", "state = path = opt = None", "", "", "def run(index):"]
    if local:
        lines.append(f"    {import_line}")
    lines += [f"    value = {call.format(m=module)}" for call in calls]
    lines += ["", ""] + extras
    return "\n".join(lines) + "\n"


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_generated_programs(source):
    assert not unbound(source)
    outcome = python.rewrite(source, OPTIONS)
    assert python.check(outcome.text) is None
    assert not unbound(outcome.text), outcome.text
    code_lines = [line for line in outcome.text.splitlines() if not line.lstrip().startswith("#")]
    for removed in REMOVED:
        assert not any(removed in line for line in code_lines), outcome.text
    assert python.rewrite(outcome.text, OPTIONS).text == outcome.text
