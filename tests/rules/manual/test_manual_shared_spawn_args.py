"""manual-shared-spawn-args beyond its examples: round 14's and round 15's misses (a research script scaling its
learning rate on the argparse namespace the spawn hands every replica; there in a function of
another module, which the rule does not follow) written in the spawned function."""

import pytest

from python_migrate import migrate

_HEAD = "import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"


@pytest.mark.parametrize(
    "body, spawn, reported",
    [
        ("    args.lr *= xm.xrt_world_size()\n", "xmp.spawn(_mp_fn, args=(args,), nprocs=8)", True),
        ("    args['batch_size'] //= xm.xrt_world_size()\n", "xmp.spawn(_mp_fn, args=(flags,))", True),
        ("    args.rank = xm.get_ordinal()\n", "xmp.spawn(_mp_fn, args=(args,))", True),
        ("    args.device = xm.xla_device()\n", "xmp.spawn(_mp_fn, args=(args,))", True),
        # round 15: the update spelled as an assignment that reads the attribute it writes
        ("    args.lr = args.lr * xm.xrt_world_size() * args.k\n", "xmp.spawn(_mp_fn, args=(args,))", True),
        ("    args['lr'] = 2 * args['lr'] * xm.xrt_world_size()\n", "xmp.spawn(_mp_fn, args=(args,))", True),
        # the same value in every replica, a copy of its own, one replica, or the index
        ("    args.world_size = xm.xrt_world_size()\n", "xmp.spawn(_mp_fn, args=(args,))", False),
        ("    args.lr = args.base_lr * xm.xrt_world_size()\n", "xmp.spawn(_mp_fn, args=(args,))", False),
        ("    args = copy.copy(args)\n    args.lr *= xm.xrt_world_size()\n", "xmp.spawn(_mp_fn, args=(args,))", False),
        ("    args.lr *= xm.xrt_world_size()\n", "xmp.spawn(_mp_fn, args=(args,), nprocs=1)", False),
        (
            "    lr = args.lr * xm.xrt_world_size()\n    index += xm.get_ordinal()\n",
            "xmp.spawn(_mp_fn, args=(args,))",
            False,
        ),
    ],
)
def test_a_spawn_argument_written_in_place_is_reported(body, spawn, reported):
    source = f"{_HEAD}def _mp_fn(index, args):\n{body}    train(args)\n\n{spawn}\n"
    items = [(item.rule, item.line) for item in migrate(source).manual if item.rule == "manual-shared-spawn-args"]
    assert items == [("manual-shared-spawn-args", 4 + body.count("\n"))] * reported


def test_a_function_the_launching_process_calls_is_not():
    source = (
        f"{_HEAD}def setup(args):\n    args.lr *= xm.xrt_world_size()\n\nsetup(args)\nxmp.spawn(_mp_fn, args=(args,))\n"
    )
    assert not [item for item in migrate(source).manual if item.rule == "manual-shared-spawn-args"]
