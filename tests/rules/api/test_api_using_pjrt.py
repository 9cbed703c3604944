"""api-using-pjrt beyond its examples: `if xr.using_pjrt():` keeps only the PJRT branch, at
the depth of the if."""

import pytest

from python_migrate import migrate, text


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


_XRT_INIT = "dist.init_process_group('xla', rank=rank, world_size=n)"  # (dist-init-method asks about it)


@pytest.mark.parametrize(
    "test, branch",
    [
        ("xr.using_pjrt()", "else"),
        ("not xr.using_pjrt()", "if"),
        ("pjrt", "else"),  # a name bound only to the call
        ("not pjrt", "if"),
    ],
)
def test_nothing_is_asked_about_in_the_branch_only_xrt_ran(test, branch):
    pjrt, xrt = "dist.init_process_group('xla', init_method='xla://')", _XRT_INIT
    first, second = (pjrt, xrt) if branch == "else" else (xrt, pjrt)
    source = (
        "import torch.distributed as dist\nimport torch_xla.runtime as xr\n\ndef init(rank, n):\n"
        f"    pjrt = xr.using_pjrt()\n    if {test}:\n        {first}\n    else:\n        {second}\n"
    )
    out = migrate(source)
    assert out.manual == [] and _XRT_INIT not in out.text


def test_a_name_bound_to_something_else_too_is_not_taken_for_the_runtime():
    source = (
        "import torch.distributed as dist\nimport torch_xla.runtime as xr\n\ndef init(rank, n, forced):\n"
        "    pjrt = xr.using_pjrt()\n    if forced:\n        pjrt = False\n    if pjrt:\n        a()\n"
        f"    else:\n        {_XRT_INIT}\n"
    )
    out = migrate(source)
    assert [m.rule for m in out.manual] == ["dist-init-method"] and _XRT_INIT in out.text
