"""api-using-pjrt beyond its examples: `if xr.using_pjrt():` keeps only the PJRT branch, at
the depth of the if."""

import pytest

from python_migrate import text


USING_PJRT = {
    "a one-line body": ("import torch_xla.runtime as xr\nif xr.using_pjrt(): a(); b()\nc()\n", "a(); b()\nc()\n"),
    "a comment on the if line stays": (
        "import torch_xla.runtime as xr\ndef f():\n    if xr.using_pjrt():  # new runtime\n        a()\n",
        "def f():\n    # new runtime\n    a()\n",
    ),
    "an elif stays an elif": (
        "import torch_xla.runtime as xr\nif x:\n    a()\nelif xr.using_pjrt():\n    b()\n",
        "if x:\n    a()\nelif True:\n    b()\n",
    ),
    "a compound test is only rewritten": (
        "import torch_xla.runtime as xr\nif xr.using_pjrt() and x:\n    a()\n",
        "if True and x:\n    a()\n",
    ),
    "an XRT-only branch goes, and its block keeps a statement": (
        "import torch_xla.runtime as xr\ndef f():\n    if not xr.using_pjrt():\n        legacy()\n",
        "def f():\n    pass\n",
    ),
}


@pytest.mark.parametrize("source, expected", USING_PJRT.values(), ids=USING_PJRT.keys())
def test_if_using_pjrt_keeps_only_the_pjrt_branch(source, expected):
    out = text(source)
    assert out == expected
    assert text(out) == out
