"""Input that once crashed `migrate` or gave an unclear word: each gets a clear message
naming the file, the file is left byte-identical, and the run goes on with the others."""

from __future__ import annotations

import base64
import json
import os
import random
import struct
import subprocess
import sys
import zlib
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
XRT = "import torch_xla.core.xla_model as xm\n\nprint(xm.xrt_world_size())\n"
MIGRATED_LINE = "print(xr.world_size())"


def migrate(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", "migrate", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=cwd,
    )


def test_deeply_nested_valid_python_says_the_nesting_is_too_deep(tmp_path):
    deep = tmp_path / "deep.py"
    source = XRT + "total = " + " + ".join(["xm.xrt_world_size()"] * 600) + "\n"
    compile(source, "deep.py", "exec")  # Python itself runs it
    deep.write_text(source)
    ran = migrate("--write", deep)
    assert ran.returncode == 2
    assert f"{deep}: error: nested too deeply to parse" in ran.stderr
    assert "internal error" not in ran.stderr and deep.read_text() == source


def test_a_fifo_named_explicitly_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "train.py"
    os.mkfifo(fifo)
    other = tmp_path / "other.py"
    other.write_text(XRT)
    ran = migrate("--write", fifo, other)  # would hang forever if the FIFO were opened for reading
    assert ran.returncode == 2
    assert f"{fifo}: error: a FIFO (named pipe), not a file: not read" in ran.stderr
    assert MIGRATED_LINE in other.read_text()


def test_a_device_named_explicitly_is_refused():
    ran = migrate("/dev/null")
    assert ran.returncode == 2 and "/dev/null: error: a character device, not a file" in ran.stderr


def test_a_missing_path_is_said_and_the_run_goes_on_then_exits_2(tmp_path):
    kept = tmp_path / "train.py"
    kept.write_text(XRT)
    ran = migrate("--write", tmp_path / "nope", kept)
    assert ran.returncode == 2
    assert f"{tmp_path / 'nope'}: error: no such file or folder" in ran.stderr
    assert MIGRATED_LINE in kept.read_text()


def test_an_nbformat_3_notebook_is_named_as_such(tmp_path):
    notebook = tmp_path / "old.ipynb"
    text = json.dumps(
        {
            "nbformat": 3,
            "nbformat_minor": 0,
            "metadata": {},
            "worksheets": [{"cells": [{"cell_type": "code", "input": ["import torch_xla\n"]}]}],
        }
    )
    notebook.write_text(text)
    ran = migrate(notebook)
    assert ran.returncode == 2
    assert "nbformat 3" in ran.stderr and "jupyter nbconvert" in ran.stderr and "'cells'" not in ran.stderr
    assert notebook.read_text() == text


def test_a_notebook_with_trailing_garbage_is_reported_not_rewritten(tmp_path):
    notebook = tmp_path / "nb.ipynb"
    cell = {
        "cell_type": "code",
        "metadata": {},
        "execution_count": None,
        "outputs": [],
        "source": ["import torch_xla.core.xla_model as xm\n", "print(xm.xrt_world_size())\n"],
    }
    text = json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell]}) + "\n}garbage\n"
    notebook.write_text(text)
    ran = migrate("--write", notebook)
    assert ran.returncode == 2 and "not valid JSON" in ran.stderr
    assert "error: line 2: cannot parse: not a notebook" in ran.stderr  # the line the garbage is on
    assert notebook.read_text() == text


def test_a_newline_in_a_file_name_is_quoted_in_the_diff_as_git_does(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    name = "new\nline.py"
    (tmp_path / name).write_text(XRT)
    preview = migrate(name, cwd=tmp_path)
    assert preview.returncode == 0, preview.stderr
    assert preview.stdout.startswith('--- "a/new\\nline.py"\n+++ "b/new\\nline.py"\n')
    subprocess.run(["git", "apply", "-p1", "-"], input=preview.stdout, text=True, check=True, cwd=tmp_path)
    assert MIGRATED_LINE in (tmp_path / name).read_text()


def test_the_json_report_names_an_undecodable_file_reversibly_with_no_lone_surrogate(tmp_path):
    raw = os.fsencode(tmp_path) + b"/caf\xe9.py"  # Latin-1 bytes: not UTF-8
    with open(raw, "w") as f:
        f.write(XRT)
    report = tmp_path / "report.json"
    ran = migrate(tmp_path, "--report", report)
    assert ran.returncode == 0, ran.stderr
    data = report.read_bytes().decode("utf-8")  # strict: a lone surrogate would not encode to begin with
    (entry,) = json.loads(data)["files"]
    path = entry["path"]
    assert not any(0xD800 <= ord(c) <= 0xDFFF for c in path)
    assert path.startswith('"') and path.endswith('caf\\351.py"')
    # reversible: the C escapes give the bytes of the name back
    assert path[1:-1].encode("latin-1").decode("unicode_escape").encode("latin-1") == raw


def test_the_summary_does_not_count_the_changes_of_a_file_that_failed(tmp_path):
    target = tmp_path / "train.py"
    target.write_text(XRT)
    os.link(target, tmp_path / "again.py")  # a second name: the file is refused, its changes not made
    ran = migrate("--write", target)
    assert ran.returncode == 2
    assert "0 changed (0 changes)" in ran.stderr, ran.stderr


def test_a_file_above_the_size_limit_is_reported_as_skipped(tmp_path):
    big = tmp_path / "big.py"
    big.write_text(XRT + "x = 1\n" * 500)
    ran = migrate("--write", "--max-file-size", "1k", big)
    assert ran.returncode == 2
    assert f"{big}: error: skipped: {big.stat().st_size:,} bytes, more than the size limit of 1,000" in ran.stderr
    assert "xrt_world_size" in big.read_text()
    assert migrate("--write", big).returncode == 0 and MIGRATED_LINE in big.read_text()


def _png(width: int, height: int) -> bytes:
    """A real PNG of noise (it does not compress: its base64 is as long as a photo's)."""
    noise = random.Random(0)
    rows = b"".join(b"\x00" + noise.randbytes(width * 3) for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def _colab_notebook(code_cells: list[list[str]], image: str) -> str:
    """A notebook as Jupyter writes one, the image the output of its second cell."""
    cells = [
        {"cell_type": "code", "execution_count": i + 1, "metadata": {}, "outputs": [], "source": source}
        for i, source in enumerate(code_cells)
    ]
    cells[1]["outputs"] = [
        {
            "data": {"image/png": image, "text/plain": ["<Figure size 1000x750 with 1 Axes>"]},
            "metadata": {},
            "output_type": "display_data",
        }
    ]
    notebook = {"cells": cells, "metadata": {"accelerator": "TPU"}, "nbformat": 4, "nbformat_minor": 0}
    return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def _all_but_the_sources(text: str) -> list[str]:
    """The notebook's lines outside its cells' "source" arrays."""
    out, inside = [], False
    for line in text.splitlines(keepends=True):
        if inside:
            inside = not line.lstrip().startswith("]")
        elif line.strip() == '"source": [':
            inside = True
        else:
            out.append(line)
    return out


XRT_CELLS = [
    ["import torch_xla.core.xla_model as xm\n"],
    ["def _mp_fn(index):\n", "    print(xm.get_ordinal(), xm.xrt_world_size())\n"],
    ["import torch_xla.distributed.xla_multiprocessing as xmp\n", "xmp.spawn(_mp_fn, nprocs=8)\n"],
]


def test_a_notebooks_outputs_do_not_count_against_the_size_limit(tmp_path):
    """A Colab notebook with a plot is larger than the limit, but the limit bounds what is
    parsed: its cells' code. It is migrated; its outputs, metadata and layout stay byte for byte."""
    image = base64.b64encode(_png(1000, 750)).decode()
    assert len(image) > 3_000_000
    notebook = tmp_path / "demo.ipynb"
    before = _colab_notebook(XRT_CELLS, image)
    notebook.write_text(before)
    assert notebook.stat().st_size > 2_000_000  # the default limit
    ran = migrate("--write", notebook)
    assert ran.returncode == 0, ran.stderr
    after = notebook.read_text()
    cells = json.loads(after)["cells"]
    assert "".join(cells[1]["source"]) == "def _mp_fn(index):\n    print(xr.global_ordinal(), xr.world_size())\n"
    assert _all_but_the_sources(after) == _all_but_the_sources(before)
    assert cells[1]["outputs"][0]["data"]["image/png"] == image


def test_a_notebook_with_more_code_than_the_limit_is_skipped_saying_what_counts(tmp_path):
    notebook = tmp_path / "long.ipynb"
    code = XRT_CELLS + [[f"x{i} = xm.xrt_world_size()\n" for i in range(100)]]
    notebook.write_text(_colab_notebook(code, "iVBORw0KGgo="))
    before = notebook.read_bytes()
    ran = migrate("--write", "--max-file-size", "2k", notebook)
    assert ran.returncode == 2
    counted = sum(len("".join(source)) for source in code)
    assert (
        f"{notebook}: error: skipped: {counted:,} characters of code to parse (a notebook's cells, a "
        "document's code blocks), more than the size limit of 2,000"
    ) in ran.stderr
    assert notebook.read_bytes() == before


def test_a_documents_prose_does_not_count_against_the_size_limit(tmp_path):
    readme = tmp_path / "README.md"
    command = "python3 -m torch_xla.distributed.xla_dist --tpu=pod -- python3 train.py\n"
    block = f"```bash\n{command}```\n"
    prose = "".join(f"Paragraph {i} of the history of this project, which runs on TPUs.\n\n" for i in range(50_000))
    readme.write_text(prose + block)
    assert readme.stat().st_size > 2_000_000
    ran = migrate("--check", "--max-file-size", "50", readme)  # the code block is longer than this
    assert ran.returncode == 2 and f"skipped: {len(command):,} characters of code to parse" in ran.stderr
    ran = migrate("--write", "--unsafe-fixes", readme)  # (the launch is an unsafe fix)
    assert ran.returncode == 0, ran.stderr
    assert readme.read_text().startswith(prose) and "gcloud compute tpus tpu-vm ssh pod" in readme.read_text()
