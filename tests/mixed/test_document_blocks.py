"""A document's code blocks: every block read as what it holds, each its own program."""

from __future__ import annotations

import subprocess
import sys

import pytest

from xrt2pjrt.registry import Options, all_rules
from xrt2pjrt.mixed import markdown
from xrt2pjrt.text.installs import finding as install_finding

ALL = Options(rules=frozenset(all_rules()), unsafe_fixes=True)


def migrated(text: str):
    """The rewrite of ``text``, checked to be a fixed point: a second pass changes nothing."""
    outcome = markdown.rewrite(text, ALL)
    again = markdown.rewrite(outcome.text, ALL)
    assert again.text == outcome.text and again.changes == [], again.changes
    return outcome


def kinds(text: str) -> list[tuple[str, str]]:
    return [(block.tag, block.kind) for block in markdown.blocks(text)]


# As AWS's SageMaker guide writes them: untagged fences in list items.
STEPS = """1. Import the optimization libraries\\.

   ```
   import torch_xla
   import torch_xla.core.xla_model as xm
   ```

1. Change the target device:

   ```
   device=xm.xla_device()
   ```

1. Set the variables:

   ```
   local_rank=xm.get_local_ordinal()
   world_size=xm.xrt_world_size()
   ```

1. Then launch:

   ```
   export XRT_TPU_CONFIG="localservice;0;localhost:51011"
   ```
"""


def test_an_untagged_block_is_python_when_its_text_is():
    assert kinds(STEPS) == [("", "python")] * 3 + [("", "shell")]
    outcome = migrated(STEPS)
    assert outcome.text == STEPS.replace(
        "   device=xm.xla_device()", "   import torch_xla\n   device=torch_xla.device()"
    ).replace(
        "   local_rank=xm.get_local_ordinal()\n   world_size=xm.xrt_world_size()",
        "   import torch_xla.runtime as xr\n   local_rank=xr.local_ordinal()\n   world_size=xr.world_size()",
    ).replace('XRT_TPU_CONFIG="localservice;0;localhost:51011"', "PJRT_DEVICE=TPU")
    assert [(f.rule, f.line) for f in outcome.changes] == [
        ("api-xla-device", 11),
        ("api-local-ordinal", 17),
        ("api-world-size", 18),
        ("env-shell-xrt-tpu-config", 24),
    ]


@pytest.mark.parametrize(
    "tag, body, kind",
    [
        ("py", "import torch_xla.core.xla_model as xm\n", "python"),
        ("python3", "xm.mark_step()\n", "python"),
        ("ipython", "!pip install torch_xla==1.13\n", "python"),
        ("pycon", ">>> import torch_xla\n", "pycon"),
        ("", ">>> import torch_xla\n>>> torch_xla.__version__\n'1.13'\n", "pycon"),
        ("text", "xm.mark_step()\n", "python"),
        ("text", "XRT_TPU_CONFIG=\"localservice;0;localhost:51011\"\n", "shell"),  # parses as Python, reads as shell
        ("", "python3 -m torch_xla.distributed.xla_dist --tpu=pod -- python3 train.py\n", "shell"),
        ("bash", "xm.mark_step()\n", "shell"),  # a tag of a language decides
        ("c++", "auto t = torch_xla::bridge::GetXlaDevice();\n", None),
    ],
)
def test_the_kind_of_a_block(tag, body, kind):
    assert kinds(f"```{tag}\n{body}```\n") == ([(tag, kind)] if kind else [])


def test_ipython_lines_in_a_python_block_are_commands_and_settings():
    # as fastai_xla_extensions' README and nlpbook's pages write their Colab set-up
    text = (
        "```python\n#hide_output\n!pip install -Uqq cloud-tpu-client==0.10 https://storage.googleapis.com/tpu-pytorch/"
        "wheels/torch_xla-1.7-cp37-cp37m-linux_x86_64.whl\n%env XRT_TPU_CONFIG=localservice;0;localhost:51011\n"
        "import torch_xla.core.xla_model as xm\nprint(xm.xrt_world_size())\n```\n"
    )
    outcome = migrated(text)
    assert outcome.text == text.replace(
        "%env XRT_TPU_CONFIG=localservice;0;localhost:51011", "%env PJRT_DEVICE=TPU"
    ).replace(
        "import torch_xla.core.xla_model as xm\nprint(xm.xrt_world_size())",
        "import torch_xla.runtime as xr\nprint(xr.world_size())",
    )
    assert "TODO" not in outcome.text
    assert sorted({(f.rule, f.line) for f in outcome.manual}) == [("install-xrt-era-release", 3)]
    assert install_finding(
        "https://storage.googleapis.com/tpu-pytorch/wheels/torch_xla-1.7-cp37-cp37m-linux_x86_64.whl", (2, 9)
    ).do in {f.message for f in outcome.manual}


def test_a_python_session_keeps_its_prompts_and_output():
    text = (
        "```pycon\n>>> import torch_xla.core.xla_model as xm\n>>> xm.xrt_world_size()\n8\n"
        ">>> for i in range(2):\n...     print(xm.get_ordinal())\n...\n0\n0\n>>> d = xm.xla_device()\n```\n"
    )
    outcome = migrated(text)
    assert outcome.text == (
        "```pycon\n>>> import torch_xla\n>>> import torch_xla.runtime as xr\n>>> xr.world_size()\n8\n"
        ">>> for i in range(2):\n...     print(xr.global_ordinal())\n...\n0\n0\n>>> d = torch_xla.device()\n```\n"
    )
    assert [(f.rule, f.line) for f in outcome.changes] == [
        ("api-world-size", 3),
        ("api-ordinal", 6),
        ("api-xla-device", 10),
    ]


def test_an_indented_block_is_code_and_an_indented_paragraph_is_not():
    # as discort/tpu-pytorch-template's README: headings, then four-space blocks
    text = (
        "#### Start a conda environment.\n    conda activate torch-xla-1.8\n\n"
        "#### Configure environmental variables for the Cloud TPU resource\n"
        "    export XRT_TPU_CONFIG=\"localservice;0;localhost:51011\"\n\n"
        "1. A step of a list\n\n    export XRT_TPU_CONFIG=\"localservice;0;localhost:51011\" is what the old guide said\n\n"
        "A paragraph\n    export XRT_TPU_CONFIG=\"localservice;0;localhost:51011\" continued\n"
    )
    outcome = migrated(text)
    assert outcome.text == text.replace(
        "    export XRT_TPU_CONFIG=\"localservice;0;localhost:51011\"\n\n1.", "    export PJRT_DEVICE=TPU\n\n1."
    )
    assert [(f.rule, f.line) for f in outcome.changes] == [("env-shell-xrt-tpu-config", 5)]


def test_a_block_left_as_it_was_has_one_item_a_spot():
    # issue 32: a remote TPU node's address in a block a placeholder makes invalid shell was
    # asked twice on its line, once as a TPU node, once as the change not made
    text = (
        "#### Point it at the TPU\n    export NODE_IP=<node-ip>\n"
        "    export XRT_TPU_CONFIG=\"tpu_worker;0;$NODE_IP:8470\"\n"
    )
    outcome = migrated(text)
    assert outcome.text == text and outcome.changes == []
    (item,) = outcome.manual
    assert item.line == 3 and item.rule == "env-shell-xrt-tpu-config"
    assert "code block left as it was (not valid shell as written" in item.detail


def test_a_rest_literal_block_of_python_is_python():
    text = (
        "Get the rank::\n\n    import torch_xla.core.xla_model as xm\n    rank = xm.get_ordinal()\n\n"
        ".. note::\n\n    xm.get_ordinal() was the XRT-era spelling.\n"
    )
    outcome = migrated(text)
    assert outcome.text == text.replace(
        "    import torch_xla.core.xla_model as xm\n    rank = xm.get_ordinal()",
        "    import torch_xla.runtime as xr\n    rank = xr.global_ordinal()",
    )


@pytest.mark.parametrize(
    "block",
    [
        '```json\n{"env": {"XRT_TPU_CONFIG": "localservice;0;localhost:51011"}}\n```\n',
        "```c++\n// XRT_TPU_CONFIG is read by torch_xla's XRT client\nauto device = torch_xla::GetDefaultDevice();\n```\n",
        "```yaml\nname: train\nimage: python:3.10\n```\n",
    ],
)
def test_a_block_of_a_language_not_rewritten_is_byte_identical(block):
    text = f"Example:\n\n{block}"
    outcome = markdown.rewrite(text, ALL)
    assert outcome.text == text and outcome.changes == [] and outcome.manual == []


def test_a_json_block_holding_a_command_is_a_transcript_reported_not_rewritten():
    # as mugithi/google-terraform-pytorch-tpu's README shows what xla_dist printed
    text = (
        "You should observe, example below\n\n```json\npython -m torch_xla.distributed.xla_dist --tpu=20200430-tpu "
        "--conda-env=torch-xla-nightly -- python /usr/share/test_train_imagenet.py --fake_data\n"
        "2020-06-11 20:48:38  [] Command to distribute: \"python\" \"/usr/share/test_train_imagenet.py\"\n```\n"
    )
    outcome = migrated(text)
    assert outcome.text == text and outcome.changes == []
    # one spot, one item: the env xla_dist activated (it holds torch_xla 1.x), whose long text
    # names the translation the command would have had
    (item,) = outcome.manual
    assert item.line == 4 and item.message.startswith("use a TPU VM pod, not a TPU node")
    assert "left as it is (a json block): xla_dist → gcloud" in item.detail


# pytorch/xla 1.13's API_GUIDE.md, in short: an import block, then snippets and programs.
GUIDE = """Create a tensor:

```python
import torch
import torch_xla
import torch_xla.core.xla_model as xm

t = torch.randn(2, 2, device=xm.xla_device())
```

Add two:

```python
t0 = torch.randn(2, 2, device=xm.xla_device())
print(t0 + t0, xm.xrt_world_size())
```

On several devices:

```python
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp

def _mp_fn(index):
  device = xm.xla_device()

if __name__ == '__main__':
  xmp.spawn(_mp_fn, args=())
```
"""


def test_each_block_is_a_program_that_gets_the_imports_its_rewrite_needs():
    outcome = migrated(GUIDE)
    blocks = [outcome.text[b.start : b.end] for b in markdown.blocks(outcome.text)]
    assert blocks[0] == (
        "import torch\nimport torch_xla\nimport torch_xla.core.xla_model as xm\n\n"
        "t = torch.randn(2, 2, device=torch_xla.device())\n"
    )
    assert blocks[1] == (
        "import torch_xla\nimport torch_xla.runtime as xr\n"
        "t0 = torch.randn(2, 2, device=torch_xla.device())\nprint(t0 + t0, xr.world_size())\n"
    )
    assert blocks[2].startswith("import torch_xla\nimport torch_xla.distributed.xla_multiprocessing as xmp\n")
    # the first block touches the runtime at module level, the third spawns: other programs
    assert outcome.manual == []


def test_an_item_names_its_own_block_s_lines_only():
    text = GUIDE.replace("def _mp_fn(index):", "DEVICE = xm.xla_device()\n\ndef _mp_fn(index):")
    outcome = migrated(text)
    (item,) = outcome.manual
    assert item.rule == "spawn-runtime-before" and item.line == 30
    assert [c.line for c in item.cites] == [24]  # DEVICE = ..., in this block


def test_a_block_keeps_an_import_another_block_uses():
    text = (
        "```python\nimport torch_xla.core.xla_model as xm\ndevice = xm.xla_device()\n```\n\n"
        "```python\nxm.optimizer_step(optimizer)\n```\n"
    )
    outcome = migrated(text)
    assert outcome.text == text.replace(
        "import torch_xla.core.xla_model as xm\ndevice = xm.xla_device()",
        "import torch_xla\nimport torch_xla.core.xla_model as xm\ndevice = torch_xla.device()",
    )


@pytest.mark.slow
@pytest.mark.xla
def test_blocks_pasted_one_after_another_run_on_torch_xla_2_9(tmp_path):
    """A reader pastes the first block, then the second, into one interpreter (CPU, one replica)."""
    outcome = migrated(GUIDE)
    first, second, _ = (outcome.text[b.start : b.end] for b in markdown.blocks(outcome.text))
    for program in (first + second, second.replace("import torch_xla.runtime as xr\n", "")):
        ran = subprocess.run(
            [sys.executable, "-c", "import torch\n" + program],
            capture_output=True,
            text=True,
            timeout=300,
            env={"PJRT_DEVICE": "CPU", "PATH": "/usr/bin:/bin"},
        )
        if "xr" in program.split("print", 1)[0]:
            assert ran.returncode == 0, ran.stderr[-2000:]
            assert ran.stdout.strip().endswith("1")
        else:  # the import the block now has is the one it needs
            assert "NameError: name 'xr' is not defined" in ran.stderr


def test_a_list_indented_four_spaces_is_a_list():
    # pytorch/xla 1.13's README: its images, listed one indent too deep
    text = (
        "The following images are available:\n\n    * `gcr.io/tpu-pytorch/xla:r1.12_3.7`: The current stable version.\n"
        "    * `gcr.io/tpu-pytorch/xla:nightly_3.7`: Nightly version.\n"
    )
    assert markdown.blocks(text) == []
    assert markdown.rewrite(text, ALL).manual == []
