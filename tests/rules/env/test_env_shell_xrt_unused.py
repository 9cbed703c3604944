"""env-shell-xrt-unused beyond its examples: TPUVM_MODE read in a build script."""

from text_migrate import rewrite_shell as rewrite


def test_tpuvm_mode_read_in_a_build_script_says_what_it_means_now():
    """xla v2.0 scripts/build_torch_wheels.sh: no topology hint, which would not apply."""
    text = 'if [ "$TPUVM_MODE" == "1" ]; then\n  pip install torch_xla[tpuvm]\nfi\n'
    tpuvm = [f for f in rewrite(text).manual if f.rule == "env-shell-xrt-unused"]
    assert [(f.line, f.message) for f in tpuvm] == [(1, (
        "TPUVM_MODE is read here but nothing sets it under PJRT: torch_xla 2.1+ ignores it: TPU nodes are gone, "
        "every TPU torch_xla runs on is a TPU VM, so code that branches on it wants the TPU VM branch"))]
