"""Which files of an installed torch_xla name each of some words, as whole words: its Python
files, and its ``_XLAC`` library, where every string the C++ side reads (an environment
variable's name among them) is kept as a literal in the ``.rodata`` section.

    python tests/installed_names.py WORD...   # prints {word: [file, ...]} as JSON

Run by the interpreter whose torch_xla is asked about (``naming(words, python)`` runs it
so, the 2.8 venv's too); it imports nothing of torch_xla, only finds where it is installed.
"""

from __future__ import annotations

import importlib.util
import json
import struct
import subprocess
import sys
from pathlib import Path

XLAC = "_XLAC"


def _rodata(library: Path) -> bytes:
    """The ``.rodata`` section of a 64-bit little-endian ELF library (a 13 MB slice of a 300 MB
    file: searching it for 200 words takes a second, the whole file half a minute)."""
    with open(library, "rb") as f:
        header = f.read(64)
        (shoff,) = struct.unpack_from("<Q", header, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", header, 0x3A)
        f.seek(shoff)
        sections = [struct.unpack_from("<IIQQQQ", f.read(shentsize)) for _ in range(shnum)]
        _, _, _, _, names_at, names_size = sections[shstrndx]
        f.seek(names_at)
        names = f.read(names_size)
        for name, _, _, _, offset, size in sections:
            if names[name : names.index(b"\0", name)] == b".rodata":
                f.seek(offset)
                return f.read(size)
    raise ValueError(f"{library}: no .rodata section")


def installed_files() -> dict[str, bytes]:
    package = Path(importlib.util.find_spec("torch_xla").origin).parent
    files = {str(p.relative_to(package)): p.read_bytes() for p in package.rglob("*.py")}
    (library,) = package.parent.glob(f"{XLAC}.*.so")
    files[XLAC] = _rodata(library)
    return files


def names(data: bytes, word: bytes) -> bool:
    """Whether ``data`` holds ``word`` as a whole word (not XLA_TPU_NAME for TPU_NAME)."""
    at = data.find(word)
    while at >= 0:
        before, after = data[at - 1 : at], data[at + len(word) : at + len(word) + 1]
        if not (before.isalnum() or before == b"_" or after.isalnum() or after == b"_"):
            return True
        at = data.find(word, at + 1)
    return False


def naming(words: list[str], python: str = sys.executable) -> dict[str, list[str]]:
    """word -> the files of ``python``'s torch_xla that name it, sorted."""
    ran = subprocess.run([python, __file__, *words], capture_output=True, text=True, timeout=600)
    if ran.returncode:
        raise RuntimeError(ran.stderr)
    return json.loads(ran.stdout)


if __name__ == "__main__":
    files = installed_files()
    print(
        json.dumps(
            {word: sorted(path for path, data in files.items() if names(data, word.encode())) for word in sys.argv[1:]}
        )
    )
