"""env-shell-gpu-num-devices beyond its examples: export, older targets, other frameworks."""

from text_migrate import rewrite_shell as rewrite


def test_an_export_is_reported_and_kept():
    outcome = rewrite("export PJRT_DEVICE=CUDA GPU_NUM_DEVICES=4\npython3 -m torch_xla_train\n")
    # (PJRT_DEVICE=CUDA is env-shell-pjrt-device-gpu's: 2.9 has no CUDA device either)
    assert [(f.rule, f.line) for f in outcome.manual] == [
        ("env-shell-gpu-num-devices", 1),
        ("env-shell-pjrt-device-gpu", 1),
    ]
    assert "GPU_NUM_DEVICES=4" in outcome.text


def test_left_alone_for_a_target_that_still_reads_it():
    text = "GPU_NUM_DEVICES=4 python3 train_torch.py\n"
    outcome = rewrite(text, target_version=(2, 8))
    assert outcome.text == text and not outcome.manual


def test_a_script_that_does_not_use_pytorch_is_left_alone():
    text = "export GPU_NUM_DEVICES=2\n./render --gpus $GPU_NUM_DEVICES\n"
    outcome = rewrite(text)
    assert outcome.text == text and not outcome.manual
