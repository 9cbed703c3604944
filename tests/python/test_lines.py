"""Findings name the line of the code they are about, wherever it sits: the engine takes
lines from ``ast`` statements (python/rewriter.py, _Lines), which must match libcst's layout
for ``a; b``, one-line bodies, ``elif`` chains, try/except/else/finally, with, match,
decorators, folded quiet statements and code spread over several lines."""

from xrt2pjrt.registry import Options, all_rules
from xrt2pjrt.python import rewriter as python
from python_migrate import migrate

OPTIONS = Options(rules=frozenset(rid for rid, rule in all_rules().items() if rule.kind == "python"))

SOURCE = '''\
import torch_xla.core.xla_model as xm; import os
@xm.deco(
   xm.xrt_world_size())
def f(x): return xm.xrt_world_size(); y = 1
def quiet():
    a = 1; b = 2
    if a: c = 3; d = 4
    elif b: e = 5
    else: g = 6
    try: h = 1
    except E: i = 2
    else: j = 3
    finally: k = 4
    return a
if os.environ.get("A"): x = 1; n = xm.xrt_world_size(
   )
elif x:
    n = xm.xrt_world_size()
else:
    if y: xm.xrt_world_size()
    elif z: xm.xrt_world_size()
try: xm.xrt_world_size()
except (ValueError,
        TypeError) as e: xm.xrt_world_size()
else: xm.xrt_world_size()
finally:
    xm.xrt_world_size()
for i in range(3): x = 1; \\
    xm.xrt_world_size()
while x: x = 0; xm.xrt_world_size(); break
with open(a) as a, \\
     open(b) as b: xm.xrt_world_size()
async def g():
    async with h(): xm.xrt_world_size()
    await (
        xm.xrt_world_size())
match x:
    case [x, y]: xm.xrt_world_size()
    case {"a": 1}:
        xm.xrt_world_size()
    case _ if x: y = 1; xm.xrt_world_size()
class C(Base,
        metaclass=xm.xrt_world_size()):
    def quiet2(self): return 1
    @property
    def loud(self):
        s = """
        several
        lines""" ; t = xm.xrt_world_size(
        )
        return (xm.
           xrt_world_size())
x = [xm.xrt_world_size() for _ in
     range(3)]; lam = lambda: xm.xrt_world_size()
'''


def test_findings_name_the_line_of_their_code():
    expected = [n for n, line in enumerate(SOURCE.splitlines(), 1) for _ in range(line.count("xrt_world_size"))]
    # ``(xm.\n xrt_world_size())``: the call begins on the line of ``xm``
    expected[expected.index(52)] = 51
    outcome = python.rewrite(SOURCE, OPTIONS)
    lines = [f.line for f in outcome.changes if "xrt_world_size" in f.message]
    assert sorted(lines) == expected


def test_findings_carry_original_line_numbers():
    outcome = migrate("import torch_xla.core.xla_model as xm\n\n\nn = xm.xrt_world_size()\n")
    assert [(f.rule, f.line) for f in outcome.changes] == [("api-world-size", 4)]
