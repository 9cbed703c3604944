"""env-deprecated and env-shell-deprecated beyond their examples: the forms a setting takes,
and what is left alone."""

from python_migrate import migrate
from text_migrate import rewrite_shell
from xrt2pjrt.meanings.settings import WARNED
from xrt2pjrt.python.settings_surface import status
from xrt2pjrt.registry import Options, all_rules
from xrt2pjrt.text import dockerfile


def test_every_warned_setting_is_one_torch_xla_2_9_warns_about():
    assert {name: status(name, (2, 9)) for name in WARNED} == {
        "XLA_USE_FP16": "warns",
        "XLA_DOWNCAST_FP16": "warns",
        "XLA_USE_BF16": "deprecated",
        "XLA_DOWNCAST_BF16": "deprecated",
        "XLA_USE_32BIT_LONG": "deprecated",
        "XLA_USE_SPMD": "deprecated",
    }


def test_a_read_and_a_dict_of_what_2_9_ignores_are_reported_and_what_it_still_reads_is_left():
    outcome = migrate("""\
        import os
        half = os.environ.get('XLA_DOWNCAST_FP16') == '1'
        env = {'XLA_USE_FP16': '1'}
        bf16 = {'XLA_DOWNCAST_BF16': '1'}
        del os.environ['XLA_USE_BF16']
        """)
    assert [(f.line, f.message) for f in outcome.manual] == [
        (2, WARNED["XLA_DOWNCAST_FP16"].do),
        (3, WARNED["XLA_USE_FP16"].do),
    ]
    assert "del os.environ['XLA_USE_BF16']" in outcome.text


def test_a_setting_the_target_still_reads_is_no_item_and_one_it_only_warns_of_is():
    """issue 32's held-back count: XLA_USE_BF16 set for a 2.9 run works as it did (a notice
    on every run): nothing to decide there. XLA_USE_FP16 did on 2.4, and is silent from 2.5."""
    source = "import os\n\nos.environ['XLA_USE_FP16'] = '1'\n"
    assert not migrate(source, target_version=(2, 4)).manual
    assert [f.rule for f in migrate(source, target_version=(2, 5)).manual] == ["env-deprecated"]
    assert not migrate(source.replace("FP16", "BF16")).manual


def test_a_dockerfile_env_reports_what_the_target_ignores_and_keeps_every_setting():
    text = "FROM python:3.11\nENV PJRT_DEVICE=TPU XLA_USE_FP16=1 XLA_USE_BF16=1\nRUN pip install torch_xla\n"
    outcome = dockerfile.rewrite(text, Options(rules=frozenset(all_rules())))
    assert [(f.rule, f.line, f.message) for f in outcome.manual] == [
        ("env-shell-deprecated", 2, WARNED["XLA_USE_FP16"].do),
    ]
    assert "ENV PJRT_DEVICE=TPU XLA_USE_FP16=1 XLA_USE_BF16=1\n" in outcome.text


def test_an_unset_in_a_script_is_no_setting():
    outcome = rewrite_shell("unset XLA_USE_FP16\npython3 train.py\n")
    assert outcome.text == "unset XLA_USE_FP16\npython3 train.py\n" and not outcome.manual


def test_a_setting_xla_dist_hands_its_workers_is_reported_and_still_handed_over():
    """--env of an xla_dist call becomes a prefix of the worker's command (launch-xla-dist):
    the setting is the workers', so it is reported there, and it still reaches them."""
    outcome = rewrite_shell(
        "python3 -m torch_xla.distributed.xla_dist --tpu=pod --env XLA_USE_FP16=1 -- python3 train.py\n"
    )
    assert [(f.rule, f.line, f.message) for f in outcome.manual] == [
        ("env-shell-deprecated", 1, WARNED["XLA_USE_FP16"].do)
    ]
    assert "PJRT_DEVICE=TPU XLA_USE_FP16=1 python3 train.py" in outcome.text
