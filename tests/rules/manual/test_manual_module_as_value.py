"""manual-module-as-value beyond its examples: a torch_xla module handed on as a value, and
the uses by its import name that are not."""

import pytest

from python_migrate import migrate


@pytest.mark.parametrize(
    "source, how",
    [
        (
            "class Trainer:\n    def __init__(self):\n        self.tpu = xm\n\n    def world(self):\n"
            "        return self.tpu.xrt_world_size()\n",
            "is stored as self.tpu",
        ),
        ("def rank(module):\n    return module.get_ordinal()\n\nprint(rank(xm))\n", "is handed on here as a value"),
        ("rank = getattr(xm, name)()\n", "is handed on here as a value"),
    ],
)
def test_a_torch_xla_module_handed_on_is_reported_as_its_calls_are_not_followed(source, how):
    out = migrate("import torch_xla.core.xla_model as xm\n\n" + source)
    (item,) = [item for item in out.manual if item.rule == "manual-module-as-value"]
    assert item.detail.startswith(f"xm (torch_xla.core.xla_model) {how}: ")
    assert not migrate("import torch_xla.core.xla_model as xm\n\n" + source, target="shim").manual


@pytest.mark.parametrize(
    "source",
    [
        "device = xm.xla_device()\nprint(xm.__name__ == 'x', xm is None)\n",
        "try:\n    import torch_xla.core.xla_model as xm\nexcept ImportError:\n    xm = None\n",
        "import torch_xla.utils.serialization as xser\nsaved = [xser.save]\n",  # a module no rule migrates from
        "ok = hasattr(xm, 'xla_device')\n",  # the name spelled out: followed as xm.xla_device is
    ],
)
def test_a_torch_xla_module_used_by_its_import_name_is_not_reported(source):
    assert not migrate("import torch_xla.core.xla_model as xm\n" + source).manual


@pytest.mark.parametrize(
    "fallback", ["xm, xmp = None, None", "xm, xmp, loader = [None] * 3", "(xm, [xmp]) = (None, [None])"]
)
def test_names_a_fallback_assigns_in_a_tuple_are_no_hand_over(fallback):
    # issue 32: the no-TPU fallback of a library, each name of the tuple reported as handed on
    assert not migrate(
        "try:\n    import torch_xla.core.xla_model as xm\n"
        "    import torch_xla.distributed.xla_multiprocessing as xmp\n"
        f"except ImportError:\n    {fallback}\n"
    ).manual


@pytest.mark.parametrize(
    "stored, used, reported",
    [
        ("self._xm = xm", "self._xm.optimizer_step(opt, barrier=True)", False),  # every read still in 2.9
        ("self._xla = xm", "pass", False),  # private, and read nowhere in the file
        ("self.xla = xm", "pass", True),  # public: its users are elsewhere
        ("self._xm = xm", "n = self._xm.xrt_world_size()", True),  # gone in 2.7
    ],
)
def test_a_module_kept_on_self_is_reported_by_what_the_file_reads_of_it(stored, used, reported):
    source = (
        "import torch_xla.core.xla_model as xm\n\nclass Backend:\n"
        f"    def load(self):\n        {stored}\n\n    def step(self, opt):\n        {used}\n"
    )
    assert [m.rule for m in migrate(source).manual] == ["manual-module-as-value"] * reported


def test_a_module_kept_by_its_own_name_is_reported_where_its_removed_calls_are_made():
    # issue 32: model.xm = xm in one file, read in another; the store itself breaks nothing
    assert not migrate("import torch_xla.core.xla_model as xm\n\ndef build(model):\n    model.xm = xm\n").manual
    reader = "def train(model):\n    model.xm.optimizer_step(model.opt)\n    return model.xm.xrt_world_size()\n"
    (item,) = migrate(reader).manual
    assert (item.rule, item.line) == ("manual-borrowed-alias", 3)
