"""env-gone-setting and env-shell-gone-setting beyond their examples: what the change says,
a write the file reads, names that are not torch_xla's."""

from python_migrate import migrate
from text_migrate import rewrite_shell
from xrt2pjrt.registry import Options, all_rules
from xrt2pjrt.rules.env._gone import NAMES
from xrt2pjrt.text import yaml as yaml_rewriter


def test_the_change_cites_the_last_release_that_read_it():
    outcome = migrate("import os\n\nos.environ['XLA_TRIM_GRAPH_SIZE'] = '100000'\n")
    assert outcome.text == "import os\n"
    (change,) = outcome.changes
    assert change.message == (
        "XLA_TRIM_GRAPH_SIZE removed: torch_xla 2.9 reads it nowhere (last read by 2.4, at "
        "pytorch/xla v2.4.0:torch_xla/csrc/init_python_bindings.cpp:798)"
    )


def test_a_write_the_file_reads_stays_until_the_read_goes():
    outcome = migrate("""\
        import os
        os.environ['XLA_USE_IFRT'] = '1'
        if os.environ['XLA_USE_IFRT'] == '1':
            print('IFRT')
        """)
    assert "os.environ['XLA_USE_IFRT'] = '1'" in outcome.text
    assert [(f.line, f.message) for f in outcome.manual] == [
        (2, "migrate the reads first, then this write"),
        (3, "drop it: torch_xla 2.9 ignores it"),
    ]


def test_only_torch_xla_s_own_names_and_none_an_older_rule_has():
    assert "XLA_TRIM_GRAPH_SIZE" in NAMES and "PJRT_ALLOCATOR_FRACTION" in NAMES
    # torch_xla 2.0 read CUDA_VISIBLE_DEVICES (xrt_init.py): CUDA's own, never removed
    assert "CUDA_VISIBLE_DEVICES" not in NAMES and "XRT_TPU_CONFIG" not in NAMES
    assert "XLA_TENSOR_ALLOCATOR_MAXSIZE" not in NAMES  # env-xrt-unprefixed says what it was
    source = "export CUDA_VISIBLE_DEVICES=0\npython3 train_torch.py\n"
    assert rewrite_shell(source).text == source


def test_a_yaml_env_entry_goes_and_the_rest_stays():
    text = (
        "env:\n  - name: PJRT_ALLOCATOR_FRACTION\n    value: \"0.5\"\n  - name: PJRT_DEVICE\n    value: TPU\n"
        "command: [python3, train_torch.py]\n"
    )
    outcome = yaml_rewriter.rewrite(text, Options(rules=frozenset(all_rules())))
    assert outcome.text == "env:\n  - name: PJRT_DEVICE\n    value: TPU\ncommand: [python3, train_torch.py]\n"
    assert [f.rule for f in outcome.changes] == ["env-shell-gone-setting"]


def test_a_read_with_a_fallback_of_its_own_is_no_item():
    """issue 32's ninth round: a project's patched copy of torch_xla 1.x's xla_dist.py reads the
    heartbeat settings it defines, each with a default; a read with none is still asked about."""
    outcome = migrate("""\
        import os
        import torch_xla.utils.utils as xu
        timeout = xu.getenv_as('XLA_UNEVEN_HEARTBEAT_TIMEOUT', int, 900)
        log = xu.getenv_as('XLA_DEBUG_LOG_HEARTBEATS', bool, defval=False)
        trim = os.getenv('XLA_TRIM_GRAPH_SIZE', '100000')
        fraction = os.environ['PJRT_ALLOCATOR_FRACTION']
        size = os.environ.get('XLA_TRIM_GRAPH_SIZE', None)
        """)
    assert [(f.line, f.rule) for f in outcome.manual] == [(6, "env-gone-setting"), (7, "env-gone-setting")]
