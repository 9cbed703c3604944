"""spawn-dataloader-worker beyond its examples: an ordinal asked for in a DataLoader worker,
through a function of the file, a lambda or a partial, or in a WebDataset's nodesplitter, and
not when handed over."""

import pytest

from python_migrate import XMP as _XMP, migrate, todo_says


_SEEDED = "import functools\nimport torch_xla.core.xla_model as xm\n" + _XMP + "\n"


@pytest.mark.parametrize(
    "source, lines",
    [
        # the per-replica seed, as a function of the file given by name (checked on CPU under
        # `xrt2pjrt run --nprocs 2`: xr.global_ordinal() answered 0 in the workers of both replicas)
        (
            "def seed(worker_id):\n    np.random.seed(xm.get_ordinal() * 8 + worker_id)\n\n"
            "def _mp_fn(index):\n    DataLoader(data, num_workers=2, worker_init_fn=seed)\n\nxmp.spawn(_mp_fn)\n",
            [6],
        ),
        # a lambda, and a partial whose function asks: both run in the worker
        (
            "def _mp_fn(index):\n    DataLoader(data, num_workers=2,\n"
            "               worker_init_fn=lambda w: np.random.seed(xm.xrt_world_size() + w))\n\nxmp.spawn(_mp_fn)\n",
            [7],
        ),
        (
            "def seed(worker_id, base):\n    random.seed(base + xm.get_local_ordinal())\n\n"
            "def _mp_fn(index):\n    DataLoader(data, worker_init_fn=functools.partial(seed, base=1))\n\nxmp.spawn(_mp_fn)\n",
            [6],
        ),
        # round 15: a WebDataset's nodesplitter, run in the workers or the ParallelLoader's thread,
        # where the world size is every thread's
        (
            "def by_node(urls):\n    rank = xm.get_ordinal()\n    return urls[rank::xm.xrt_world_size()]\n\n"
            "def _mp_fn(index):\n    wds.WebDataset(urls, nodesplitter=by_node)\n\nxmp.spawn(_mp_fn)\n",
            [6],
        ),
        # a def the file makes again, which replaces it: its first body never runs
        (
            "def by_node(urls):\n    return urls[xm.get_ordinal()::8]\n\n"
            "def by_node(urls):\n    return urls\n\n"
            "def _mp_fn(index):\n    wds.WebDataset(urls, nodesplitter=by_node)\n\nxmp.spawn(_mp_fn)\n",
            [],
        ),
        # asked in the replica and handed over, in the partial's arguments or a default: nothing to do
        (
            "def seed(worker_id, rank):\n    np.random.seed(rank * 8 + worker_id)\n\n"
            "def _mp_fn(index):\n    init = functools.partial(seed, rank=xm.get_ordinal())\n"
            "    DataLoader(data, worker_init_fn=init)\n\nxmp.spawn(_mp_fn)\n",
            [],
        ),
    ],
)
def test_an_ordinal_asked_for_in_a_dataloader_worker_is_reported_and_not_blamed_on_the_launcher(source, lines):
    out = migrate(_SEEDED + source)
    assert [(item.rule, item.line) for item in out.manual] == [("spawn-dataloader-worker", line) for line in lines]
    assert all(
        todo_says(out.text, item) and "worker_init_fn=functools.partial(fn, rank=xr.global_ordinal())" in item.detail
        for item in out.manual
    )
