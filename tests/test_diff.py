"""xrt2pjrt/diff.py: the preview's unified diff and the written file's line map, fast on large files."""

from __future__ import annotations

import difflib
import subprocess

from hypothesis import given, settings
from hypothesis import strategies as st

from xrt2pjrt import diff

# Few distinct lines, so that repeated lines (what patience matching cannot anchor on) abound.
lines = st.lists(st.sampled_from([f"line {k}\n" for k in range(8)] + ["x = 1\n", "\n"]), max_size=60)


@settings(max_examples=200, deadline=None)
@given(lines, lines, st.lists(st.text(min_size=1, max_size=5).map(lambda t: t + "\n"), max_size=30))
def test_the_opcodes_rebuild_the_new_text(a, b, unique):
    a = a + unique
    m = diff.PatienceMatcher(a, b + unique[::2])
    b = b + unique[::2]
    rebuilt = []
    for tag, i1, i2, j1, j2 in m.get_opcodes():
        if tag == "equal":
            assert a[i1:i2] == b[j1:j2]
        rebuilt += a[i1:i2] if tag == "equal" else b[j1:j2]
    assert rebuilt == b


def test_a_large_diff_applies_with_git_apply(tmp_path):
    old = [f"n{i} = xm.xrt_world_size()\n" if i % 3 else f"x{i} = {i}\n" for i in range(30_000)]
    new = [line.replace("xm.xrt_world_size()", "xr.world_size()") for line in old]
    new.insert(0, "import torch_xla.runtime as xr\n")
    (tmp_path / "f.py").write_text("".join(old))
    patch = "".join(diff.unified(old, new, "a/f.py", "b/f.py"))
    subprocess.run(["git", "apply", "-p1", "-"], input=patch, text=True, check=True, cwd=tmp_path)
    assert (tmp_path / "f.py").read_text() == "".join(new)


def test_small_files_get_difflib_s_own_diff():
    old = ["a\n", "b\n", "c\n", "b\n"]
    new = ["a\n", "B\n", "c\n", "b\n", "d\n"]
    assert list(diff.unified(old, new, "x", "y")) == list(difflib.unified_diff(old, new, "x", "y"))
