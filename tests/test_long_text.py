"""An item says what to do in one short line; its why is its long text, which the JSON and
SARIF reports carry (SARIF also the rule's why, from its docs), and the text report leaves
to them and to ``xrt2pjrt rules ID``."""

from __future__ import annotations

import json
import subprocess
import sys

from xrt2pjrt.report import MESSAGE_ROOM, shortened
from xrt2pjrt.rule_index import WHY

TRAIN = (
    "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
    "def main():\n    def _mp_fn(index):\n        pass\n    xmp.spawn(_mp_fn)\n"
)
RULE = "spawn-unpicklable"
WHAT = "move fn to module level"
WHY_HERE = (
    "pickle refuses fn (`_mp_fn`, a function defined in main): define it at module level; torch_xla 2.x's "
    "xmp.spawn pickles fn and args for each process, even with start_method='fork'"
)


def _migrate(tmp_path, *args) -> subprocess.CompletedProcess:
    (tmp_path / "train.py").write_text(TRAIN)
    return subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", "migrate", "train.py", *args], cwd=tmp_path, capture_output=True, text=True
    )


def test_json_gives_the_short_message_and_the_long_text(tmp_path):
    (item,) = json.loads(_migrate(tmp_path, "--output-format", "json").stdout)["files"][0]["manual"]
    assert item["rule"] == RULE and item["message"] == WHAT
    assert item["detail"].startswith(f"{WHAT}: {WHY_HERE}")


def test_sarif_gives_the_short_message_the_long_text_and_the_rules_docs(tmp_path):
    run = json.loads(_migrate(tmp_path, "--output-format", "sarif").stdout)["runs"][0]
    (result,) = run["results"]
    assert result["message"]["text"] == f"decide by hand: {WHAT}"
    assert WHY_HERE in result["properties"]["detail"]
    (rule,) = run["tool"]["driver"]["rules"]
    # (the rule's why, where its docs say more than its summary)
    assert rule["fullDescription"]["text"] == WHY.get(RULE, rule["shortDescription"]["text"])
    assert f"xrt2pjrt rules {RULE}" in rule["help"]["text"]


def test_the_text_report_gives_one_short_line_an_item(tmp_path):
    lines = [line for line in _migrate(tmp_path).stderr.splitlines() if f"[{RULE}]" in line]
    assert lines == [f"train.py:6:5: decide [{RULE}] {WHAT}"]


def test_a_message_too_long_for_a_report_is_cut_at_a_clause_and_says_so():
    said = (
        "xm.rendezvous with replicas=list(range(world // 2)): under PJRT every replica must join (a subset "
        "raises ValueError); use all replicas or a host-side barrier"
    )
    assert shortened(said, MESSAGE_ROOM) == "xm.rendezvous with replicas=list(range(world // 2))..."  # a clause's end
    assert shortened(said, 60) == "xm.rendezvous with replicas=list(range(world // 2))..."
    # no end of clause, phrase or word in the second half of the room: cut in the word
    assert shortened(said, 45) == "xm.rendezvous with replicas=list(range(wor..."
    assert shortened("use xr.world_size()", MESSAGE_ROOM) == "use xr.world_size()"
    assert len(shortened(said, 40)) <= 40 and "\n" not in shortened("a\nb", 10)
