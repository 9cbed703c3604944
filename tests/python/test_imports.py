"""The Python rewriter's imports (python/imports.py) on the shapes real XRT-era code has.

Only names that resolve to torch_xla change, whatever the import form; look-alikes
(``from xmanager import xm``, ``torch.multiprocessing.spawn``, ``dist.all_gather``, a
parameter called ``xm``) never do; imports a rewrite leaves unused go, new ones land
beside the imports they replace, where isort would put them.
"""

import sys
import textwrap
import types

import pytest

from python_migrate import migrate, same, text


# --- import forms -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "imports, call",
    [
        ("import torch_xla.core.xla_model as xm", "xm.get_ordinal()"),
        ("import torch_xla.core.xla_model as tpu_xm", "tpu_xm.get_ordinal()"),
        ("from torch_xla.core import xla_model", "xla_model.get_ordinal()"),
        ("from torch_xla.core import xla_model as xm", "xm.get_ordinal()"),
        ("from torch_xla.core.xla_model import get_ordinal", "get_ordinal()"),
        ("from torch_xla.core.xla_model import get_ordinal as go", "go()"),
        ("import torch_xla.core.xla_model", "torch_xla.core.xla_model.get_ordinal()"),
    ],
)
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
    assert out == (
        "import torch_xla.core.xla_model as xm\nimport torch_xla.runtime as xr\n\n"
        "xm.master_print(xr.global_ordinal())\n"
    )


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


def test_the_comment_of_a_replaced_import_stays_on_the_line_that_replaces_it():
    # Found in accelerate 0.12: `import torch_xla.core.xla_model as xm  # noqa: F401` lost its comment.
    out = text("import torch_xla.core.xla_model as xm  # noqa: F401\n\ndevice = xm.xla_device()\n")
    assert out == "import torch_xla  # noqa: F401\n\ndevice = torch_xla.device()\n"


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


# --- new imports go where isort would put them -----------------------------------------------
@pytest.mark.parametrize(
    "source, expected",
    [
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
    ],
)
def test_new_imports_are_placed_as_isort_would(source, expected):
    assert text(source) == expected


def test_a_todo_line_stays_with_its_import_when_new_imports_sort_before_it():
    # pytorch/xla v1.13's test_experimental_pjrt_multi_cpu.py: the TODO of the pjrt import
    # that stays went to the torch_xla.runtime import sorted in front of it
    source = (
        "import torch_xla.distributed.xla_multiprocessing as xmp\nfrom torch_xla.experimental import pjrt\n\n"
        "n = pjrt.world_size()\nspawners = [xmp.spawn, pjrt.spawn]\n"
    )
    lines = text(source).splitlines()
    todo = next(i for i, line in enumerate(lines) if "[import-gone-module]" in line)
    assert lines[todo + 1] == "from torch_xla.experimental import pjrt"
