"""A torch 1.x pin beside a torch_xla 2.x install: reported (install-xrt-era-release), as
the pin alone is; beside an XRT-era torch_xla, that install's item says it."""

from text_migrate import rewrite_shell


def test_torch_1_beside_torch_xla_2_9_is_reported():
    outcome = rewrite_shell("pip install torch==1.12.0 'torch_xla[tpu]==2.9.0'\n")
    assert [(f.rule, f.message) for f in outcome.manual] == [("install-xrt-era-release", "pin torch~=2.9.0 instead")]


def test_beside_an_xrt_era_torch_xla_one_item_says_both():
    outcome = rewrite_shell("pip install torch==1.13.0 torch_xla==1.13\n")
    assert [f.rule for f in outcome.manual] == ["install-xrt-era-release"]
    assert "torch_xla 1.13" in outcome.manual[0].detail


def test_a_matching_pair_is_left_alone():
    outcome = rewrite_shell("pip install torch==2.9.0 'torch_xla[tpu]==2.9.0'\n")
    assert not outcome.manual


def test_the_torchvision_and_torchaudio_of_a_torch_1_are_pins_of_it():
    # round 13: a TPU set-up pins torchvision 0.12 (torch 1.11's) and torchaudio 0.8 (torch 1.8's)
    outcome = rewrite_shell(
        "pip install 'torch_xla[tpu]==2.9.0'\npip install torchvision==0.12.0\npip install torchaudio==0.8.0\n"
    )
    assert [(f.line, f.message) for f in outcome.manual] == [
        (2, "pin torchvision~=0.24.0 instead"),
        (3, "pin torchaudio~=2.9.0 instead"),
    ]
    assert "the release of torch 1.11" in outcome.manual[0].detail
    with_torch = rewrite_shell(
        "pip install 'torch_xla[tpu]==2.9.0'\npip install torch==1.11.0\npip install torchvision==0.12.0\n"
    )
    assert [f.message for f in with_torch.manual] == ["pin torch~=2.9.0 instead"]  # torch's item says the family
    assert not rewrite_shell("pip install 'torch_xla[tpu]==2.9.0' torchvision==0.24.0 torchaudio==2.9.0\n").manual
