"""The work a plain libcst codemod must do at least, as baselines for bench/throughput.py.

    python bench/_libcst_baselines.py parse FILE_LIST       # parse every file
    python bench/_libcst_baselines.py qualified FILE_LIST   # parse + QualifiedNameProvider

FILE_LIST holds one path per line. Files are decoded the way Python decodes source
(PEP 263 cookie, BOM); of a notebook (.ipynb), each code cell is parsed, its IPython lines
(``!pip``, ``%%time``) made comments; a file libcst cannot parse is counted and skipped, as
a codemod runner would.
"""

from __future__ import annotations

import importlib.util
import json
import sys

import libcst as cst
from libcst.metadata import MetadataWrapper, QualifiedNameProvider


def parse(source: str) -> None:
    cst.parse_module(source)


def qualified(source: str) -> None:
    MetadataWrapper(cst.parse_module(source)).resolve(QualifiedNameProvider)


def cells(data: bytes) -> list[str]:
    """The code cells of a notebook, IPython's lines as comments."""
    return [
        "".join(
            f"# {line}" if line.lstrip().startswith(("!", "%")) else line
            for line in "".join(cell["source"]).splitlines(keepends=True)
        )
        for cell in json.loads(data)["cells"]
        if cell["cell_type"] == "code"
    ]


def main(mode: str, file_list: str) -> None:
    work = {"parse": parse, "qualified": qualified}[mode]
    failed = 0
    with open(file_list, encoding="utf-8") as f:
        paths = f.read().splitlines()
    for path in paths:
        try:
            with open(path, "rb") as source:
                data = source.read()
            for code in cells(data) if path.endswith(".ipynb") else [importlib.util.decode_source(data)]:
                work(code)
        except (cst.ParserSyntaxError, SyntaxError, UnicodeDecodeError, RecursionError, ValueError):
            failed += 1
    print(f"{mode}: {len(paths)} files, {failed} could not be parsed", file=sys.stderr)


if __name__ == "__main__":
    main(*sys.argv[1:])
