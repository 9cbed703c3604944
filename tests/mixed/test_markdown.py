"""The Markdown / reStructuredText rewriter: code blocks rewritten by their language, prose kept."""

from __future__ import annotations

import difflib
import subprocess
import sys
from pathlib import Path

import pytest

from xrt2pjrt.registry import Options, all_rules
from xrt2pjrt.report import Finding, Fix, Range
from xrt2pjrt.rewriters import Outcome
from xrt2pjrt.mixed import markdown
from xrt2pjrt.text import shell
from xrt2pjrt.recorder import dedent
from text_migrate import REMOTE, assert_decisions

FIXTURES = Path(__file__).parents[1] / "fixtures" / "text" / "markdown"
ALL = Options(rules=frozenset(all_rules()), unsafe_fixes=True)  # every fix, unsafe ones too


@pytest.mark.parametrize("name", ["README.md", "guide.rst"])
def test_only_code_block_lines_change(name):
    before = (FIXTURES / name).read_text()
    after = markdown.rewrite(before, ALL).text
    code = set()
    for block in markdown.blocks(before):
        first = before.count("\n", 0, block.start)
        code |= set(range(first, first + before[block.start : block.end].count("\n")))
    matcher = difflib.SequenceMatcher(a=before.splitlines(), b=after.splitlines(), autojunk=False)
    changed = {i for tag, i1, i2, _, _ in matcher.get_opcodes() if tag != "equal" for i in range(i1, i2)}
    assert changed and changed <= code
    assert "(prose like this export XRT_TPU_CONFIG=x stays as it is)" in after or name.endswith(".rst")
    assert "The variable ``XRT_TPU_CONFIG`` is not used by PJRT." in after or name.endswith(".md")


def test_rewritten_shell_blocks_still_parse():
    after = markdown.rewrite((FIXTURES / "guide.rst").read_text(), ALL).text
    for block in markdown.blocks(after):
        if block.kind == "shell":
            assert shell.check(dedent(after[block.start : block.end], block.indent)) is None


def test_findings_carry_file_lines():
    outcome = markdown.rewrite((FIXTURES / "README.md").read_text(), ALL)
    assert [(f.rule, f.line) for f in outcome.changes if f.rule.startswith(("launch", "env-shell"))] == [
        ("env-shell-xrt-tpu-config", 7),
        ("launch-xla-dist", 8),
        ("launch-xla-dist", 15),
    ]
    assert [(f.rule, f.line) for f in outcome.manual] == [("launch-xla-dist", 28), ("launch-conda-env", 29)]


def test_block_whose_rewrite_would_not_parse_is_kept_and_reported(monkeypatch):
    text = "```bash\nexport XRT_TPU_CONFIG=x\n```\n"
    monkeypatch.setattr(shell, "check", lambda text: "simulated bash -n failure")
    outcome = markdown.rewrite(text, ALL)
    assert outcome.text == text
    assert outcome.manual and "left as it was" in outcome.manual[0].message


def test_a_block_left_as_it_was_is_reported_at_its_own_line():
    # A snippet cut short in the middle of an `if`: its rewrite cannot pass `bash -n`.
    text = "# Title\n\nSome text.\n\nRun:\n\n```\nexport XRT_TPU_CONFIG=\"localservice;0;localhost:51011\"\nif true; then\n```\n"
    outcome = markdown.rewrite(text, ALL)
    assert outcome.text == text
    (item,) = outcome.manual
    assert item.line == 8 and "left as it was" in item.message


def test_a_console_session_is_rewritten_command_by_command_keeping_prompts_and_output():
    # As pytorch/xla's own README wrote them (v1.12).
    text = (
        "Run:\n\n```\n(vm)$ export XRT_TPU_CONFIG=\"localservice;0;localhost:51011\"\n"
        "(vm)$ export XRT_MESH_SERVICE_ADDRESS=localhost:53627\n"
        "(torch-xla-1.11)$ python -m torch_xla.distributed.xla_dist --tpu=$TPU_POD_NAME -- \\\n"
        "    python train.py --fake_data\nEpoch 1 loss=0.1\nuser@tpu-vm:~$ ls\n```\n"
    )
    outcome = markdown.rewrite(text, ALL)
    assert outcome.text == (
        "Run:\n\n```\n(vm)$ export PJRT_DEVICE=TPU\n"
        "(torch-xla-1.11)$ gcloud compute tpus tpu-vm ssh $TPU_POD_NAME --worker=all \\\n"
        "    --command=\". /etc/profile; PJRT_DEVICE=TPU python train.py --fake_data\"\nEpoch 1 loss=0.1\nuser@tpu-vm:~$ ls\n```\n"
    )
    assert [(f.rule, f.line) for f in outcome.changes] == [
        ("env-shell-xrt-tpu-config", 4),
        ("env-shell-xrt-unused", 5),
        ("launch-xla-dist", 6),
    ]
    assert markdown.rewrite(outcome.text, ALL).text == outcome.text


def test_python_blocks_of_a_document_are_programs_that_borrow_imports():
    # pytorch/xla's docs import torch_xla in one block and use it in the next ones: the
    # snippet is migrated with the first block's import, and gets the import it now needs
    text = (
        "Setup:\n\n```python\nimport torch_xla.core.xla_model as xm\n```\n\nA sketch:\n\n```python\n"
        "model = ...(\n```\n\nThen:\n\n```python\nrank = xm.get_ordinal()\nworld = xm.xrt_world_size()\n```\n"
    )
    outcome = markdown.rewrite(text, ALL)
    assert outcome.text == text.replace(
        "```python\nrank = xm.get_ordinal()\nworld = xm.xrt_world_size()",
        "```python\nimport torch_xla.runtime as xr\nrank = xr.global_ordinal()\nworld = xr.world_size()",
    )
    assert [(f.rule, f.line) for f in outcome.changes] == [("api-ordinal", 16), ("api-world-size", 17)]
    assert markdown.rewrite(outcome.text, ALL).text == outcome.text


def test_a_line_a_message_names_is_the_documents_line():
    text = (
        "x\n\n```python\nimport torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n"
        "```\n\ny\n\n```python\nDEVICE = xm.xla_device()\nxmp.spawn(fn)\n```\n"
    )
    (item,) = markdown.rewrite(text, ALL).manual
    assert item.line == 12 and item.shown().endswith("(line 11)")


def test_a_line_a_message_names_in_a_documents_only_python_block_is_the_documents_line():
    # one block is rewritten on its own: its item moved to the document's line, the line it cites did not
    text = (
        "x\n\n```python\nimport torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n"
        "DEVICE = xm.xla_device()\nxmp.spawn(fn)\n```\n"
    )
    (item,) = [f for f in markdown.rewrite(text, ALL).manual if f.rule == "spawn-runtime-before"]
    assert item.line == 7 and item.shown().endswith("(line 6)")


def test_prose_only_document_is_untouched():
    text = "# XRT_TPU_CONFIG\n\nWe used `python -m torch_xla.distributed.xla_dist` in 2021.\n"
    assert markdown.rewrite(text, ALL).text == text


def test_tpu_node_setup_in_a_guide_is_left_as_it_was_and_reported_on_every_run():
    # Rewritten to `export PJRT_DEVICE=TPU  # the IP of the TPU node`, the decision was gone
    # after --write: no TODO line in documentation, nothing left for --check to report.
    text = (
        "# Old setup\n\n```bash\n$ export TPU_IP_ADDRESS=10.0.0.2\n"
        '$ export XRT_TPU_CONFIG="tpu_worker;0;$TPU_IP_ADDRESS:8470"\n```\n\n'
        "```\nexport XRT_TPU_CONFIG=\"tpu_worker;0;$TPU_IP:8470\"  # the IP of the TPU node\n```\n\n"
        ".. code-block:: python\n\n   import os\n   os.environ['XRT_TPU_CONFIG'] = 'tpu_worker;0;' + ip + ':8470'\n"
    )
    decisions = [
        ("env-shell-xrt-tpu-config", 5, REMOTE),
        ("env-shell-xrt-tpu-config", 9, REMOTE),
        ("env-xrt-tpu-config", 15, REMOTE),
    ]
    outcome = markdown.rewrite(text, ALL)
    assert outcome.text == text and outcome.changes == []
    assert_decisions(outcome, decisions)


def test_a_block_keeps_its_other_changes_and_the_spot_to_decide_is_reported_again():
    text = (
        "```bash\nexport XRT_TPU_CONFIG=\"tpu_worker;0;$IP:8470\"\nexport XRT_MESH_SERVICE_ADDRESS=localhost:53627\n"
        "python3 -m torch_xla.distributed.xla_dist --tpu=my-pod -- python3 train.py\n```\n\n"
        "```python\nimport os\nimport torch_xla.core.xla_model as xm\nn = xm.xrt_world_size()\n"
        "os.environ['XRT_TPU_CONFIG'] = 'tpu_worker;0;' + ip + ':8470'\n```\n"
    )
    outcome = markdown.rewrite(text, ALL)
    assert outcome.text == (
        "```bash\nexport XRT_TPU_CONFIG=\"tpu_worker;0;$IP:8470\"\n"
        "gcloud compute tpus tpu-vm ssh my-pod --worker=all --command=\". /etc/profile; PJRT_DEVICE=TPU python3 train.py\"\n"
        "```\n\n```python\nimport os\nimport torch_xla.runtime as xr\nn = xr.world_size()\n"
        "os.environ['XRT_TPU_CONFIG'] = 'tpu_worker;0;' + ip + ':8470'\n```\n"
    )
    assert [(f.rule, f.line) for f in outcome.changes] == [
        ("env-shell-xrt-unused", 3),
        ("launch-xla-dist", 4),
        ("api-world-size", 10),
    ]
    assert_decisions(outcome, [("env-shell-xrt-tpu-config", 2, REMOTE), ("env-xrt-tpu-config", 11, REMOTE)])
    again = markdown.rewrite(outcome.text, ALL)  # as --check after --write (one line less above the Python)
    assert again.text == outcome.text and again.changes == []
    assert_decisions(again, [("env-shell-xrt-tpu-config", 2, REMOTE), ("env-xrt-tpu-config", 10, REMOTE)])


XLA_DIST_WITH_GPU = "python -m torch_xla.distributed.xla_dist --tpu=my-pod --env GPU_NUM_DEVICES=4 -- python train.py\n"
EXPORT_TPU_CONFIG_AND_MESH = (
    "export XRT_TPU_CONFIG=\"tpu_worker;0;$IP:8470\" XRT_MESH_SERVICE_ADDRESS=localhost:53627\n"
)


@pytest.mark.parametrize("line", [XLA_DIST_WITH_GPU, EXPORT_TPU_CONFIG_AND_MESH])
def test_a_spot_to_decide_hides_no_other_change_of_its_line(line):
    # In a shell file each of these lines gets a change besides its item to decide; in a
    # ```bash block the spot was kept from every rule, so that change went unmade and unsaid.
    in_shell = shell.rewrite(line, ALL)
    others = {f.rule for f in in_shell.changes} - {f.rule for f in in_shell.manual}
    assert others
    outcome = markdown.rewrite(f"```bash\n{line}```\n", ALL)
    said = {f.rule for f in outcome.manual if "make this change by hand" in f.message}
    assert others <= {f.rule for f in outcome.changes} | said
    assert {(f.rule, f.line) for f in in_shell.manual} <= {(f.rule, f.line - 1) for f in outcome.manual}


def test_an_xla_dist_line_whose_translation_would_hide_its_gpu_item_is_left_and_said():
    # Translated, GPU_NUM_DEVICES=4 goes inside gcloud's --command, where a next run no longer
    # asks about it: the line stays as it was, and the translation is an item to make by hand.
    text = f"# Train\n\n```bash\n{XLA_DIST_WITH_GPU}```\n"
    outcome = markdown.rewrite(text, ALL)
    assert outcome.text == text and outcome.changes == []
    assert_decisions(
        outcome,
        [
            ("env-shell-gpu-num-devices", 4, "stay on torch_xla 2.8"),
            ("launch-xla-dist", 4, "code block left as it was"),
        ],
    )
    assert "make this change by hand" in outcome.manual[1].message


def test_the_spot_to_decide_is_kept_from_the_rule_that_asked_not_from_the_others():
    outcome = markdown.rewrite(f"```bash\n{EXPORT_TPU_CONFIG_AND_MESH}```\n", ALL)
    assert outcome.text == "```bash\nexport XRT_TPU_CONFIG=\"tpu_worker;0;$IP:8470\"\n```\n"
    assert [(f.rule, f.line) for f in outcome.changes] == [("env-shell-xrt-unused", 2)]
    assert_decisions(outcome, [("env-shell-xrt-tpu-config", 2, REMOTE)])
    again = markdown.rewrite(outcome.text, ALL)  # --check after --write: the spot is still asked
    assert again.text == outcome.text and again.changes == []
    assert_decisions(again, [("env-shell-xrt-tpu-config", 2, REMOTE)])


def test_a_block_a_next_run_would_change_again_is_left_whole(monkeypatch):
    # Simulated: a shell rewriter that changes its own output again on every run. With a spot
    # to decide in the block, the block stays as it was and its changes are reported as not made.
    text = "```bash\nexport XRT_TPU_CONFIG=\"tpu_worker;0;$IP:8470\"\necho done\n```\n"
    real = shell.rewrite

    def restless(body, options, **kw):
        outcome = real(body, options, **kw)
        more = Finding("env-shell-xrt-unused", Range.of_lines(3), "more", Fix.of("env-shell-xrt-unused", applied=True))
        return Outcome(outcome.text + "echo more\n", [*outcome.changes, more], outcome.manual)

    monkeypatch.setattr(shell, "rewrite", restless)
    outcome = markdown.rewrite(text, ALL)
    assert outcome.text == text and outcome.changes == []
    assert [(f.rule, f.line) for f in outcome.manual][0] == ("env-shell-xrt-tpu-config", 2)
    assert all("code block left as it was" in f.message for f in outcome.manual[1:]) and outcome.manual[1:]


def test_documentation_gets_no_todo_lines_the_items_are_reported():
    # published docs got 300-character TODO lines inside their code blocks
    text = (
        "```python\nimport torch_xla.core.xla_model as xm\nxm.save(state, path)\nstate = torch.load(path)\n```\n\n"
        "```bash\nexport XRT_TPU_CONFIG=\"tpu_worker;0;$IP:8470\"\n```\n"
    )
    outcome = markdown.rewrite(text, ALL)
    assert "TODO" not in outcome.text
    assert {(item.rule, item.line) for item in outcome.manual} == {
        ("manual-save-barrier", 3),
        ("env-shell-xrt-tpu-config", 8),
    }
    # one a writer put there on purpose stays
    kept = text.replace("xm.save(", "# TODO(xrt2pjrt): keep [mine]\nxm.save(")
    assert "# TODO(xrt2pjrt): keep [mine]" in markdown.rewrite(kept, ALL).text


def test_mdx_pages_are_markdown_when_named_and_when_found(tmp_path):
    page = tmp_path / "docs" / "tpu.mdx"
    page.parent.mkdir()
    page.write_text("<Note>TPU</Note>\n\n```bash\nexport XRT_TPU_CONFIG=\"localservice;0;localhost:51011\"\n```\n")
    for named in (page, tmp_path):
        ran = subprocess.run(
            [sys.executable, "-m", "xrt2pjrt", "migrate", "--check", str(named)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert ran.returncode == 1, ran.stdout + ran.stderr  # a change is pending
        assert "tpu.mdx" in ran.stdout + ran.stderr


@pytest.mark.parametrize(
    "prose, asked",
    [
        ("Then `conda activate torch-xla-1.13` and train.", ["launch-conda-env"]),
        ("On the node: ``export XRT_TPU_CONFIG=\"tpu_worker;0;$TPU_IP:8470\"``.", ["env-shell-xrt-tpu-config"]),
        ("Set `export XRT_TPU_CONFIG=\"localservice;0;localhost:51011\"`.", ["env-shell-xrt-tpu-config"]),
        ("The variable `XRT_TPU_CONFIG` and `xm.xrt_world_size()` are gone.", []),  # names, not commands
        ("It ran `python -m torch_xla.distributed.xla_dist --tpu=... -- python train.py`.", []),  # a sketch
        ("```c++\n// `conda activate torch-xla-1.13`\n```", []),  # inside a block: the block's, if any
    ],
)
def test_a_command_quoted_in_the_prose_is_reported_and_left_as_it_is(prose, asked):
    text = f"# Run\n\n{prose}\n"
    outcome = markdown.rewrite(text, ALL)
    assert outcome.text == text
    assert [f.rule for f in outcome.manual] == asked and all(f.line == 3 for f in outcome.manual)
