"""import-gone-module beyond its examples: imports of modules the target lacks go when unused
and are marked when used, by the target release."""

from python_migrate import migrate, same
from xrt2pjrt.python import rewriter as python
from xrt2pjrt.registry import Options, all_rules
from xrt2pjrt.rewriters import todo_comment

OPTIONS = Options(rules=frozenset(rid for rid, rule in all_rules().items() if rule.kind == "python"))


def test_an_unused_import_of_the_deleted_pjrt_module_goes_with_the_rest():
    # Found in pytorch/xla v1.13's own tests: an import nobody used, which fails on 2.5+.
    out = migrate(
        "import torch_xla.core.xla_model as xm\nfrom torch_xla.experimental import pjrt\n\n"
        "def f():\n    return xm.xla_device()\n"
    )
    assert out.text == "import torch_xla\n\ndef f():\n    return torch_xla.device()\n"
    assert any(c.rule == "import-gone-module" and c.line == 2 for c in out.changes) and not out.manual


def test_imports_of_gone_modules_go_when_unused_and_are_marked_when_used():
    # pytorch/xla v1.8's cached-dataset notebook, and PyTorch Lightning's sharding code
    out = python.rewrite(
        "import torch_xla.utils.gcsfs as gcs\nimport torch_xla.utils.cached_dataset as xcd\n"
        "from torch_xla.experimental import xla_sharding as xs\n\nds = xcd.CachedDataset(None, 'gs://bucket/cache')\n",
        OPTIONS,
    )
    (item,) = out.manual
    assert item.line == 2 and "a dataset cache of your own" in item.message
    assert out.text == (
        f"{todo_comment(item.message, 'import-gone-module', 88)}\n"
        "import torch_xla.utils.cached_dataset as xcd\n\n"
        "ds = xcd.CachedDataset(None, 'gs://bucket/cache')\n"
    )
    assert [(c.rule, c.line) for c in out.changes] == [("import-gone-module", 1), ("import-gone-module", 3)]
    again = python.rewrite(out.text, OPTIONS)
    assert again.text == out.text and [f.message for f in again.manual] == [item.message]


def test_an_older_target_keeps_what_it_still_has():
    source = "from torch_xla.experimental import pjrt\n\nfn = pjrt.spawn_threads\n"
    assert python.rewrite(source, Options(OPTIONS.rules, target_version=(2, 4))).manual[0].rule == "manual-pjrt-other"
    assert not any(
        f.rule == "import-gone-module"
        for f in python.rewrite(source, Options(OPTIONS.rules, target_version=(2, 4))).manual
    )
    assert any(f.rule == "import-gone-module" for f in python.rewrite(source, OPTIONS).manual)


PROBE = "try:\n    import torch_xla.distributed.xla_spawn  # noqa: F401\n    {body}\nexcept ModuleNotFoundError:\n    {handler}\n"


def test_a_probe_whose_handler_raises_is_kept_and_reported():
    # round 13: a launcher checks for SageMaker's xla_spawn (in no open torch_xla) before it runs it
    source = PROBE.format(body="pass", handler="raise RuntimeError('no SageMaker integration in torch_xla')")
    out = migrate(source)
    assert out.text.count("import torch_xla.distributed.xla_spawn") == 1
    (item,) = out.manual
    assert (item.rule, item.line, item.message) == ("import-gone-module", 2, "decide what runs without it")


def test_a_probe_with_a_fallback_is_left_as_it_is():
    # dropping the import would set the flag on a target that lacks the module
    same(PROBE.format(body="HAS_SPAWN = True", handler="HAS_SPAWN = False"))


def test_a_module_run_by_its_name_in_a_string_is_reported():
    # round 13: a launcher builds [python, '-m', 'torch_xla.distributed.xla_spawn', ...], a module no 2.x has
    out = migrate(
        "import os\n\ndef command(n):\n    return ['python', '-m', 'torch_xla.distributed.xla_spawn', str(n)]\n\n"
        "os.system('python -m torch_xla.core.xla_model')\n"
    )
    assert [(item.rule, item.line, item.message) for item in out.manual] == [
        ("import-gone-module", 4, "use a module the target has")
    ]
