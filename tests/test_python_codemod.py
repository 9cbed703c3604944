"""The Python codemod on the shapes real XRT-era code has (see real_world_code.md).

Only names that resolve to torch_xla change, whatever the import form; look-alikes
(``from xmanager import xm``, ``torch.multiprocessing.spawn``, ``dist.all_gather``, a
parameter called ``xm``) never do; imports a rewrite leaves unused go, new ones land
beside the imports they replace.
"""

import sys
import textwrap
import types

import pytest

from xrt2pjrt.registry import Options, all_rules
from xrt2pjrt import rewriters
from xrt2pjrt.rewriters import SourceError
from xrt2pjrt.python import rewriter as python
from python_migrate import XM, XMP, migrate, same, text


# --- import forms -------------------------------------------------------------------------

@pytest.mark.parametrize("imports, call", [
    ("import torch_xla.core.xla_model as xm", "xm.get_ordinal()"),
    ("import torch_xla.core.xla_model as tpu_xm", "tpu_xm.get_ordinal()"),
    ("from torch_xla.core import xla_model", "xla_model.get_ordinal()"),
    ("from torch_xla.core import xla_model as xm", "xm.get_ordinal()"),
    ("from torch_xla.core.xla_model import get_ordinal", "get_ordinal()"),
    ("from torch_xla.core.xla_model import get_ordinal as go", "go()"),
    ("import torch_xla.core.xla_model", "torch_xla.core.xla_model.get_ordinal()"),
])
def test_every_import_form_resolves_and_the_old_import_goes(imports, call):
    out = text(f"""\
        import os
        {imports}

        rank = {call}
        """)
    assert out == "import os\nimport torch_xla.runtime as xr\n\nrank = xr.global_ordinal()\n"


def test_function_local_import_gets_its_replacement_beside_it():
    out = text("""\
        def train():
            import torch_xla.core.xla_model as xm
            return xm.xrt_world_size()
        """)
    assert out == "def train():\n    import torch_xla.runtime as xr\n    return xr.world_size()\n"


def test_import_under_main_guard():
    out = text("""\
        if __name__ == '__main__':
            import torch_xla.distributed.xla_multiprocessing as xmp
            xmp.spawn(main, nprocs=8)
        """)
    assert "xmp.spawn(main)" in out


def test_try_except_importerror_fallback():
    out = text("""\
        try:
            import torch_xla.core.xla_model as xm
        except ImportError:
            xm = None

        def rank():
            return xm.get_ordinal() if xm else 0
        """)
    assert "xr.global_ordinal()" in out
    assert "    import torch_xla.runtime as xr\n" in out  # inside the try, where it can fail
    assert "import torch_xla.core.xla_model as xm" in out  # still used by `if xm`


def test_existing_runtime_import_is_reused():
    out = text("""\
        import torch_xla.core.xla_model as xm
        import torch_xla.runtime as runtime

        n = xm.xrt_world_size()
        """)
    assert out == "import torch_xla.runtime as runtime\n\nn = runtime.world_size()\n"


def test_alias_collision_picks_another_name():
    out = text("""\
        import torch_xla.core.xla_model as xm
        xr = load_experiment_registry()

        n = xm.xrt_world_size()
        """)
    assert "import torch_xla.runtime as xr_runtime" in out
    assert "n = xr_runtime.world_size()" in out
    assert "xr = load_experiment_registry()" in out


def test_import_kept_while_other_uses_remain():
    out = text("""\
        import torch_xla.core.xla_model as xm

        xm.master_print(xm.get_ordinal())
        """)
    assert out == ("import torch_xla.core.xla_model as xm\nimport torch_xla.runtime as xr\n\n"
                   "xm.master_print(xr.global_ordinal())\n")


def test_unused_imports_the_user_had_are_left_alone():
    same("""\
        import torch_xla.core.xla_model as xm
        import torch_xla.runtime as xr  # unused, not ours to judge

        print('hello')
        """)


# --- collisions: look-alikes never change -------------------------------------------------

def test_xmanager_xm_untouched_beside_torch_xla_xm():
    out = text("""\
        def launch():
            from xmanager import xm
            with xm.create_experiment() as experiment:
                return xm.get_ordinal()

        def train():
            import torch_xla.core.xla_model as xm
            return xm.get_ordinal()
        """)
    assert "        return xm.get_ordinal()\n" in out  # xmanager's, untouched
    assert "    import torch_xla.runtime as xr\n    return xr.global_ordinal()\n" in out
    assert "torch_xla.core.xla_model" not in out


def test_module_level_xmanager_untouched():
    same("""\
        from xmanager import xm  # torch_xla is not used here
        xm.get_ordinal()
        xm.xla_device()
        """)


def test_parameter_and_local_rebinding_shadow_the_import():
    source = textwrap.dedent("""\
        import torch_xla.core.xla_model as xm

        def a(xm):
            return xm.get_ordinal()

        def b():
            xm = FakeXm()
            return xm.get_ordinal()

        xm.master_print('ok')
        """)
    out = migrate(source)
    assert [line for line in out.text.splitlines() if "TODO(xrt2pjrt)" not in line] == source.splitlines()
    # what a parameter holds is not known here: if it is torch_xla's module, its call fails on 2.9
    assert [(item.rule, item.line) for item in out.manual] == [("manual-borrowed-alias", 4)]


def test_torch_multiprocessing_spawn_and_dist_all_gather_untouched():
    same("""\
        import torch.distributed as dist
        import torch.multiprocessing as mp
        import torch_xla.core.xla_model as xm

        mp.spawn(fn=_mp_fn, nprocs=8)
        dist.all_gather(outputs, tensor)
        xm.all_gather(tensor)
        """)


def test_method_does_not_see_class_level_names():
    out = text("""\
        import torch_xla.core.xla_model as xm

        class Trainer:
            xm = None

            def rank(self):
                return xm.get_ordinal()
        """)
    assert "return xr.global_ordinal()" in out


# --- spawn ---------------------------------------------------------------------------------

@pytest.mark.parametrize("before, after", [
    ("xmp.spawn(_mp_fn, args=(flags,), nprocs=8, start_method='fork')",
     "xmp.spawn(_mp_fn, args=(flags,), start_method='fork')"),
    ("xmp.spawn(fn=_mp_fn, nprocs=8)", "xmp.spawn(fn=_mp_fn)"),
    ("xmp.spawn(_mp_fn, (flags,), 8)", "xmp.spawn(_mp_fn, (flags,))"),
    ("xmp.spawn(_mp_fn, nprocs=1)", "xmp.spawn(_mp_fn, nprocs=1)"),
    ("xmp.spawn(_mp_fn, nprocs=None)", "xmp.spawn(_mp_fn, nprocs=None)"),
    ("xmp.spawn(_mp_fn)", "xmp.spawn(_mp_fn)"),
    ("xmp.spawn(_mp_fn, nprocs=min(world, 8))", "xmp.spawn(_mp_fn, nprocs=1 if min(world, 8) == 1 else None)"),
    ("xmp.spawn(_mp_fn, nprocs=a or b)", "xmp.spawn(_mp_fn, nprocs=1 if (a or b) == 1 else None)"),
    ("xmp.spawn(_mp_fn, nprocs=1 if n == 1 else None)", "xmp.spawn(_mp_fn, nprocs=1 if n == 1 else None)"),
])
def test_spawn_nprocs_forms(before, after):
    prefix = "import torch_xla.distributed.xla_multiprocessing as xmp\n"
    assert text(prefix + before + "\n") == prefix + after + "\n"


_XMP = XMP


@pytest.mark.parametrize("source, refused", [
    # KamilPiechowiak/iatransfer: a nested _mp_fn, spawned with fork (XRT forked it unpickled)
    ("def train_all(flags):\n    def _mp_fn(rank):\n        print(rank, flags)\n"
     "    xmp.spawn(_mp_fn, nprocs=flags['num_cores'], start_method='fork')\n",
     "fn (`_mp_fn`, a function defined in train_all)"),
    ("xmp.spawn(_mp_fn, args=(lambda r: r * 10,), nprocs=8, start_method='fork')\n", "args[0] (a lambda)"),
    ("import functools\n\ndef main(cfg):\n    def _mp_fn(rank, cfg):\n        pass\n"
     "    xmp.spawn(fn=functools.partial(_mp_fn, cfg=cfg), start_method='fork')\n",
     "fn (a functools.partial of `_mp_fn`, a function defined in main)"),
    ("from functools import partial\n\ndef main():\n    transform = lambda r: r\n"
     "    xmp.spawn(partial(_mp_fn, 1), args=(cfg, transform), start_method='fork')\n",
     "args[1] (`transform`, a lambda)"),
    ("def main():\n    class Cfg:\n        lr = 0.1\n    xmp.spawn(_mp_fn, args=(Cfg,), start_method='fork')\n",
     "args[0] (`Cfg`, a class defined in main)"),
    ("_mp_fn = lambda index: print(index)\n\nif __name__ == '__main__':\n    xmp.spawn(_mp_fn, start_method='fork')\n",
     "fn (`_mp_fn`, a lambda)"),
    # tpu-util 0.1.3: 'Lock objects should only be shared between processes through inheritance'
    ("WRAPPED_MODEL = xmp.MpModelWrapper(model)\n\ndef main():\n"
     "    xmp.spawn(_mp_fn, args=(WRAPPED_MODEL, opt), start_method='fork')\n",
     "args[0] (`WRAPPED_MODEL`, an xmp.MpModelWrapper, which holds a lock)"),
    ("import threading\n\ndef main():\n    xmp.spawn(_mp_fn, args=(threading.Lock(),), start_method='fork')\n",
     "args[0] (a threading.Lock, which holds a lock)"),
    # args given by a name bound to a tuple; pickle finds an instance's class by its name
    ("def main(cfg):\n    a = (cfg, lambda: 1)\n    xmp.spawn(_mp_fn, args=a, start_method='fork')\n",
     "args[1] (a lambda)"),
    ("def main():\n    class Cfg:\n        lr = 0.1\n    cfg = Cfg()\n    xmp.spawn(_mp_fn, args=[cfg], start_method='fork')\n",
     "args[0] (`cfg`, an instance of `Cfg`, a class defined in main)"),
    # Lightning 1.5-1.8's launchers: a result queue of a context ('SimpleQueue objects should
    # only be shared between processes through inheritance', checked on CPU)
    ("import multiprocessing as mp\n\ndef launch(self, method):\n    context = mp.get_context(method)\n"
     "    queue = context.SimpleQueue()\n    xmp.spawn(self._wrap, args=(queue,), start_method='fork')\n",
     "args[0] (`queue`, a multiprocessing context's SimpleQueue, which holds a lock)"),
    ("import torch.multiprocessing as mp\n\ndef main():\n    xmp.spawn(_mp_fn, args=(mp.Value('d', 0.0),), start_method='fork')\n",
     "args[0] (a torch.multiprocessing.Value, which holds a lock)"),
    # hivemind's TPUManager: a bound method takes its instance, and its locks, along
    ("import multiprocessing as mp\n\nclass Manager:\n    def __init__(self):\n        self.lock = mp.Lock()\n\n"
     "    def runner(self, index):\n        pass\n\n    def run(self):\n        xmp.spawn(self.runner, start_method='fork')\n",
     "fn (`self.runner`, a method: pickle takes its instance along, whose `self.lock` is a multiprocessing.Lock, "
     "which holds a lock)"),
])
def test_what_spawn_cannot_pickle_is_reported_at_the_spawn(source, refused):
    # torch_xla 2.x's spawn pickles fn and args for each process even under fork ("Can't pickle local object").
    out = migrate(_XMP + source)
    (item,) = [m for m in out.manual if m.rule == "spawn-unpicklable"]
    assert f"pickle refuses {refused}:" in item.message and "even with start_method='fork'" in item.message
    assert item.line == _XMP.count("\n") + source[:source.index("xmp.spawn")].count("\n") + 1
    (todo,) = [line for line in out.text.splitlines() if "[spawn-unpicklable]" in line]
    assert todo.strip().startswith("# TODO(xrt2pjrt): ") and refused in todo
    # The shim's spawn hands fn and args to forked replicas unpickled, as XRT's did.
    assert not [m for m in migrate(_XMP + source, target="shim").manual if m.rule == "spawn-unpicklable"]


@pytest.mark.parametrize("imports, target", [(_XMP, "shim"), ("import xrt2pjrt.shim.xla_multiprocessing as xmp\n", "native")])
@pytest.mark.parametrize("start", ["", ", start_method='spawn'", ", start_method=start_method"])
def test_the_shim_reports_what_it_must_pickle_unless_spawn_forks(imports, target, start):
    out = migrate(imports + f"def main(start_method):\n    def _mp_fn(rank):\n        pass\n    xmp.spawn(_mp_fn{start})\n",
                  target=target)
    (item,) = [m for m in out.manual if m.rule == "spawn-unpicklable"]
    assert item.message.startswith("the shim's xmp.spawn pickles fn and args for each process unless start_method='fork'")
    assert "refuses fn (`_mp_fn`, a function defined in main)" in item.message


@pytest.mark.parametrize("source", [
    "def _mp_fn(rank):\n    pass\n\nxmp.spawn(_mp_fn, args=(flags,), start_method='fork')\n",
    "from train import _mp_fn\n\nxmp.spawn(_mp_fn, start_method='fork')\n",
    "def launch(fn, args):\n    xmp.spawn(fn, args=(fn, args), start_method='fork')\n",  # a caller's: unknown here
    "class Xla:\n    @staticmethod\n    def _worker(i, fn):\n        fn(i)\n\n"
    "    def spawn(self, fn):\n        xmp.spawn(Xla._worker, args=(fn,))\n",
    "def _mp_fn(rank):\n    pass\n\ndef main():\n    fn = _mp_fn\n    xmp.spawn(fn, start_method='fork')\n",
    "def main():\n    def _mp_fn(rank):\n        pass\n    xmp.spawn(_mp_fn, nprocs=1)\n",  # called in this process
    "def main(flags):\n    a = (flags,)\n    xmp.spawn(_mp_fn, args=a)\n",
    "def main(flags):\n    a = (1,)\n    if flags.debug:\n        a = (lambda: 1,)\n    xmp.spawn(_mp_fn, args=a)\n",
    "class Cfg:\n    pass\n\ndef main():\n    xmp.spawn(_mp_fn, args=(Cfg(),))\n",  # pickled by its class's name
    "def main():\n    class Cfg:\n        def __reduce__(self):\n            return (dict, ())\n"
    "    xmp.spawn(_mp_fn, args=(Cfg(),))\n",
    "import torch_xla\n\ndef main():\n    torch_xla.launch(_mp_fn, args=(lambda: 1,), debug_single_process=True)\n",
    "import torch_xla\n\ndef main():\n    torch_xla.launch(_mp_fn, (flags,), 'fork')\n",
])
def test_what_spawn_can_pickle_is_not_reported(source):
    assert not [m for m in migrate(_XMP + source).manual if m.rule == "spawn-unpicklable"]


@pytest.mark.parametrize("target", ["native", "shim"])
@pytest.mark.parametrize("imports, launch", [("import torch_xla\n", "torch_xla.launch"),
                                             ("from torch_xla import launch\n", "launch")])
def test_torch_xla_launch_pickles_as_xmp_spawn_under_either_target(imports, launch, target):
    # torch_xla 2.9's launch calls xmp.spawn itself (the shim does not replace it): checked on CPU, a
    # local class's instance in args is "Can't pickle local object 'main.<locals>.Cfg'" under fork
    out = migrate(imports + "\ndef main():\n    class Cfg:\n        lr = 0.1\n    def _mp_fn(rank, cfg):\n        pass\n"
                  f"    {launch}(_mp_fn, args=(Cfg(),), start_method='fork')\n", target=target)
    (item,) = [m for m in out.manual if m.rule == "spawn-unpicklable"]
    assert item.line == 8 and item.message.startswith("torch_xla.launch pickles fn and args for each process")
    assert ("refuses fn (`_mp_fn`, a function defined in main) and args[0] (an instance of `Cfg`, a class defined "
            "in main)") in item.message


# --- XRT-era modules that still import ---------------------------------------------------

@pytest.mark.parametrize("imports, use", [
    ("import torch_xla.distributed.data_parallel as dp", "dp.DataParallel(net, device_ids=devices)"),
    ("from torch_xla.distributed import data_parallel", "data_parallel.DataParallel(net)"),
    ("from torch_xla.distributed.data_parallel import DataParallel", "DataParallel(net)"),
    ("import torch_xla.distributed.data_parallel", "torch_xla.distributed.data_parallel.DataParallel(net)"),
])
def test_data_parallel_is_to_port_where_used_and_to_delete_where_not(imports, use):
    # tmabraham/fastai_tpu imports it unused beside xmp.spawn: "port this to xmp.spawn" misled
    used = migrate(f"import torch_xla\n{imports}\n\nmodel = {use}\nprint(torch_xla.__version__)\n")
    unused = migrate(f"import torch_xla\n{imports}\n\nmodel = net\nprint(torch_xla.__version__)\n")
    for out, wanted in ((used, "port this to xmp.spawn by hand"), (unused, "imported but never used here: delete")):
        (item,) = [m for m in out.manual if m.rule == "manual-pre-1.0"]
        assert item.line == 2 and wanted in item.message
        assert f"[manual-pre-1.0]\n{imports}\n" in out.text  # reported, never removed: it imports on 2.x


# --- target versions ------------------------------------------------------------------------

@pytest.mark.parametrize("version, expected", [
    ((2, 2), "xm.xla_device()"),
    ((2, 3), "torch_xla.device()"),
    ((2, 9), "torch_xla.device()"),
])
def test_xla_device_spelling_follows_target_version(version, expected):
    out = text("import torch_xla.core.xla_model as xm\n\nd = xm.xla_device()\n", target_version=version)
    assert f"d = {expected}\n" in out


def test_mark_step_before_2_4_is_kept_and_pjrt_xla_device_before_2_3_goes_to_runtime():
    assert "xm.mark_step()" in text("import torch_xla.core.xla_model as xm\nxm.mark_step()\n", target_version=(2, 3))
    out = text("from torch_xla.experimental import pjrt\nd = pjrt.xla_device()\n", target_version=(2, 2))
    assert "d = xr.xla_device()" in out


# --- shim target ----------------------------------------------------------------------------

def test_shim_target_changes_imports_only():
    out = text("""\
        import torch_xla.core.xla_model as xm
        import torch_xla.distributed.xla_multiprocessing as xmp

        def _mp_fn(index):
            print(xm.get_ordinal(), xm.xrt_world_size())

        xmp.spawn(_mp_fn, nprocs=8, start_method='fork')
        """, target="shim")
    assert out == textwrap.dedent("""\
        import xrt2pjrt.shim.xla_model as xm
        import xrt2pjrt.shim.xla_multiprocessing as xmp

        def _mp_fn(index):
            print(xm.get_ordinal(), xm.xrt_world_size())

        xmp.spawn(_mp_fn, nprocs=8, start_method='fork')
        """)


# --- layout and reports -----------------------------------------------------------------

def test_formatting_and_comments_outside_rewritten_nodes_are_byte_identical():
    source = textwrap.dedent("""\
        # -*- coding: utf-8 -*-
        import torch_xla.core.xla_model as xm   # the model API


        def f( a,b ):   # odd spacing stays
            x = [1,2,
                 3]  # trailing
            return xm.get_ordinal( ) + a  # rank
        \t
        y = {  'k' :1 }
        """)
    out = migrate(source).text
    old, new = source.splitlines(), out.splitlines()
    untouched = [line for line in old if "xm" not in line]
    assert [line for line in new if line in untouched] == untouched
    assert "    return xr.global_ordinal( ) + a  # rank" in new


def test_manual_comment_is_written_once():
    source = "import torch_xla.core.xla_model as xm\n\nxm.save(state, path)\n"
    first = migrate(source)
    assert first.text.count("TODO(xrt2pjrt)") == 1
    assert [f.rule for f in first.manual] == ["manual-save-barrier"]
    assert first.manual[0].line == 3


def test_findings_carry_original_line_numbers():
    outcome = migrate("import torch_xla.core.xla_model as xm\n\n\nn = xm.xrt_world_size()\n")
    assert [(f.rule, f.line) for f in outcome.changes] == [("api-world-size", 4)]


def test_unparseable_source_raises_with_line():
    with pytest.raises(SourceError) as error:
        python.rewrite("import torch_xla\n\ndef f(:\n    pass\n", Options(rules=frozenset(all_rules())))
    assert error.value.line == 3


@pytest.mark.parametrize("source, triggers", [
    ("import torch\nprint(torch.ones(2))\n", False),
    ("from xmanager import xm\nxm.get_ordinal()\n", False),
    ("import torch_xla\n", True),
    ("os.environ['XRT_TPU_CONFIG'] = 'x'\n", True),
    ("os.environ.get(xenv.HOST_ORDINAL)\n", True),
])
def test_trigger_skips_files_with_nothing_to_do(source, triggers):
    assert bool(rewriters.trigger_for("python").search(source)) is triggers


def test_select_one_rule_runs_only_it():
    outcome = migrate("import torch_xla.core.xla_model as xm\nxm.get_ordinal()\nxm.mark_step()\n",
                      rules=frozenset({"api-mark-step"}))
    assert "xm.get_ordinal()" in outcome.text and "torch_xla.sync()" in outcome.text


def test_many_function_local_imports_lose_no_statement():
    """Regression: nodes were once tracked by bare id(), and a freed node's id reused by a
    new one made an unrelated statement vanish or turn into an import (seen on
    lightning_fabric's XLAEnvironment, whose methods each import xm locally)."""
    methods = []
    for i in range(40):
        methods.append(f"""
    def world_{i}(self):
        import torch_xla.core.xla_model as xm

        return xm.xrt_world_size() + {i}

    def note_{i}(self):
        log.debug("note {i}")

    def host_{i}(self):
        import torch_xla.core.xla_env_vars as xenv

        return int(os.environ.get(xenv.HOST_ORDINAL, {i}))
""")
    source = "import os\n\n\nclass Env:\n" + "".join(methods)
    out = text(source)
    for i in range(40):
        assert f'        log.debug("note {i}")\n' in out
        assert f"        import torch_xla.runtime as xr\n\n        return xr.world_size() + {i}\n" in out
        assert f'return int(os.environ.get("XRT_HOST_ORDINAL", {i}))' in out  # in the file's quotes
    assert out.count("import torch_xla.runtime as xr") == 40
    assert "xla_env_vars" not in out and "xla_model" not in out


def test_multi_line_calls_keep_their_layout():
    out = text("""\
        import torch.distributed as dist
        import torch_xla.core.xla_model as xm
        import torch_xla.distributed.xla_multiprocessing as xmp

        xmp.spawn(
            _mp_fn,
            args=(flags,),
            nprocs=8,
        )
        dist.init_process_group(
            'xla',
            rank=xm.get_ordinal(),
            world_size=xm.xrt_world_size(),
        )
        """)
    assert out.endswith(textwrap.dedent("""\
        xmp.spawn(
            _mp_fn,
            args=(flags,),
        )
        dist.init_process_group(
            'xla',
            init_method='xla://',
        )
        """))
    assert "import torch.distributed as dist\nimport torch_xla.distributed.xla_backend\n" in out


def test_definitions_without_relevant_words_are_folded_without_losing_count():
    """The engine folds away defs/classes that hold no word a rule looks for
    (python/quiet.py); the ones after them (and after the defs nested in them) must still
    be rewritten."""
    out = text("""\
        import torch_xla.core.xla_model as xm


        def quiet():
            def inner():
                return 1

            class Helper:
                def method(self):
                    return 2
            return inner


        @xm.some_decorator
        def decorated():
            return 3


        class Loud:
            def rank(self):
                return xm.get_ordinal()

            async def size(self):
                return xm.xrt_world_size()
        """)
    assert "return xr.global_ordinal()" in out and "return xr.world_size()" in out
    assert "@xm.some_decorator" in out and "import torch_xla.core.xla_model as xm" in out


# --- if xr.using_pjrt(): the PJRT branch stays, at the depth of the if ---------------------

USING_PJRT = {
    "a one-line body": (
        "import torch_xla.runtime as xr\nif xr.using_pjrt(): a(); b()\nc()\n",
        "a(); b()\nc()\n"),
    "a comment on the if line stays": (
        "import torch_xla.runtime as xr\ndef f():\n    if xr.using_pjrt():  # new runtime\n        a()\n",
        "def f():\n    # new runtime\n    a()\n"),
    "an elif stays an elif": (
        "import torch_xla.runtime as xr\nif x:\n    a()\nelif xr.using_pjrt():\n    b()\n",
        "if x:\n    a()\nelif True:\n    b()\n"),
    "a compound test is only rewritten": (
        "import torch_xla.runtime as xr\nif xr.using_pjrt() and x:\n    a()\n",
        "if True and x:\n    a()\n"),
    "an XRT-only branch goes, and its block keeps a statement": (
        "import torch_xla.runtime as xr\ndef f():\n    if not xr.using_pjrt():\n        legacy()\n",
        "def f():\n    pass\n"),
}


@pytest.mark.parametrize("source, expected", USING_PJRT.values(), ids=USING_PJRT.keys())
def test_if_using_pjrt_keeps_only_the_pjrt_branch(source, expected):
    out = text(source)
    assert out == expected
    assert text(out) == out


def test_an_unused_import_of_the_deleted_pjrt_module_goes_with_the_rest():
    # Found in pytorch/xla v1.13's own tests: an import nobody used, which fails on 2.5+.
    out = migrate("import torch_xla.core.xla_model as xm\nfrom torch_xla.experimental import pjrt\n\n"
                  "def f():\n    return xm.xla_device()\n")
    assert out.text == "import torch_xla\n\ndef f():\n    return torch_xla.device()\n"
    assert any(c.rule == "import-gone-module" and c.line == 2 for c in out.changes) and not out.manual


def test_the_comment_of_a_replaced_import_stays_on_the_line_that_replaces_it():
    # Found in accelerate 0.12: `import torch_xla.core.xla_model as xm  # noqa: F401` lost its comment.
    out = text("import torch_xla.core.xla_model as xm  # noqa: F401\n\ndevice = xm.xla_device()\n")
    assert out == "import torch_xla  # noqa: F401\n\ndevice = torch_xla.device()\n"


@pytest.mark.parametrize("source, lines", [
    # the reviewer's r4: a class body and a default value run on import, in the launching process
    ("class Cfg:\n    world = xm.xrt_world_size()\n\ndef log(msg, rank=xm.get_ordinal()):\n    print(rank, msg)\n",
     "5, 7"),
    ("class Trainer:\n    class Defaults:\n        device = xm.xla_device()\n", "6"),
    ("@functools.lru_cache(maxsize=xm.xrt_world_size())\ndef shard(i):\n    pass\n", "4"),
    ("log = lambda msg, rank=xm.get_ordinal(): print(rank, msg)\n", "4"),
    ("def main():\n    def log(msg, rank=xm.get_ordinal()):\n        pass\n    class C:\n        w = xm.xrt_world_size()\n"
     "    return log, C\n", None),  # when main runs, not on import: main is no spawned function, so "in main"
])
def test_a_runtime_started_on_import_in_a_class_body_or_default_value_is_reported(source, lines):
    out = migrate("import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
                  f"{source}\nif __name__ == '__main__':\n    xmp.spawn(_mp_fn)\n")
    (item,) = [m for m in out.manual if m.rule == "spawn-runtime-before"]
    if lines:
        assert "at module level" in item.shown() and item.shown().endswith(f"(line {lines})")
    else:
        assert item.message.endswith("(in main)")
    assert out.text.count("[spawn-runtime-before]") == 1


_XM = XM


@pytest.mark.parametrize("imports, launch", [("import torch_xla\n", "torch_xla.launch"),
                                             ("from torch_xla import launch\n", "launch")])
def test_a_runtime_started_before_torch_xla_launch_is_reported_at_the_launch(imports, launch):
    # torch_xla 2.9's launch calls xmp.spawn: 'Runtime is already initialized' (checked on CPU)
    out = migrate(_XM + imports + f"\nDEVICE = xm.xla_device()\n\nif __name__ == '__main__':\n    {launch}(_mp_fn)\n")
    (item,) = [m for m in out.manual if m.rule == "spawn-runtime-before"]
    assert item.line == 7 and item.shown().endswith("(line 4)")
    assert "before torch_xla.launch, which then raises 'Runtime is already initialized'" in item.message


@pytest.mark.parametrize("source", [
    "n = xm.xrt_world_size()\nprint(n)\n",  # no launch: one process
    "from pytorch_lightning import Trainer\n\nTrainer(accelerator='tpu', devices=1).fit(model)\nn = xm.xrt_world_size()\n",
    "from pytorch_lightning import Trainer\n\nn = xm.xrt_world_size()\nTrainer(accelerator='tpu', devices=1).fit(model)\n",
    "from pytorch_lightning import Trainer\n\nTrainer(tpu_cores=8).fit(model)\nif xm.get_ordinal() == 0:\n    save()\n",
    # a function of the file given to torch_xla's own API, to a builtin, or to a runner of one process
    "def fn(i):\n    return xm.get_ordinal()\n\nn = xm.xrt_world_size()\nxm.do_on_ordinals(fn, (), (0,))\n",
    "def fn(i):\n    return xm.get_ordinal()\n\nn = xm.xrt_world_size()\nranks = list(map(fn, range(n)))\n",
    "from absl import app\n\ndef main(argv):\n    print(xm.get_ordinal())\n\nn = xm.xrt_world_size()\napp.run(main)\n",
    # a main() that asks for its device only is one process's, not a replica's
    "from launcher import launch\n\ndef main():\n    device = xm.xla_device()\n\nn = xm.xrt_world_size()\nlaunch(main)\n",
])
def test_a_runtime_started_with_no_launch_before_it_is_not_reported(source):
    assert not [m for m in migrate(_XM + source).manual if m.rule == "spawn-runtime-before"]


# --- environment: a device variable becomes the PJRT_DEVICE its value names ----------------

def test_gpu_device_map_becomes_cuda_with_a_decision_for_2_9():
    outcome = migrate("""\
        import os
        os.environ['XRT_DEVICE_MAP'] = 'GPU:0;/job:localservice/replica:0/task:0/device:XLA_GPU:0'
        os.environ['XRT_WORKERS'] = 'localservice:0;grpc://localhost:40934'
        """)
    assert outcome.text == (
        "import os\n# TODO(xrt2pjrt): this ran on GPUs: PJRT_DEVICE=CUDA works on torch_xla 2.2–2.8 only (2.9 "
        "dropped CUDA: 'No PjRtPlugin registered for: CUDA'); stay on torch_xla 2.8, or run on TPU or CPU, or "
        "use PyTorch's own CUDA [env-xrt-cpu-topology]\nos.environ['PJRT_DEVICE'] = 'CUDA'\n")
    assert [(f.rule, f.line) for f in outcome.manual] == [("env-xrt-cpu-topology", 2)]


def test_tpu_node_map_keeps_tpu_and_reports_the_node_on_each_line():
    outcome = migrate("""\
        import os
        os.environ['XRT_WORKERS'] = 'tpu_worker:0;grpc://10.0.0.2:8470'
        os.environ['XRT_DEVICE_MAP'] = 'TPU:0;/job:tpu_worker/replica:0/task:0/device:TPU:0'
        """)
    assert outcome.text.endswith("[env-xrt-cpu-topology]\nos.environ['PJRT_DEVICE'] = 'TPU'\n")
    assert [(f.rule, f.line) for f in outcome.manual] == [("env-xrt-cpu-topology", 2), ("env-xrt-cpu-topology", 3)]
    assert all(f.message.startswith("this configured a remote TPU node") for f in outcome.manual)


def test_colab_tpu_address_read_is_reported():
    outcome = migrate("""\
        import os
        assert os.environ['COLAB_TPU_ADDR'], 'Make sure to select TPU'
        """)
    assert outcome.text == (
        "import os\n# TODO(xrt2pjrt): COLAB_TPU_ADDR is XRT-era: only the old Colab TPU runtime (a TPU node "
        "driven by XRT) set it, today's Colab TPU VM does not: test PJRT_DEVICE or xr.device_type() == 'TPU' "
        "instead [env-xrt-unprefixed]\nassert os.environ['COLAB_TPU_ADDR'], 'Make sure to select TPU'\n")
    assert [(f.rule, f.line) for f in outcome.manual] == [("env-xrt-unprefixed", 2)]


def test_device_map_from_a_variable_keeps_cpu_and_says_it_could_not_be_read():
    outcome = migrate("""\
        import os
        os.environ['XRT_DEVICE_MAP'] = device_map
        """)
    assert outcome.text.endswith("set PJRT_DEVICE to CPU, TPU or CUDA by it [env-xrt-cpu-topology]\n"
                                 "os.environ['PJRT_DEVICE'] = 'CPU'\n")
    assert [f.line for f in outcome.manual] == [2]


def test_a_write_of_a_variable_the_file_reads_again_stays():
    # Found in danielkunin/neural-mechanics: renamed, the write left a read raising KeyError.
    source = ('import os\n\nos.environ["XRT_TPU_CONFIG"] = "localservice;0;localhost:51011"\n'
              'print("config:", os.environ["XRT_TPU_CONFIG"])\n'
              "os.environ.setdefault('XRT_DEVICE_MAP', 'CPU:0;/job:localservice/replica:0/task:0/device:XLA_CPU:0')\n")
    out = migrate(source)
    assert 'os.environ["XRT_TPU_CONFIG"] = "localservice;0;localhost:51011"\n' in out.text
    assert "os.environ.setdefault('PJRT_DEVICE', 'CPU')" in out.text  # not read again: migrated
    (kept,) = [m for m in out.manual if "this write stays" in m.message]
    assert kept.line == 3 and "read elsewhere in this file" in kept.shown() and "(line 4)" in kept.shown()
    assert "set PJRT_DEVICE='TPU' instead" in kept.message
    assert migrate(out.text).text == out.text


def test_each_block_that_imported_torch_xla_gets_its_own_new_import(monkeypatch):
    """fairseq 0.10's train_step imports xm in two blocks; an import added only to the first
    made the second raise UnboundLocalError whenever the first had not run."""
    out = text("""\
        def train_step(self, samples):
            for i, sample in enumerate(samples):
                if self.tpu and i < len(samples) - 1:
                    import torch_xla.core.xla_model as xm

                    xm.mark_step()

            if self.tpu:
                import torch_xla.core.xla_model as xm

                xm.mark_step()
        """)
    assert out.count("import torch_xla\n") == 2 and "xm" not in out
    synced = []
    fake = types.ModuleType("torch_xla")  # SIMULATED torch_xla: only sync, counted
    fake.sync = lambda: synced.append(True)
    monkeypatch.setitem(sys.modules, "torch_xla", fake)
    namespace = {}
    exec(out, namespace)
    namespace["train_step"](types.SimpleNamespace(tpu=True), samples=[1])  # the first block does not run
    assert synced == [True]


def test_one_new_import_per_block_however_many_names_it_replaces():
    out = text("""\
        try:
            import torch_xla.core.xla_model as xm
            from torch_xla.core import xla_model
        except ImportError:
            xm = None

        def f():
            return xm.xrt_world_size(), xla_model.get_ordinal()
        """)
    assert out.count("import torch_xla.runtime as xr") == 1


@pytest.mark.parametrize("fallback", ["xm, xmp = None, None", "xm, xmp = [None] * 2", "xm = xmp = None"])
def test_an_import_fallback_that_sets_several_names_to_none_hides_nothing(fallback):
    # PyTorch Lightning 1.3: `xm, xmp, MpDeviceLoader, rendezvous = [None] * 4` made the
    # whole file look torch_xla-free.
    out = text(f"""\
        if _TPU_AVAILABLE:
            import torch_xla.core.xla_model as xm
        else:
            {fallback}

        def rank():
            return xm.get_ordinal()
        """)
    assert "return xr.global_ordinal()" in out


def test_the_environment_a_launcher_builds_for_a_child_process_is_migrated_too():
    # XRT-era launchers copied os.environ, set XRT_* in the copy and passed it to subprocess.
    out = text("""\
        import os
        import subprocess
        import torch_xla

        env = os.environ.copy()
        env['XRT_TPU_CONFIG'] = 'localservice;0;localhost:51011'
        env.update(XRT_MESH_SERVICE_ADDRESS='localhost:53627')
        subprocess.run(['python', 't.py'], env=dict(os.environ, XRT_TPU_CONFIG='localservice;0;localhost:51011'))
        config.update(lr=0.1)
        """)
    assert out.endswith(textwrap.dedent("""\
        env = os.environ.copy()
        env['PJRT_DEVICE'] = 'TPU'
        subprocess.run(['python', 't.py'], env=dict(os.environ, PJRT_DEVICE='TPU'))
        config.update(lr=0.1)
        """))


def test_a_torch_xla_module_borrowed_from_a_module_of_the_project_is_reported_once_per_name():
    # `from .tpu_utils import xm, xmp`: the file holds no torch_xla word, yet calls XRT-era APIs.
    out = migrate("from .tpu_utils import xm, xmp\n\nxmp.spawn(f, nprocs=8)\nn = xm.xrt_world_size()\nr = xm.get_ordinal()\n")
    assert [(m.rule, m.line) for m in out.manual] == [("manual-borrowed-alias", 3), ("manual-borrowed-alias", 4)]
    assert "xmp comes from .tpu_utils" in out.manual[0].message
    assert migrate(out.text).text == out.text


def test_a_removed_last_argument_takes_its_comment_with_it():
    # fairseq: `nprocs=8,  # use all 8 TPU cores` left its comment on the `args=` line.
    out = text("""\
        import torch_xla.distributed.xla_multiprocessing as xmp

        xmp.spawn(
            fn=distributed_main,
            args=(main, args, kwargs),
            nprocs=8,  # use all 8 TPU cores
        )
        xmp.spawn(
            fn,
            nprocs=8
        )
        """)
    assert out.endswith("xmp.spawn(\n    fn=distributed_main,\n    args=(main, args, kwargs),\n)\n"
                        "xmp.spawn(\n    fn\n)\n")


# --- new imports go where isort would put them -----------------------------------------------
@pytest.mark.parametrize("source, expected", [
    (  # isort's default: the plain imports of a block before its from-imports
        "import os\nfrom torch_xla import runtime as xr\nfrom torch_xla.core import xla_model as xm\n\nd = xm.xla_device()\n",
        "import os\nimport torch_xla\nfrom torch_xla import runtime as xr\n\nd = torch_xla.device()\n",
    ),
    (  # force_sort_within_sections (Google's style): by module alone
        "import os\nfrom torch_xla import runtime as xr\nimport torch_xla.core.xla_model as xm\n\nd = xm.xla_device()\n",
        "import os\nimport torch_xla\nfrom torch_xla import runtime as xr\n\nd = torch_xla.device()\n",
    ),
    (  # a block in no order: after it
        "import torch_xla.core.xla_model as xm\nimport sys\nimport os\n\nd = xm.xla_device()\n",
        "import sys\nimport os\nimport torch_xla\n\nd = torch_xla.device()\n",
    ),
])
def test_new_imports_are_placed_as_isort_would(source, expected):
    assert text(source) == expected


# --- a rewritten statement past the project's line length is split as black splits it ----------
@pytest.mark.parametrize("limit, source, expected", [
    (  # the arguments on a line of their own
        60, "import torch.distributed as dist\nimport torch_xla.distributed.xla_backend\n\ndef main():\n"
        "    dist.init_process_group('xla', timeout=timeout)\n",
        "import torch.distributed as dist\nimport torch_xla.distributed.xla_backend\n\ndef main():\n"
        "    dist.init_process_group(\n        'xla', timeout=timeout, init_method='xla://'\n    )\n",
    ),
    (  # one per line with the magic trailing comma, when they do not fit on one
        80, "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
        "xmp.spawn(_mp_fn, args=(flags,), nprocs=flags.num_cores, start_method='fork')\n",
        "import torch_xla.distributed.xla_multiprocessing as xmp\n\nxmp.spawn(\n    _mp_fn,\n    args=(flags,),\n"
        "    nprocs=1 if flags.num_cores == 1 else None,\n    start_method='fork',\n)\n",
    ),
    (  # a line that was already too long is the project's business
        60, "import torch_xla.distributed.parallel_loader as pl\n\n"
        "loader = pl.ParallelLoader(loader=train_loader, devices=[device], batchdim=0)\n",
        "import torch_xla.distributed.parallel_loader as pl\n\n"
        "loader = pl.ParallelLoader(cpu_loader=train_loader, devices=[device], batchdim=0)\n",
    ),
])
def test_a_rewritten_statement_past_the_line_length_is_split_as_black_would(limit, source, expected):
    out = text(source, line_length=limit)
    assert out == expected
    assert text(out, line_length=limit) == out  # and a second pass changes nothing


def test_the_line_length_is_the_closest_formatter_configurations(tmp_path):
    from xrt2pjrt import config

    (tmp_path / "pyproject.toml").write_text("[tool.black]\nline-length = 100\n")
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "pyproject.toml").write_text("[tool.ruff]\ntarget-version = 'py310'\n")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "ruff.toml").write_text("line-length = 120\n")
    (tmp_path / "plain").mkdir()
    assert config.line_length(tmp_path / "pkg" / "sub") == 88  # ruff's default: ruff is configured there
    assert config.line_length(tmp_path / "other") == 120
    assert config.line_length(tmp_path / "plain") == 100


def test_migrate_splits_as_the_projects_formatter_is_configured(tmp_path):
    import subprocess
    import sys

    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 60\n")
    script = tmp_path / "train.py"
    script.write_text("import torch.distributed as dist\nimport torch_xla.distributed.xla_backend\n\n"
                      "dist.init_process_group('xla', timeout=timeout)\n")
    ran = subprocess.run([sys.executable, "-m", "xrt2pjrt", "migrate", "--write", str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    assert script.read_text().endswith("dist.init_process_group(\n    'xla', timeout=timeout, init_method='xla://'\n)\n")


def test_a_todo_line_stays_with_its_import_when_new_imports_sort_before_it():
    # pytorch/xla v1.13's test_experimental_pjrt_multi_cpu.py: the TODO of the pjrt import
    # that stays went to the torch_xla.runtime import sorted in front of it
    source = ("import torch_xla.distributed.xla_multiprocessing as xmp\nfrom torch_xla.experimental import pjrt\n\n"
              "n = pjrt.world_size()\nspawners = [xmp.spawn, pjrt.spawn]\n")
    lines = text(source).splitlines()
    todo = next(i for i, line in enumerate(lines) if "[import-gone-module]" in line)
    assert lines[todo + 1] == "from torch_xla.experimental import pjrt"


_SEEDED = "import functools\nimport torch_xla.core.xla_model as xm\n" + _XMP + "\n"


@pytest.mark.parametrize("source, lines", [
    # the per-replica seed, as a function of the file given by name (checked on CPU under
    # `xrt2pjrt run --nprocs 2`: xr.global_ordinal() answered 0 in the workers of both replicas)
    ("def seed(worker_id):\n    np.random.seed(xm.get_ordinal() * 8 + worker_id)\n\n"
     "def _mp_fn(index):\n    DataLoader(data, num_workers=2, worker_init_fn=seed)\n\nxmp.spawn(_mp_fn)\n", [6]),
    # a lambda, and a partial whose function asks: both run in the worker
    ("def _mp_fn(index):\n    DataLoader(data, num_workers=2,\n"
     "               worker_init_fn=lambda w: np.random.seed(xm.xrt_world_size() + w))\n\nxmp.spawn(_mp_fn)\n", [7]),
    ("def seed(worker_id, base):\n    random.seed(base + xm.get_local_ordinal())\n\n"
     "def _mp_fn(index):\n    DataLoader(data, worker_init_fn=functools.partial(seed, base=1))\n\nxmp.spawn(_mp_fn)\n", [6]),
    # asked in the replica and handed over, in the partial's arguments or a default: nothing to do
    ("def seed(worker_id, rank):\n    np.random.seed(rank * 8 + worker_id)\n\n"
     "def _mp_fn(index):\n    init = functools.partial(seed, rank=xm.get_ordinal())\n"
     "    DataLoader(data, worker_init_fn=init)\n\nxmp.spawn(_mp_fn)\n", []),
])
def test_an_ordinal_asked_for_in_a_dataloader_worker_is_reported_and_not_blamed_on_the_launcher(source, lines):
    out = migrate(_SEEDED + source)
    assert [(item.rule, item.line) for item in out.manual] == [("spawn-dataloader-worker", line) for line in lines]
    assert "worker_init_fn=functools.partial(fn, rank=xr.global_ordinal())" in out.text or not lines


@pytest.mark.parametrize("source, how", [
    ("class Trainer:\n    def __init__(self):\n        self.xm = xm\n\n    def world(self):\n"
     "        return self.xm.xrt_world_size()\n", "is stored as self.xm"),
    ("def rank(module):\n    return module.get_ordinal()\n\nprint(rank(xm))\n", "is handed on here as a value"),
    ("rank = getattr(xm, name)()\n", "is handed on here as a value"),
])
def test_a_torch_xla_module_handed_on_is_reported_as_its_calls_are_not_followed(source, how):
    out = migrate("import torch_xla.core.xla_model as xm\n\n" + source)
    (item,) = [item for item in out.manual if item.rule == "manual-module-as-value"]
    assert item.message.startswith(f"xm (torch_xla.core.xla_model) {how}: ")
    assert not migrate("import torch_xla.core.xla_model as xm\n\n" + source, target="shim").manual


@pytest.mark.parametrize("source", [
    "device = xm.xla_device()\nprint(xm.__name__ == 'x', xm is None)\n",
    "try:\n    import torch_xla.core.xla_model as xm\nexcept ImportError:\n    xm = None\n",
    "import torch_xla.utils.serialization as xser\nsaved = [xser.save]\n",  # a module no rule migrates from
    "ok = hasattr(xm, 'xla_device')\n",  # the name spelled out: followed as xm.xla_device is
])
def test_a_torch_xla_module_used_by_its_import_name_is_not_reported(source):
    assert not migrate("import torch_xla.core.xla_model as xm\n" + source).manual


def test_a_device_list_asked_for_by_a_kind_named_elsewhere_says_it_no_longer_tells_the_kind():
    # timm 0.6's is_xla_available('TPU'): the list, then len(devices) >= 1 on the next line,
    # said True on every CPU host once devkind was gone
    out = migrate("import torch_xla.core.xla_model as xm\n\ndef is_xla_available(xla_device_type=None):\n"
                  "    devices = xm.get_xla_supported_devices(devkind=xla_device_type)\n    return len(devices) >= 1\n")
    (item,) = out.manual
    assert item.rule == "api-supported-devices" and item.message.startswith("devkind=xla_device_type dropped: ")
    assert "CPU devices on a CPU host" in item.message and "compare xr.device_type() with the kind" in item.message


def test_a_test_of_an_xrt_server_variable_is_said_to_be_always_false_now():
    # catalyst 22: os.environ.get("XRT_TORCH_DIST_ROOT") is not None decided "distributed on XLA"
    out = migrate("import os\nimport torch_xla\n\ndef is_xla_ddp():\n"
                  "    return os.environ.get('XRT_TORCH_DIST_ROOT') is not None\n")
    (item,) = out.manual
    assert "is now always False" in item.message and "use xr.world_size() > 1" in item.message


@pytest.mark.parametrize("call, reported", [
    ("xm.xla_device(n=index)", True), ("xm.xla_device(1)", True), ("xm.xla_device(0)", False),
    ("xm.xla_device(n=None)", False), ("xm.xla_device()", False)])
def test_a_device_index_says_what_it_counts_under_pjrt(call, reported):
    # XRT code picked replica `index`'s device; a PJRT replica sees its own device only
    # (torch_xla.device(1) raised IndexError on CPU)
    out = migrate(f"import torch_xla.core.xla_model as xm\n\ndef _mp_fn(index):\n    device = {call}\n")
    assert [item.rule for item in out.manual] == ["api-xla-device"] * reported
    assert "torch_xla.device(" in out.text


def test_an_xrt_variable_read_by_torch_xlas_own_getenv_as_is_reported():
    # a Lightning-style environment helper: the xenv name inlined to 'XRT_HOST_ORDINAL' read
    # 0 on every host, where the unmigrated line was a loud AttributeError
    out = migrate("def node_rank():\n    import torch_xla.core.xla_env_vars as xenv\n"
                  "    import torch_xla.utils.utils as xu\n"
                  "    return xu.getenv_as(xenv.HOST_ORDINAL, int, 0), xu.getenv_as('XRT_SHARD_ORDINAL', int, 0)\n")
    assert [(item.rule, item.message) for item in out.manual] == [
        ("env-xrt-replica-vars", "XRT_HOST_ORDINAL is never set under PJRT: use xr.host_index()"),
        ("env-xrt-replica-vars", "XRT_SHARD_ORDINAL is never set under PJRT: use xr.global_ordinal()")]


@pytest.mark.parametrize("call, reported", [
    ("torch_xla.amp.autocast()", True), ("torch_xla.amp.autocast(enabled=True)", True),
    ("torch_xla.amp.autocast(torch_xla.device())", False), ("torch_xla.amp.autocast(device=d)", False),
    ("torch_xla.amp.autocast(**options)", False)])
def test_a_parameter_the_target_needs_and_the_call_does_not_pass_is_reported(call, reported):
    # torch_xla.amp.autocast was torch.cuda.amp.autocast up to 2.0; 2.9's raises TypeError
    # without a device (checked on CPU)
    out = migrate(f"import torch_xla\nimport torch_xla.amp\n\nwith {call}:\n    pass\n")
    messages = [item.message for item in out.manual if item.rule == "api-not-in-target"]
    assert messages == ["torch_xla.amp.autocast needs device in torch_xla 2.9, which this call does not pass: a "
                        "TypeError there; pass the XLA device first: torch_xla.amp.autocast(torch_xla.device(), ...)"
                        ] * reported


@pytest.mark.parametrize("payload, reported", [
    ("'ready %d' % rank", True), ("'x' + str(rank)", True), ("'ab' 'cd'", True), ("msg", True),
    ("tag", False), ("data", False), ("b'x' + data", False)])
def test_a_rendezvous_payload_that_is_a_str_for_sure_is_reported(payload, reported):
    # 2.9's rendezvous raises TypeError for a str, which XRT's took (checked on CPU)
    out = migrate("import torch_xla.core.xla_model as xm\n\ndef f(rank, tag):\n    msg = 'done %s' % tag\n"
                  f"    data = b'x'\n    xm.rendezvous('step', {payload})\n")
    assert [item.rule for item in out.manual] == ["api-rendezvous-payload"] * reported


def test_a_non_ascii_rendezvous_payload_is_encoded_as_xrt_did():
    assert "xm.rendezvous('step', 'héllo'.encode())" in text(
        "import torch_xla.core.xla_model as xm\n\nxm.rendezvous('step', 'héllo')\n")


@pytest.mark.parametrize("source, reported", [
    ("def handler_setup():\n    signal.signal(signal.SIGTERM, stop)\n\n"
     "def _mp_fn(index):\n    handler_setup()\n\nxmp.spawn(_mp_fn)\n", True),  # reached through a call
    ("def _mp_fn(index):\n    signal.signal(signal.SIGTERM, stop)\n\nxmp.spawn(_mp_fn, nprocs=1)\n", False),
    ("def main():\n    signal.signal(signal.SIGTERM, stop)\n    xmp.spawn(_mp_fn)\n", False),  # the launcher's
])
def test_a_signal_handler_set_in_the_replicas_code_is_reported(source, reported):
    out = migrate("import signal\n" + _XMP + "\n" + source)
    assert [item.rule for item in out.manual] == ["spawn-signal-handler"] * reported


@pytest.mark.parametrize("source, target, reported", [
    # checked on CPU with torch_xla 2.9: the launcher exits 0 at the spawn, and what follows never runs
    ("def stop_early():\n    sys.exit(0)\n\ndef _mp_fn(index):\n    stop_early()\n\n"
     "xmp.spawn(_mp_fn)\nupload()\n", "native", "sys.exit(0) ends the launcher with status 0"),
    ("from sys import exit\n\ndef _mp_fn(index):\n    exit(3)\n\nxmp.spawn(_mp_fn)\n", "native", "SystemExit"),
    ("def _mp_fn(index):\n    os._exit(0)\n\nxmp.spawn(_mp_fn)\n", "native", "BrokenProcessPool"),
    ("def _mp_fn(index):\n    raise SystemExit(0)\n\nxmp.spawn(_mp_fn)\n", "native", "SystemExit"),
    ("def _mp_fn(index):\n    exit(0)\n\nxmp.spawn(_mp_fn)\n", "native", "SystemExit"),
    ("def _mp_fn(index):\n    raise SystemExit\n\nxmp.spawn(_mp_fn)\n", "shim", None),
    # the shim's spawn ends only that replica on sys.exit (as XRT did), but cannot catch os._exit
    ("def _mp_fn(index):\n    sys.exit(0)\n\nxmp.spawn(_mp_fn)\n", "shim", None),
    ("def _mp_fn(index):\n    os._exit(0)\n\nxmp.spawn(_mp_fn)\n", "shim", "BrokenProcessPool"),
    # one process: fn runs in the launcher, under XRT too; and the launcher's own exit
    ("def _mp_fn(index):\n    sys.exit(0)\n\nxmp.spawn(_mp_fn, nprocs=1)\n", "native", None),
    ("def main():\n    xmp.spawn(_mp_fn)\n    sys.exit(0)\n", "native", None),
])
def test_an_exit_in_the_replicas_code_is_reported(source, target, reported):
    out = migrate("import os\nimport sys\n" + _XMP + "\n" + source, target=target)
    items = [item for item in out.manual if item.rule == "spawn-exit"]
    assert len(items) == bool(reported)
    if reported:
        assert reported in items[0].message


@pytest.mark.parametrize("line, reported", [
    ("os.system('python3 -m torch_xla.distributed.xla_dist --tpu=p -- python3 t.py')\n", True),
    ("cmd = ['python3', '-m', 'torch_xla.distributed.xla_dist', '--tpu=p']\n", True),
    ("'''Launch with python -m torch_xla.distributed.xla_dist.'''\n", False),  # prose
    ("name = 'torch_xla.distributed.xla_multiprocessing'\n", False)])
def test_a_command_that_starts_xla_dist_from_python_is_reported(line, reported):
    out = migrate("import os\nimport torch_xla\n\n" + line)
    assert [item.rule for item in out.manual] == ["manual-xla-dist"] * reported


@pytest.mark.parametrize("source, after", [
    ("xm.xla_device_hw(d) != \"GPU\"", "xm.xla_device_hw(d) != \"CUDA\""),
    ("'GPU' == xr.device_type()", "'CUDA' == xr.device_type()"),
    ("xm.xla_device_hw(d) == 'TPU'", "xm.xla_device_hw(d) == 'TPU'"),
    ("kind == 'GPU'", "kind == 'GPU'")])
def test_a_gpu_device_type_test_names_cuda(source, after):
    out = text(f"import torch_xla.core.xla_model as xm\nimport torch_xla.runtime as xr\n\nok = {source}\n")
    assert f"ok = {after}\n" in out


@pytest.mark.parametrize("data, reported", [
    # checked on CPU with torch_xla 2.9: a float reduces, a numpy.float64 raises UnpicklingError
    ("np.mean(losses)", True), ("metrics.accuracy_score(y, p)", True), ("obj", True), ("preds.numpy()", True),
    ("loss.item()", False), ("float(acc)", False), ("torch.tensor(acc)", False), ("loss.detach()", False),
    ("3", False), ("total.item() / flags.batches", False), ("np.mean(a) / n", True),
    # pytorch/xla 1.13's own examples (test_train_mp_imagenet.py, test_mp_mesh_reduce.py): a
    # name bound to a number or a tensor before the call, rebound to the result after it
    ("accuracy", False), ("svalue", False), ("tvalue", False), ("scores", True),
    ("(v := float(acc))", False), ("acc.item() +  # the epoch's\n        0.0", False)])
def test_a_mesh_reduce_of_what_may_not_be_a_tensor_or_number_is_reported(data, reported):
    source = ("import numpy as np\nimport torch\nimport torch_xla.core.xla_model as xm\n\n"
              "def test(correct, total_samples):\n    accuracy = 100.0 * correct.item() / total_samples\n"
              "    svalue = 1.25\n    tvalue = torch.tensor([[1, 2], [3, 4]])\n    scores = np.array([1.0])\n"
              f"    accuracy = xm.mesh_reduce('v', {data}, np.mean)\n")
    assert [item.rule for item in migrate(source).manual] == ["manual-mesh-reduce-objects"] * reported
    assert not migrate(source, target="shim").manual  # the shim's loads any value


def test_an_attribute_of_an_instance_that_holds_a_lock_is_not_called_a_method():
    out = migrate(_XMP + "import multiprocessing as mp\n\nclass Manager:\n    def __init__(self):\n"
                  "        self.lock = mp.Lock()\n\n    def runner(self, index, cfg):\n        pass\n\n"
                  "    def run(self):\n        xmp.spawn(_mp_fn, args=(self.config, self.lr), start_method='fork')\n")
    assert not [m for m in out.manual if m.rule == "spawn-unpicklable"]


def test_a_method_of_a_class_that_says_how_it_pickles_is_not_reported():
    out = migrate(_XMP + "import multiprocessing as mp\n\nclass Manager:\n    def __init__(self):\n"
                  "        self.lock = mp.Lock()\n\n    def __getstate__(self):\n        return {}\n\n"
                  "    def runner(self, index):\n        pass\n\n"
                  "    def run(self):\n        xmp.spawn(self.runner, start_method='fork')\n")
    assert not [m for m in out.manual if m.rule == "spawn-unpicklable"]


@pytest.mark.parametrize("data, reported", [
    # checked on CPU with torch_xla 2.9: a tensor comes back as a list, a dict as a dict
    ("couplings", True), ("torch.ones(2)", True), ("data=weights", True),
    ("(x, y)", False), ("[x, y]", False), ("{'x': x}", False), ("*batch", False)])
def test_a_send_cpu_data_to_device_of_what_may_be_one_tensor_is_reported(data, reported):
    source = f"import torch\nimport torch_xla.core.xla_model as xm\n\nv = xm.send_cpu_data_to_device({data}, device=device)\n"
    assert [item.rule for item in migrate(source).manual] == ["manual-send-cpu-data-tensor"] * reported
    assert not migrate(source, target="shim").manual  # the shim's returns a tensor for a tensor


def test_a_from_import_of_xrt_names_pointed_at_the_shim_is_no_item():
    # the migrated file runs (checked on CPU): the shim defines both names
    out = migrate("from torch_xla.core.xla_model import xrt_world_size, get_ordinal as go\n\nprint(xrt_world_size(), go())\n",
                  target="shim")
    assert out.text.startswith("from xrt2pjrt.shim.xla_model import xrt_world_size, get_ordinal as go\n")
    assert out.manual == []


def test_xrt_metric_names_become_pjrts_and_those_pjrt_never_records_are_reported():
    # checked on CPU with torch_xla 2.9: after a step, met.metric_names() has TransferToDeviceTime
    # and TransferFromDeviceTime, and metric_data of an XRT name is None
    out = migrate("import torch_xla.debug.metrics as met\n\nt = met.metric_data(\"TransferFromServerTime\")\n"
                  "n = met.counter_value('XrtCompile')\nother = met.metric_data('CompileTime')\n")
    assert 't = met.metric_data("TransferFromDeviceTime")\n' in out.text
    assert "other = met.metric_data('CompileTime')\n" in out.text
    assert [(item.rule, item.line) for item in out.manual] == [("api-xrt-metric-names", 4)]


def test_a_mesh_reduce_of_a_value_a_loop_rebinds_to_numpy_after_the_call_is_reported():
    out = migrate("import numpy as np\nimport torch_xla.core.xla_model as xm\n\nacc = 0.0\nfor epoch in range(3):\n"
                  "    print(xm.mesh_reduce('acc', acc, np.mean))\n    acc = metrics.accuracy_score(y, p)\n")
    assert [item.rule for item in out.manual] == ["manual-mesh-reduce-objects"]
