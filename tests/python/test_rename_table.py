"""The rename tables against the installed torch_xla (2.9), in the manner of tf_upgrade_v2:
every new spelling the codemod writes for 2.9 must exist there, take the keywords the
codemod passes and not take the parameters it drops; spellings retired before 2.9 and the
old names the rules replace must really be gone."""

import importlib
import inspect

import pytest

from xrt2pjrt.python import api_surface
from xrt2pjrt.python.environment import XENV_XRT
from xrt2pjrt.rules.pjrt._pjrt import PJRT_RENAMES
from xrt2pjrt.python.renames import LATEST, RENAMES

pytestmark = pytest.mark.xla

SPELLINGS = [
    pytest.param(rename, spelling, id=f"{rename.old}->{spelling.dotted}")
    for rename in RENAMES + PJRT_RENAMES
    for spelling in rename.spellings
]


def resolve(dotted: str):
    module, _, attr = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError):
        return None


def test_installed_torch_xla_is_the_latest_target():
    import torch_xla

    assert tuple(int(p) for p in torch_xla.__version__.split(".")[:2]) == LATEST


@pytest.mark.parametrize("rename, spelling", SPELLINGS)
def test_spelling_exists_exactly_when_the_table_says(rename, spelling):
    target = resolve(spelling.dotted)
    if spelling.until < LATEST:
        if any(later.dotted == spelling.dotted and later.until == LATEST for later in rename.spellings):
            return  # the same name with other keywords from a later release: see the test below
        assert target is None, f"{spelling.dotted} still exists in {LATEST}: raise its `until`"
        return
    assert callable(target), f"{spelling.dotted} does not exist in the installed torch_xla"
    parameters = inspect.signature(target).parameters
    for _, new_keyword in spelling.keywords:
        assert new_keyword in parameters
    for dropped in rename.dropped:
        if spelling.dotted != rename.old:
            assert dropped.name not in parameters


@pytest.mark.parametrize(
    "old",
    [
        "torch_xla.core.xla_model.xrt_world_size",
        "torch_xla.core.xla_model.get_ordinal",
        "torch_xla.runtime.using_pjrt",
        "torch_xla.runtime.xla_device",
    ],
)
def test_replaced_names_are_gone_in_2_9(old):
    assert resolve(old) is None


def test_experimental_pjrt_is_gone():
    with pytest.raises(ImportError):
        importlib.import_module("torch_xla.experimental.pjrt")


def test_xenv_names_the_rules_spell_out_no_longer_name_xrt_variables():
    # Gone (AttributeError on 2.9), or - xenv.WORLD_SIZE - reused for another variable.
    xenv = importlib.import_module("torch_xla.core.xla_env_vars")
    assert not [name for name in XENV_XRT if getattr(xenv, name, None) == XENV_XRT[name]]
    assert [name for name in XENV_XRT if hasattr(xenv, name)] == ["WORLD_SIZE"]


@pytest.mark.parametrize(
    "dotted",
    [
        "torch_xla.core.xla_model.xla_rendezvous",  # pjrt-rendezvous
        "torch_xla.distributed.xla_multiprocessing.spawn",  # pjrt-spawn, pjrt-run-multiprocess
        "xrt2pjrt.shim.xla_multiprocessing.run_multiprocess",  # pjrt-run-multiprocess
        "torch_xla.runtime.host_index",  # named by env-xrt-replica-vars
        "torch_xla.runtime.process_count",
        "torch_xla.runtime.local_process_count",
    ],
)
def test_other_targets_the_rules_write_exist(dotted):
    assert callable(resolve(dotted))


def test_xla_rendezvous_takes_payload_ordinals_tag_in_that_order():
    from torch_xla.core.xla_model import xla_rendezvous

    assert list(inspect.signature(xla_rendezvous).parameters)[:3] == ["payload", "ordinals", "tag"]


def test_xla_backend_registers_the_xla_init_method():
    import torch.distributed as dist
    import torch_xla.distributed.xla_backend  # noqa: F401

    assert "xla" in dist.rendezvous.__globals__["_rendezvous_handlers"]


@pytest.mark.parametrize("rename, spelling", SPELLINGS)
def test_spelling_holds_in_every_release_it_is_written_for(rename, spelling):
    # by the API tables of the released wheels (python/api_surface.txt), not only 2.9
    for release in api_surface.RELEASES:
        if not spelling.since <= release <= spelling.until:
            continue
        assert api_surface.lacks(spelling.dotted, release) is None, (spelling.dotted, release)
        entry = api_surface.entry(spelling.dotted, release)
        for old, new in spelling.keywords:
            assert entry.takes(new) and not entry.takes(old), (spelling.dotted, release, old)


@pytest.mark.parametrize("rename, spelling", SPELLINGS)
def test_the_release_before_a_spelling_lacks_it(rename, spelling):
    # a pin of an older release is reported for the migrated code (RenameRule.needs): the
    # release before ``since`` lacks the name, a keyword it passes, or the arguments it takes
    before = (spelling.since[0], spelling.since[1] - 1)
    if before not in api_surface.RELEASES:
        return
    entry = api_surface.entry(spelling.dotted, before)
    takes_no_args = any(s.since <= before and not s.takes_args for s in rename.spellings)
    assert (
        api_surface.lacks(spelling.dotted, before) is not None
        or any(not entry.takes(new) for _, new in spelling.keywords)
        or (takes_no_args and spelling.takes_args)
    ), (spelling.dotted, before)
