"""env-shell-xrt-tpu-config beyond its examples: a TPU node's config written to ~/.bashrc."""

from text_migrate import REMOTE, assert_decisions, rewrite_shell as rewrite, without_todos


def test_a_quoted_setting_written_to_bashrc_reports_the_tpu_node():
    text = 'echo "export XRT_TPU_CONFIG=\\"tpu_worker;0;\\$TPU_IP:8470\\"" >> ~/.bashrc\n'
    outcome = rewrite(text)
    assert without_todos(outcome.text) == 'echo "export PJRT_DEVICE=TPU" >> ~/.bashrc\n'
    assert_decisions(outcome, [("env-shell-xrt-tpu-config", 1, REMOTE)])
