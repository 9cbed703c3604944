"""spawn-nprocs-literal beyond its examples: every form an nprocs argument takes, the
expressions spawn-nprocs-expression rewrites beside the literals."""

import pytest

from python_migrate import text


@pytest.mark.parametrize(
    "before, after",
    [
        (
            "xmp.spawn(_mp_fn, args=(flags,), nprocs=8, start_method='fork')",
            "xmp.spawn(_mp_fn, args=(flags,), start_method='fork')",
        ),
        ("xmp.spawn(fn=_mp_fn, nprocs=8)", "xmp.spawn(fn=_mp_fn)"),
        ("xmp.spawn(_mp_fn, (flags,), 8)", "xmp.spawn(_mp_fn, (flags,))"),
        ("xmp.spawn(_mp_fn, nprocs=1)", "xmp.spawn(_mp_fn, nprocs=1)"),
        ("xmp.spawn(_mp_fn, nprocs=None)", "xmp.spawn(_mp_fn, nprocs=None)"),
        ("xmp.spawn(_mp_fn)", "xmp.spawn(_mp_fn)"),
        ("xmp.spawn(_mp_fn, nprocs=min(world, 8))", "xmp.spawn(_mp_fn, nprocs=1 if min(world, 8) == 1 else None)"),
        ("xmp.spawn(_mp_fn, nprocs=a or b)", "xmp.spawn(_mp_fn, nprocs=1 if (a or b) == 1 else None)"),
        ("xmp.spawn(_mp_fn, nprocs=1 if n == 1 else None)", "xmp.spawn(_mp_fn, nprocs=1 if n == 1 else None)"),
    ],
)
def test_spawn_nprocs_forms(before, after):
    prefix = "import torch_xla.distributed.xla_multiprocessing as xmp\n"
    assert text(prefix + before + "\n") == prefix + after + "\n"
