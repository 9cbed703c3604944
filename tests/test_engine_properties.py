"""Property-based tests of the engine: random but valid programs around XRT constructs.

Hypothesis writes modules from blocks of ordinary code (comments, decorators, classes,
odd formatting, names that collide with what the rules import) and blocks of XRT-era
calls, placed at module level or nested in functions, classes, loops and ``with``. Files
go through the real engine (codemod.plan/apply) in every encoding a user may have:
UTF-8, UTF-8 with a BOM, Latin-1 and cp1252 declared by a PEP 263 cookie, LF or CRLF.

What must hold for every such file: the output compiles, a second pass changes nothing,
every block of ordinary code is still there byte for byte and in order, and the bytes on
disk keep the encoding, the BOM and the line endings.
"""

from __future__ import annotations

import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xrt2pjrt import codemod, report
from xrt2pjrt.registry import Options, select

OPTIONS = Options(rules=select(None, None))
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Names that read like user code; some are what the rules like to import as (xr, xm).
identifiers = st.sampled_from(["xr", "runtime", "device", "world", "rank", "train", "model", "xm2", "step", "n"])
# Text for comments and strings, including letters outside ASCII that every encoding here has.
words = st.text(st.sampled_from("abc xyz_-.é ñ ü ß"), min_size=1, max_size=20).map(str.strip).filter(bool)


@dataclass(frozen=True)
class Block:
    text: str
    ordinary: bool  # no XRT construct: must come out byte for byte


@st.composite
def ordinary_blocks(draw) -> Block:
    name, other, word = draw(identifiers), draw(identifiers), draw(words)
    template = draw(st.sampled_from([
        "{name} = ({n} +\n     {n})  # {word}\n",
        "# {word}\ndef {name}(a, b=1, *args, **kw):\n    '''{word}'''\n    return a\n",
        "@staticmethod\n@{other}.register(\"{word}\")\nclass {Name}  (object) :\n\n    x = [1,\n         2,]\n",
        "if {name}:\n    pass\nelif not {other}:  # {word}\n    {name} = '{word}'\nelse :\n    {name} = {n}\n",
        "{name} = {{'{word}': [{n}, {n}],\n    'k' : lambda q : q}}\n",
        "for {name} in range({n}):\n    print({name}, sep = ''); continue\n",
        "{name} = \\\n    {n}\n",
    ]))  # fmt: skip
    text = template.format(name=name, other=other, Name=name.title(), word=word, n=draw(st.integers(0, 99)))
    return Block(text, ordinary=True)


@st.composite
def xrt_blocks(draw) -> Block:
    call = draw(st.sampled_from([
        "n = xm.xrt_world_size()\n",
        "rank = xm.get_ordinal( )  # which replica\n",
        "device = xm.xla_device()\n",
        "a = 1; b = xm.get_local_ordinal()\n",
        "total = (\n    xm.xrt_world_size()\n    + 1)\n",
        "xm.mark_step()  # {word}\n",
        "xmp.spawn(main,  # the entry point\n          args=(), nprocs=8, start_method='fork')\n",
        "if xm.is_master_ordinal():\n    print(xm.get_ordinal())\n",
    ]))  # fmt: skip
    call = call.format(word=draw(words).replace("'", ""))
    nest = draw(st.sampled_from([
        "{body}",
        "def main(index):\n{body}",
        "@decorator\ndef main(index, *args):\n    '''doc'''\n{body}",
        "class Trainer:\n    def fit(self):\n{body}",
        "for _ in range(3):\n{body}",
        "with open('x') as f:\n{body}",
        "try:\n{body}except ImportError:\n    pass\n",
    ]))  # fmt: skip
    depth = nest.count("\n    def") + 1 if "{body}" != nest else 0
    body = textwrap.indent(call, "    " * depth) if depth else call
    return Block(nest.format(body=body), ordinary=False)


HEADER = "import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n"


@st.composite
def programs(draw) -> list[Block]:
    blocks = draw(st.lists(st.one_of(ordinary_blocks(), xrt_blocks()), min_size=1, max_size=8))
    if all(block.ordinary for block in blocks):
        blocks.append(draw(xrt_blocks()))
    return blocks


@dataclass(frozen=True)
class Encoding:
    name: str  # codec of the file's bytes
    cookie: bool  # declared by a PEP 263 comment
    bom: bool


ENCODINGS = st.sampled_from([
    Encoding("utf-8", cookie=False, bom=False),
    Encoding("utf-8", cookie=False, bom=True),
    Encoding("latin-1", cookie=True, bom=False),
    Encoding("cp1252", cookie=True, bom=False),
])  # fmt: skip


def source_of(blocks: list[Block], encoding: Encoding) -> str:
    cookie = f"# -*- coding: {encoding.name} -*-\n" if encoding.cookie else ""
    return cookie + HEADER + "\n".join(block.text for block in blocks)


def to_bytes(text: str, encoding: Encoding, crlf: bool) -> bytes:
    if crlf:
        text = text.replace("\n", "\r\n")
    data = text.encode(encoding.name)
    return b"\xef\xbb\xbf" + data if encoding.bom else data


def migrate_file(data: bytes) -> tuple[bytes, codemod.Plan]:
    """Plan and write one file the way `migrate --write` does; the bytes on disk after."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "train.py")
        path.write_bytes(data)
        plan = codemod.plan(path, "python", OPTIONS)
        codemod.apply(plan)
        return path.read_bytes(), plan


def assert_in_order(pieces: list[str], text: str) -> None:
    position = 0
    for piece in pieces:
        found = text.find(piece, position)
        assert found >= 0, f"ordinary code changed or moved:\n{piece}\n--- in ---\n{text}"
        position = found + len(piece)


@SETTINGS
@given(programs(), ENCODINGS, st.booleans())
def test_rewritten_files_compile_keep_their_bytes_and_are_stable(blocks, encoding, crlf):
    original = to_bytes(source_of(blocks, encoding), encoding, crlf)
    written, plan = migrate_file(original)

    assert plan.result.error is None, plan.result.error
    assert plan.result.changes, "the XRT constructs in this file were not rewritten"
    compile(written, "train.py", "exec", dont_inherit=True)

    # the file's encoding, BOM and line endings survive
    assert written.startswith(b"\xef\xbb\xbf") == encoding.bom
    text = written.decode(encoding.name).removeprefix("\ufeff")
    if crlf:
        assert "\n" not in text.replace("\r\n", "")
        text = text.replace("\r\n", "\n")
    else:
        assert "\r" not in text

    assert_in_order([block.text for block in blocks if block.ordinary], text)

    again, second = migrate_file(written)
    assert again == written and not second.result.changes
    # and it reports what the first did, as --write reported it (lines it cites as written)
    assert _decided(second) <= _decided(plan)


def _decided(plan: codemod.Plan) -> set[tuple[str, int, str]]:
    run = report.Run([plan.result], mode="write")
    return {
        (item.rule, item.range.start_line, item.message) for item in run.items(plan.result) if item.kind == "decide"
    }


@SETTINGS
@given(st.lists(ordinary_blocks(), min_size=1, max_size=8), ENCODINGS, st.booleans())
def test_files_without_xrt_code_are_left_alone(blocks, encoding, crlf):
    """Ordinary code importing torch_xla (so it is parsed) but calling nothing XRT-era."""
    original = to_bytes(source_of(blocks, encoding), encoding, crlf)
    written, plan = migrate_file(original)
    assert written == original
    assert plan.new_bytes is None and not plan.result.changes and plan.result.error is None


def test_runtime_before_spawn_todo_is_stable():
    # Once a bug: the TODO named line numbers of the original file, which the rewrite shifts.
    # two new imports replace one: every line below moves down by one
    source = (HEADER + "n = xm.xrt_world_size()\ndevice = xm.xla_device()\n\nxmp.spawn(main)\n").encode()
    written, _ = migrate_file(source)
    again, _ = migrate_file(written)
    assert again == written
