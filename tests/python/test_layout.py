"""The Python rewriter keeps the file's layout: bytes outside rewritten nodes, multi-line
calls and their comments, one TODO line per item, and statements it makes longer split
as black splits them at the project's line length (python/layout.py, config.py)."""

import textwrap

import pytest

from python_migrate import migrate, text


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
    source = "import torch_xla.core.xla_model as xm\n\nxm.save(state, path)\nstate = torch.load(path)\n"
    first = migrate(source)
    assert first.text.count("TODO(xrt2pjrt)") == 1
    assert [f.rule for f in first.manual] == ["manual-save-barrier"]
    assert first.manual[0].line == 3


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
    assert out.endswith(
        textwrap.dedent("""\
        xmp.spawn(
            _mp_fn,
            args=(flags,),
        )
        dist.init_process_group(
            'xla',
            init_method='xla://',
        )
        """)
    )
    assert "import torch.distributed as dist\nimport torch_xla.distributed.xla_backend\n" in out


def test_an_import_run_for_its_effect_joins_the_files_guarded_torch_xla_imports():
    # the final count: a file that also runs without torch_xla (a GPU mode) guards its imports
    out = text("""\
        import torch.distributed as dist

        try:
            import torch_xla.core.xla_model as xm
        except ImportError:
            xm = None

        def init():
            dist.init_process_group('xla', init_method='pjrt://')
        """)
    assert (
        out.index("try:") < out.index("    import torch_xla.distributed.xla_backend") < out.index("except ImportError")
    )


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
    assert out.endswith(
        "xmp.spawn(\n    fn=distributed_main,\n    args=(main, args, kwargs),\n)\nxmp.spawn(\n    fn\n)\n"
    )


# --- a rewritten statement past the project's line length is split as black splits it ----------
@pytest.mark.parametrize(
    "limit, source, expected",
    [
        (  # the arguments on a line of their own
            60,
            "import torch.distributed as dist\nimport torch_xla.distributed.xla_backend\n\ndef main():\n"
            "    dist.init_process_group('xla', timeout=timeout)\n",
            "import torch.distributed as dist\nimport torch_xla.distributed.xla_backend\n\ndef main():\n"
            "    dist.init_process_group(\n        'xla', timeout=timeout, init_method='xla://'\n    )\n",
        ),
        (  # one per line with the magic trailing comma, when they do not fit on one
            80,
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "xmp.spawn(_mp_fn, args=(flags,), nprocs=flags.num_cores, start_method='fork')\n",
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\nxmp.spawn(\n    _mp_fn,\n    args=(flags,),\n"
            "    nprocs=1 if flags.num_cores == 1 else None,\n    start_method='fork',\n)\n",
        ),
        (  # a line that was already too long is the project's business
            60,
            "import torch_xla.distributed.parallel_loader as pl\n\n"
            "loader = pl.ParallelLoader(loader=train_loader, devices=[device], batchdim=0)\n",
            "import torch_xla.distributed.parallel_loader as pl\n\n"
            "loader = pl.ParallelLoader(cpu_loader=train_loader, devices=[device], batchdim=0)\n",
        ),
    ],
)
def test_a_rewritten_statement_past_the_line_length_is_split_as_black_would(limit, source, expected):
    out = text(source, line_length=limit)
    assert out == expected
    assert text(out, line_length=limit) == out  # and a second pass changes nothing


def test_the_line_length_is_the_closest_formatter_configurations(tmp_path):
    from xrt2pjrt import width

    (tmp_path / "pyproject.toml").write_text("[tool.black]\nline-length = 100\n")
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "pyproject.toml").write_text("[tool.ruff]\ntarget-version = 'py310'\n")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "ruff.toml").write_text("line-length = 120\n")
    (tmp_path / "plain").mkdir()
    assert width.of(tmp_path / "pkg" / "sub") == width.Width(
        88, formatter=True
    )  # ruff's default: ruff is configured there
    assert width.of(tmp_path / "other") == width.Width(120, formatter=True)
    assert width.of(tmp_path / "plain") == width.Width(100, formatter=True)


def test_migrate_splits_as_the_projects_formatter_is_configured(tmp_path):
    import subprocess
    import sys

    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 60\n")
    script = tmp_path / "train.py"
    script.write_text(
        "import torch.distributed as dist\nimport torch_xla.distributed.xla_backend\n\n"
        "dist.init_process_group('xla', timeout=timeout)\n"
    )
    ran = subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", "migrate", "--write", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr
    assert script.read_text().endswith(
        "dist.init_process_group(\n    'xla', timeout=timeout, init_method='xla://'\n)\n"
    )


def test_the_todo_of_a_removed_statement_stays_in_the_code():
    # round 13: a launcher's XRT settings go (safe), and their item asks that the launcher go too;
    # its TODO line takes the statements' place: before the next statement, at a block's end, on
    # the pass of an emptied block, at the module's end; one line for the items of the same text
    todo = "# TODO(xrt2pjrt): use xmp.spawn or torch_xla.launch [env-xrt-replica-vars]"
    out = migrate(
        "import os\n\ndef launch(rank, n):\n"
        "    os.environ['XRT_HOST_ORDINAL'] = str(rank)\n    os.environ['XRT_SHARD_WORLD_SIZE'] = str(n)\n"
        "    run()\n\ndef last(rank):\n    print(rank)\n    os.environ['XRT_HOST_ORDINAL'] = str(rank)\n\n"
        "def only():\n    os.environ['XRT_HOST_ORDINAL'] = '0'\n\nos.environ['XRT_HOST_ORDINAL'] = '0'\n"
    )
    assert out.text == (
        f"import os\n\ndef launch(rank, n):\n    {todo}\n    run()\n\ndef last(rank):\n    print(rank)\n    {todo}\n\n"
        f"def only():\n    {todo}\n    pass\n\n{todo}\n"
    )
    assert len(out.manual) == 5
